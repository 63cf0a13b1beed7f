#pragma once
// compare: variants of one model (fp32 against bf16, autocast, channels_last, torch.compile,
// a user's own) side by side, in time and energy, whole step and per layer, each difference to
// the baseline with its 95% interval (torch.utils.benchmark.Compare's question, answered in
// joules too and per layer). Torch-free header.
//
// Whole steps: after `warmup_rounds` uncounted rounds, every variant measured in each of `rounds`
// interleaved rounds (the order turning
// each round, so none always runs first), as validate pairs its rounds: the host's drift and the
// GPU's warming hit every variant alike, and each difference is paired by round
// (core/compare/difference.h). Per layer: each variant's steps traced (trace_model), each step
// a sample, matched by module path (core/compare/layer_comparison.h).
#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/compare/difference.h"
#include "core/compare/layer_comparison.h"
#include "core/measurement.h"
#include "torch/models.h"
#include "workflow/model_inventory.h"
#include "workflow/notes.h"

namespace opcost {

// Per-layer rows the text shows unless told (--layer-rows; 0: all).
inline constexpr std::size_t kCompareLayerRows = 30;
// The options' upper bounds (the options registry's ranges, workflow/options.h).
inline constexpr std::size_t kMaxCompareRounds = 1000, kMaxCompareWarmupRounds = 100, kMaxCompareLayerSteps = 1000;
// The text's rows: a count the command line reads as a 32-bit whole number.
inline constexpr std::size_t kMaxCompareLayerRows = 2147483647;

// compare's options; their names, flags, ranges and help are the options registry's
// (compare_option_specs in workflow/options.h), which both faces derive theirs from.

struct CompareOptions {
  std::size_t rounds = 5;  // interleaved rounds of whole steps (at least 2 for an interval)
  // Rounds run first and not counted: a freshly converted or compiled variant's first round ran
  // 10-26% slower than its later ones on the H200 (bench/results/2026-11-26-h200x4-compare), more
  // than the step loop's own warm-up calls absorb.
  std::size_t warmup_rounds = 1;
  double round_max_time = 0.5;                 // seconds of each variant's step loop in one round
  bool energy = true;                          // the steps' energy, where the device has a counter
  bool layers = true;                          // trace each variant's steps for the per-layer table
  std::size_t layer_steps = 5;                 // traced steps per variant (each one sample per layer)
  std::size_t layer_rows = kCompareLayerRows;  // per-layer rows the text shows (0: all; the JSON has all)
  // Throws std::invalid_argument naming the first option out of its range in both spellings
  // (check_options: the registry's ranges).
  void check() const;
};

// A variant to compare: a name ("bf16", "compile"), what it is, and its model, built and run
// by the caller's face (a built-in model at another dtype; a Python callable).
struct CompareVariant {
  std::string name, description;
  RunnableModel* model = nullptr;
  ModelOptions options;  // describes it (dtype, autocast, train) for its measurement's identity
};

struct VariantResult {
  std::string name, description, input;
  std::vector<Measurement> rounds;                                 // its step, once per round
  Summary time_us;                                                 // over the rounds' step times
  std::optional<Summary> energy_mJ;                                // over the rounds' step energies, where measured
  std::optional<Difference> time_vs_baseline, energy_vs_baseline;  // none for the baseline
  std::vector<std::string> flags;  // any round's flags (throttling, clocks, another process)
};

struct CompareReport {
  Environment env;
  std::string model;  // the baseline's name
  bool train = false;
  CompareOptions options;
  std::size_t baseline = 0;
  std::vector<VariantResult> variants;
  std::string energy_why;  // why the steps have no energy ("" when they have)
  std::optional<LayerComparison> layers;
  std::string layers_why;  // why there is no per-layer table
};

// Measures and traces `variants` (the first is the baseline). Throws std::invalid_argument for
// fewer than two variants, a repeated name, or variants on different devices.
CompareReport run_compare(const std::vector<CompareVariant>& variants, const CompareOptions& o, const Notes& notes);

nlohmann::json to_json(const CompareReport& r);
// Compare's manner: one row per variant (whole step), then one per layer, the columns each
// variant's figure relative to the baseline, "~" where the interval includes 0. `color`: ANSI
// colour for a terminal (faster green, slower red).
std::string render_compare(const CompareReport& r, bool color, std::size_t layer_rows);

}  // namespace opcost
