#pragma once
// predict / validate / model as one workflow: a model step's time and energy predicted from
// the operator database, optionally measuring what the database lacks and the whole step to
// compare. Options and their defaults live here, the result is a typed report, and rendering
// (text, JSON) is apart from the run. Torch-free header.
#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/inventory/inventory.h"
#include "core/measurement.h"
#include "core/predict/kernels.h"
#include "core/predict/launches.h"
#include "core/predict/prediction.h"
#include "torch/runner.h"
#include "workflow/model_inventory.h"
#include "workflow/notes.h"

namespace opcost {

struct PredictOptions {
  ModelOptions model;
  std::string db;                 // the database's path
  bool db_create_parent = false;  // opcost's default location: its directories may be made
  bool measure = false;           // validate / model: measure what the database lacks, and the whole step
  double target = 0;              // model: stop measuring operators once both shares reach this
  // Operator measurements to use and make. "auto": each input as the model reads it, from the
  // GPU's L2 or from memory (core/inventory/cache_reuse; all warm on the CPU); "warm" or
  // "cold": every input so.
  std::string cache = "auto";
  // auto: the capacity inputs are classed against; 0: the GPU's L2.
  std::uint64_t cache_bytes = 0;
  MeasureConfig op_config;  // for operators
  // Once the measured operators explain this share of the step's time and energy, the rest
  // (each a small share of it) get the short loops of short_op_config(): their wider
  // intervals hardly widen the step's. 1 or more: never; 0: from the start (`model`).
  double short_loops_after = 0.8;
  MeasureConfig step_config;  // for the whole step
  // With short loops, the relative 95% interval the operators' energies may together add to
  // the step's prediction: each operator's energy loop stops at its share's target
  // (part_rel_ci95; a 1% operator ±20%), from 2 counter periods on. 0: short_op_config's 5%.
  // By default the target a measurement on its own aims at: the step keeps an operator's precision.
  double ops_energy_rel_ci95 = MeasureConfig{}.energy_target_rel_ci95;
  // On a GPU, with short loops and ops_energy_rel_ci95 > 0: the operators' energies in groups of
  // up to 64 (32 for `model`), their loops' counter windows shared by up to 16 columns each
  // (Runner::measure_group), instead of a loop each.
  bool shared_windows = true;
  // With shared windows: the heaviest operators measured first get energy loops of their own,
  // until this many have one or they explain kShareAfterExplained of the step (predict_stages.cpp);
  // the rest share. 0: every operator shares from the first.
  std::size_t own_loops = 16;
  // On a GPU: an operator whose own energy loop reaches the power cap while the step stays below
  // it has its energy measured again at the step's duty cycle (MeasureConfig::step_power).
  bool duty_cycle = true;
  // On a GPU, after every loop: the kernels of each call in the model against its operator's
  // replayed alone (KernelReport).
  bool check_kernels = true;
  // On a GPU: place each call's kernel launches within its host time, and the GPU's delay from
  // a launch to its kernel, as one traced step shows them (core/predict/launches.h). Off: every
  // call launches its kernels as it returns, with no delay.
  bool trace_launches = true;
  // Where the database has no row of a call: its cost estimated by the fitted cost model
  // (docs/estimate.md), marked estimated, never stored; from `cost_model` (a file), else the
  // newest model stored in the database.
  bool estimate = false;
  std::string cost_model;

  // The three commands' defaults: the options registry's presets (workflow/options.cpp), where
  // `model`'s shorter loops are written.
  static PredictOptions predict_only();
  static PredictOptions validate();
  static PredictOptions model_to(double target = 0.9);
  // op_config with a fifth of its timing budget (2% target, 5 ms warm-up and minimum, samples of
  // 0.5 ms), GPU time from the energy loop's settle where the GPU never waits for the host, a
  // 0.15 s settle and 3 to 5 counter periods of energy (5% target; see ops_energy_rel_ci95).
  MeasureConfig short_op_config() const;
  // Throws std::invalid_argument naming the option when a budget, share or target is not a
  // finite number in its range (the registry's check_options): run_predict calls it first, so
  // that the command line and Python refuse the same values.
  void check() const;
};

// validate: the prediction's host inputs and the step, timed in the same rounds (see
// time_host_round), so that the host's speed, which moves by tens of percent within seconds
// on a shared machine, is the same on both sides of each comparison.
struct PairedRounds {
  std::vector<double> predicted_us, measured_us;  // per round (measured: plain steps' wall time)
  // With traced launches: each round's prediction had every call launched as it returned.
  std::vector<double> predicted_at_return_us;
  double seconds = 0;
  std::size_t rounds() const { return measured_us.size(); }
  double error_median() const;  // of predicted / measured − 1 over the rounds
  static double error_median(const std::vector<double>& predicted_us, const std::vector<double>& measured_us);
  std::pair<double, double> error_range() const;  // its lowest and highest
  // How much the host moved across the rounds: the plain step's host time, (p90 − p10) / median.
  double host_drift = 0;
};

// validate: the step's energy against the prediction on a host as fast as it was while that
// energy was measured. The GPU idles between kernels for as long as the host takes to issue
// them, so a step measured on a faster host spends less energy; this compares like with like.
struct PairedEnergy {
  double step_us = 0;     // the step's time per call in its energy loop
  double host_scale = 1;  // the model's host times × this give that time (host_scale_matching)
  double predicted_mJ = 0, measured_mJ = 0;
  double predicted_ci_mJ = 0, measured_ci_mJ = 0;  // 95% half-widths (the prediction's: operators' loops only)
  double error() const { return predicted_mJ / measured_mJ - 1; }
};

struct PredictReport {
  Settings settings;  // the options it ran with, by the registry's names (workflow/options.h)
  std::string cache;
  std::string cache_why;  // auto: why the inputs were not classed (inventory.cache_bytes 0)
  Environment env;
  Inventory inventory;
  PredictionInputs inputs;
  std::map<std::size_t, OpCost> costs;  // by inventory entry
  Prediction prediction;
  std::optional<StepMeasurement> step;     // validate / model
  std::optional<KernelReport> kernels;     // on a GPU
  std::string kernels_why;                 // why they were not checked
  TracedCoverage coverage;                 // the kernel check's traced step: how much of it the calls launched
  std::optional<LaunchProfiles> launches;  // on a GPU: the prediction's launch points
  std::string launches_why;                // why there are none
  std::optional<PairedRounds> paired;      // validate
  std::optional<PairedEnergy> paired_energy;
  std::string paired_energy_why;  // validate: why there is none
  std::size_t failures = 0;       // measurements that failed or could not be stored
  double target = 0;              // model: the share of the step its measured operators must explain
  bool target_met = false;        // model: they do (it stopped measuring there, or after the last one)
  // validate: the paired error is the headline when the host drifted (the step's time moved
  // by more than kStepDriftFlag between the rounds and its measurement, or within the rounds).
  bool paired_is_headline() const;
};

// Throws std::invalid_argument for a model or file that cannot be used, DatabaseError for a
// database that cannot be opened; an operator that fails is reported through `notes` and
// counted in the report, and the run goes on.
PredictReport run_predict(const PredictOptions& o, const Notes& notes);
// The same for a model made elsewhere (a Python model); `o.model` then only describes it
// (its name, dtype, mode and autocast).
PredictReport run_predict(const PredictOptions& o, RunnableModel& model, const Notes& notes);

nlohmann::json to_json(const PredictReport& r);
std::string to_text(const PredictReport& r);

}  // namespace opcost
