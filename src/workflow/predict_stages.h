#pragma once
// predict / validate / model as explicit stages with typed results:
//   look up the stored costs → measure what is missing (and the whole step) → paired rounds →
//   trace launches and kernels → predict.
// Each stage takes the interfaces it needs (the stored rows, the measuring session, the model)
// so that a unit test runs it against fakes, on the CPU, without torch. Torch-free header.
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/inventory/inventory.h"
#include "core/measurement.h"
#include "core/predict/kernels.h"
#include "core/predict/prediction.h"
#include "workflow/model_inventory.h"
#include "workflow/notes.h"
#include "workflow/predict.h"
#include "workflow/session.h"

namespace opcost {

// The key of a stored call, less the device (the source knows which it reads).
struct StoredCallKey {
  std::string op, overload, args, autocast, cache_mode;
};

// The stored measurements a prediction reads: the database (predict_stages_database.h), or a
// unit test's fake.
// The rows at other sizes a look-up returns, one per size (the newest of repeats): enough to
// choose the nearest from.
inline constexpr std::size_t kMaxSizeAnchors = 64;

class StoredCosts {
 public:
  virtual ~StoredCosts() = default;
  // The newest row of exactly this call (a flagged one when there is no other).
  virtual std::optional<Measurement> newest(const StoredCallKey& key) = 0;
  // For a call no row matches exactly: the newest row of its operator whose arguments differ
  // only in floating-point scalar values (core/predict/float_scalar_match.h), with its arguments.
  struct NearRow {
    Measurement measurement;
    std::string stored_args;
  };
  virtual std::optional<NearRow> ignoring_float_scalars(const InventoryEntry& entry, const StoredCallKey& key) = 0;
  // For a call no row matches: the rows of its operator measured at another size (arguments the
  // same but for one extent: core/predict/extent_match.h), with their arguments: unflagged first,
  // then newest first, one per arguments, at most kMaxSizeAnchors; what an estimate scales from.
  virtual std::vector<NearRow> at_other_sizes(const InventoryEntry&, const StoredCallKey&) { return {}; }
  // For a call no row matches at all: its cost estimated (workflow/predict_estimates.h), or none.
  struct Estimate {
    Measurement measurement;
    std::string anchor_args;  // the row at another size it was scaled from; empty: the model's alone
  };
  virtual std::optional<Estimate> estimated(const InventoryEntry&, const StoredCallKey&) { return std::nullopt; }
};

// One step traced: each outermost call with its kernels, and the device time of activities no
// call launched (a CUDA graph's replay launches its kernels outside any call).
struct TracedStep {
  std::vector<CallKernels> calls;
  double untied_device_us = 0;
};

// The model's side of a prediction: its whole step measured, timed with its calls' host
// times, traced. The real one wraps a RunnableModel (predict.cpp); a unit test fakes it.
class ModelSteps {
 public:
  virtual ~ModelSteps() = default;
  virtual Measurement measure_step(const MeasureConfig& config) = 0;
  virtual HostRound time_host_round() = 0;
  // One step under the profiler: each outermost call with its kernels, and the device time no
  // call launched. Throws when the device's activity cannot be traced.
  virtual TracedStep trace_step() = 0;
  // Per inventory entry, the kernels of its call replayed alone (none where it cannot be).
  virtual std::vector<std::optional<std::vector<std::string>>> kernels_alone(const Inventory& inv) = 0;
  // The launch latency without the profiler (launch_latency_untraced_us); none on the CPU.
  virtual std::optional<double> untraced_launch_latency_us(double sync_us) = 0;
};

// What every stage reads.
struct PredictContext {
  const PredictOptions& options;
  bool on_gpu = false;
  std::string device;  // where calls are replayed: "cuda:N" or "cpu"
  const Notes& notes;
};

// The cache mode an entry's operator is measured and looked up at: each input as the model
// reads it (auto), or all as asked.
std::string cache_mode_for(const InventoryEntry& e, const std::string& cache_option);

// 1. Look up: the costs the database has, and the entries it lacks (in inventory order).
struct LookedUp {
  std::map<std::size_t, OpCost> costs;
  std::vector<std::size_t> missing;
};
LookedUp look_up_costs(const Inventory& inv, StoredCosts& stored, const std::string& cache_option, bool on_gpu);

// The GPU's power between kernels, from the probe op's loop (looked up, or measured). On the
// CPU nothing is looked up or measured.
struct GapProbe {
  std::optional<Measurement> measurement;
  std::size_t failures = 0;  // its measurement failed, or could not be stored
};
std::string gap_probe_signature();
GapProbe look_up_gap_probe(const PredictContext& ctx, StoredCosts& stored);
// Measures the probe in `session` (keeping `previous` when that fails).
GapProbe measure_gap_probe(const PredictContext& ctx, OperatorSession& session, const GapProbe& previous);
// Sets the inputs' gap power from the probe, or why there is none.
void take_gap_power(PredictionInputs& pin, const GapProbe& probe);

// 2. Measure: the whole step (stored, like every measurement), and the missing operators,
// heaviest first, with short loops once the measured ones explain enough of the step, until
// `model`'s target is met or the database stops taking rows.
struct StepMeasured {
  StepMeasurement step;
  bool stored = true;
};
// `before_ops`: validate's first measurement, before the operators' loops, which sizes their
// shares of the step and is not the one compared: a shorter timing budget (kStepBeforeOpsMaxS).
StepMeasured measure_whole_step(const PredictContext& ctx, const Inventory& inv, ModelSteps& model,
                                OperatorSession& session, bool before_ops = false);

struct MissingMeasured {
  std::map<std::size_t, OpCost> costs;        // the looked-up costs and the new ones
  std::vector<std::size_t> measured;          // entries measured in this stage, in order
  std::map<std::size_t, std::string> failed;  // entries whose measurement failed: why; fix
  std::size_t failures = 0;                   // failed measurements, and refused rows
  bool stopped_at_target = false;             // `model`: the target was met before the last one
  std::string stopped;                        // the database stopped taking rows
};
MissingMeasured measure_missing(const PredictContext& ctx, const Inventory& inv, const LookedUp& looked_up,
                                const PredictionInputs& pin, const std::optional<StepMeasurement>& step,
                                OperatorSession& session);

// 3. Paired rounds (validate): the step and its host times in interleaved rounds; the rounds
// that took the model's path are kept in `compared`, and the rounds' medians become the
// inventory's host times.
PairedRounds paired_rounds(ModelSteps& model, Inventory& inv, std::vector<HostRound>& compared, const Notes& notes);

// 4. Trace (on a GPU, after every timed loop: the profiler must not touch a measurement): one
// traced step serves the kernel check and the launch points.
struct Traced {
  std::optional<KernelReport> kernels;
  std::string kernels_why;
  TracedCoverage coverage;  // 0s: not traced
  std::optional<LaunchProfiles> launches;
  std::string launches_why;
};
Traced trace_launches_and_kernels(const PredictContext& ctx, const Inventory& inv, ModelSteps& model, double sync_us);

// 5. Predict: the step from the final inputs (and each paired round from its own host times),
// whether `model`'s target is met, and validate's energy on a host as fast as the step's.
void predict_from_stages(PredictReport& r, const std::vector<HostRound>& compared, const MissingMeasured& measured);

// What the measured operators explain of the step, time and energy both.
bool explains(const Prediction& p, const StepMeasurement& step, double share);

// Every stage in order, `r` holding the inventory, the environment and the inputs' sync time
// and board already.
void run_predict_stages(const PredictContext& ctx, PredictReport& r, StoredCosts& stored, OperatorSession& session,
                        ModelSteps& model);

}  // namespace opcost
