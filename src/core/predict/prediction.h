#pragma once
// A model step's predicted time and energy from its inventory and stored operator costs, and
// the comparison with a measurement of the whole step. Torch-free.
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/inventory/inventory.h"
#include "core/measurement.h"
#include "core/predict/timeline.h"

namespace opcost {

// What the prediction uses of one stored measurement.
struct OpCost {
  int64_t db_id = -1;
  double gpu_us = 0, gpu_ci_us = 0;               // device time per call and its 95% half-width (CPU: wall time)
  double cpu_us = 0;                              // host time to issue one call
  std::optional<double> energy_mJ, energy_ci_mJ;  // per call, as measured in the loop
  std::string energy_why;                         // when energy_mJ is empty: the measurement's reason
  double loop_wall_us = 0;                        // the energy loop's wall time per call
  bool waits_for_device = false;                  // timed by wall clock: cpu_us is the call's whole time
  std::string device_work;                        // "", or none-view / none-no-kernel: no GPU time, no energy
  std::string gpu_uuid;                           // the board it was measured on
  std::vector<std::string> flags;
  // Not empty: the stored row's arguments, which differ from the call's only in floating-point
  // scalar values (core/predict/float_scalar_match.h); the row was used for want of an exact one.
  std::string matched_args;
  // Not measured: estimated by the cost model (docs/estimate.md); its interval is the model's.
  bool estimated = false;
  // An estimate scaled from the row measured at another size (a batch, a sequence length) with
  // these arguments (core/predict/extent_match.h); empty: the cost model's figure alone.
  std::string anchor_args;
};
OpCost op_cost_from(const Measurement& m, bool on_gpu);

// The share of a traced step's GPU time that may run in kernels no operator call launched
// before a prediction is incomplete (issue 27 asks that 99% be covered).
inline constexpr double kUncoveredShare = 0.01;

// How much of a traced step's device time the inventory's calls launched (validate's kernel
// check; all 0 where none ran). A CUDA graph's replay (torch.compile's mode="reduce-overhead",
// a model's own graphs) launches its kernels outside any call, and the prediction has no
// operator for them: past kUncoveredShare of the step, the prediction is incomplete.
struct TracedCoverage {
  double traced_device_us = 0;  // the traced step's device time in all
  double untied_device_us = 0;  // of it, in activities no inventory call launched
  bool uncovered() const { return untied_device_us > 0 && untied_device_us > kUncoveredShare * traced_device_us; }
};

struct PredictionInputs {
  bool on_gpu = true;
  // Energy was switched off for this run (--no-energy): said as such, with no operator blamed.
  bool energy_off = false;
  std::optional<double> gap_power_W;  // GPU power while it idles between kernels
  double gap_power_ci_W = 0;          // its 95% half-width
  std::string gap_power_why;          // why it is missing
  double sync_us = 0;                 // host cost to observe the end of the step
  // The model's host times × this: the same model on a host this much slower (> 1) or faster.
  double host_scale = 1;
  // This board: costs measured on another board of the same model are counted apart (boards'
  // energy sensors differ by about ±5%). Empty: not known, nothing is counted.
  std::string gpu_uuid;
  // From a traced step (core/predict/launches.h): per inventory entry, where its calls launch
  // their GPU work (empty, or an empty entry: as each call returns), and the idle GPU's delay
  // from a launch to its kernel's start.
  std::vector<std::vector<LaunchPoint>> launches_by_entry;
  double launch_latency_us = 0;
};

struct PredictedRow {
  std::string name;  // layer path, or operator signature
  std::size_t calls = 0;
  double time_us = 0;  // on the critical path: kernels plus the GPU's waits before them
  double gpu_us = 0, cpu_us = 0;
  std::optional<double> energy_mJ;
  std::size_t missing_calls = 0;
  std::size_t estimated_calls = 0;  // of `calls`, those costed by the cost model, not measured
};

struct Prediction {
  bool on_gpu = true;  // the model ran on a GPU (on the CPU every call's time is host time)
  Timeline timeline;
  double time_us = 0;
  double time_ci_us = 0;  // 95% half-width from the operators' GPU times only (host costs have none)
  std::optional<double> energy_mJ, energy_ci_mJ;
  std::string energy_why;  // when energy_mJ is empty
  double gap_energy_mJ = 0;
  std::size_t calls = 0, measured_calls = 0;  // measured_calls: calls with a cost, estimated_calls among them
  std::size_t estimated_calls = 0;
  std::vector<std::size_t> missing;  // inventory entries without a measurement
  // Of the missing: those whose measurement failed in this run, with why and what to do (one
  // line each); the workflow that measured them fills it in.
  std::map<std::size_t, std::string> failed;
  // Entries measured by a row whose arguments differ only in floating-point scalar values
  // (OpCost::matched_args).
  struct FloatScalarMatch {
    std::size_t entry;
    std::string stored_args;
    int64_t db_id;
  };
  std::vector<FloatScalarMatch> matched_ignoring_float_scalars;
  std::vector<PredictedRow> layers, ops;  // sorted by time, largest first
  std::vector<std::string> flagged;       // signatures whose measurement was flagged
  std::vector<std::string> estimated;     // signatures estimated by the cost model, not measured
  std::size_t estimated_outside_fit = 0;  // of them, those outside the fit's data (extrapolated)
  std::size_t estimated_anchored = 0;     // of them, those scaled from a row at another size
  std::size_t from_other_board = 0;       // signatures measured on another board (PredictionInputs::gpu_uuid)
  // Signatures whose energy is a pooled column's power over their own time (flag energy_pooled:N,
  // core/energy/shared_windows.h): not flagged for that alone, which says nothing of the device.
  std::size_t pooled_energy = 0;
  // Of energy_mJ, what operators measured at the power cap in their own loops contribute
  // (their flag names sw_power_cap), and how many signatures: a step that stays below the cap
  // may run them at higher clocks, where their energy may differ (docs/prediction.md).
  double capped_energy_mJ = 0;
  std::size_t capped_signatures = 0;
  // `model`: the missing signatures were left unmeasured on purpose (the target was met).
  bool unmeasured_by_choice = false;
  // With launch points or a launch latency in the inputs: the time had every call launched its
  // GPU work as it returned, with no latency (what the timeline assumes without a trace).
  std::optional<double> time_us_launched_at_return;
  TracedCoverage coverage;
  bool uncovered() const { return coverage.uncovered(); }
  bool complete() const { return missing.empty() && !uncovered(); }
  // The CPU's issue time, not the GPU, sets the step's time: the interval, which carries the
  // GPU times' uncertainty only, is then narrower than the prediction's real uncertainty.
  bool host_bound() const { return timeline.cpu_us >= timeline.gpu_busy_us; }
};

// The model's own host time, from the inventory's timing rounds, with the observer's cost
// taken out (× HostCalibration::scale): per call, the time before it (Python, module code,
// freeing tensors) and in it (dispatch, launch), and after the last call.
struct ModelHostTimes {
  std::vector<double> before_us, in_call_us;
  double after_last_us = 0;
};
ModelHostTimes model_host_times(const Inventory& inv);

// The energy a call spends beyond what the GPU would draw idling between kernels anyway: the
// loop's energy per call less the power between kernels over the loop's own gaps (a
// launch-bound loop idles between its kernels; a model run has its own gaps, charged apart).
// `c` must have an energy figure.
double active_energy_mJ(const OpCost& c, const PredictionInputs& in);
// Its measurement was flagged throttled by the software power cap, and its energy is that
// loop's (not measured again at a step's duty cycle: flag energy_at_duty_cycle).
bool measured_at_power_cap(const OpCost& c);
// A row's flag that its energy is a pooled column's (energy_pooled:<members>): how it was
// measured, not a warning about the device (throttling, clocks, other processes).
bool is_pooled_flag(const std::string& flag);

// costs: inventory entry index -> cost (entries absent from the map are missing; the
// prediction then covers only the measured calls, and says so).
Prediction predict(const Inventory& inv, const std::map<std::size_t, OpCost>& costs, const PredictionInputs& in);

// The host scale (PredictionInputs::host_scale) at which the predicted time equals time_us:
// the host's speed while a step was measured. Bisection over [1/4, 4] (the predicted time
// grows with the scale); nullopt when no scale in that range reaches time_us within 0.5%, as
// for a GPU-bound step, whose time hardly depends on the host.
std::optional<double> host_scale_matching(const Inventory& inv, const std::map<std::size_t, OpCost>& costs,
                                          PredictionInputs in, double time_us);

// A whole-step measurement to compare against.
struct StepMeasurement {
  double time_us = 0, time_ci_us = 0;
  std::optional<double> energy_mJ, energy_ci_mJ;
  // The step's time per call while its energy was measured (the energy loop's wall time): the
  // host's speed then, which sets the GPU's idle time between kernels and so its energy.
  std::optional<double> energy_loop_time_us;
  std::string energy_why;
  std::vector<std::string> flags;
  int64_t db_id = -1;
  // The same step measured before the operators were (validate): the host's or the GPU's
  // speed drifting between the operator loops and the step shows as a difference here.
  std::optional<double> before_ops_time_us;
};
// A whole step's Measurement (a ModelCall's) as a StepMeasurement.
StepMeasurement step_measurement_of(const Measurement& m);
// Relative change of the step's time from before the operator loops to after; above this
// the measurement is flagged "drift".
constexpr double kStepDriftFlag = 0.05;

nlohmann::json to_json(const Prediction& p, const Inventory& inv, const StepMeasurement* measured);
std::string to_table(const Prediction& p, const Inventory& inv, const StepMeasurement* measured, std::size_t rows = 12);

}  // namespace opcost
