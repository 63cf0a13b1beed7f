#pragma once
// Tables of a traced run in the manner of torch.profiler's key_averages: per operator
// (optionally per input shape) and per layer, with calls, host (CPU) time and the device time
// of the kernels tied to them. Every row's figures are sums over the traced steps; the total
// row is the sum of the rows, so nothing is counted twice or lost. Torch-free.
#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "core/trace/activities.h"
#include "core/trace/compact_timeline.h"

namespace opcost {

// How many rows a trace table shows unless told (the command line's --limit, Python's limit).
inline constexpr std::size_t kTraceTableRows = 30;

struct TraceRow {
  std::string name;    // operator, or layer (module path; "(no layer)" for calls outside any)
  std::string shapes;  // by shape: the inputs' shapes
  std::size_t calls = 0;
  double cpu_total_us = 0, cpu_self_us = 0;  // host time; self leaves out child layers
  double gpu_total_us = 0, gpu_self_us = 0;  // tied device activities; self: not in child layers
  std::size_t device_activities = 0;         // tied to the row's own calls
  std::size_t inferred = 0;                  // of them, tied by synchronisations (no correlation id)
  double flops = 0;                          // as the profiler estimates them (0: unknown)
  // With energy attributed (opcost trace --energy): self is the row's own calls', total adds
  // its child layers'; each with its 95% half-width. The GPU idle time its own calls own.
  double energy_total_mJ = 0, energy_self_mJ = 0, energy_total_ci_mJ = 0, energy_self_ci_mJ = 0;
  double idle_self_us = 0;
  // Average power over the row's own kernels and idle time, and its 95% half-width (the self
  // energy's, over the same time); none when the row owns no time.
  std::optional<double> power_W() const {
    if (gpu_self_us + idle_self_us <= 0) return std::nullopt;
    return energy_self_mJ / (gpu_self_us + idle_self_us) * 1e3;
  }
  double power_ci_W() const {
    return gpu_self_us + idle_self_us > 0 ? energy_self_ci_mJ / (gpu_self_us + idle_self_us) * 1e3 : 0;
  }
};

struct TraceTable {
  std::string group_by;  // "op", "op+shape" or "layer"
  std::vector<TraceRow> rows;
  TraceRow total;             // the sums of the rows' self columns
  std::size_t steps = 0;      // traced steps
  double untied_gpu_us = 0;   // device time of activities tied to no call
  std::size_t untied = 0;     // and how many
  double device_busy_us = 0;  // every device activity's time: total.gpu_self_us + untied_gpu_us
  std::optional<StepMeasurement> measured_step;
  std::optional<EnergyTotals> energy;  // the run's
  std::string energy_why;              // why there is none, when energy was asked for
  // For the HTML report: counters and busy spans over time (set by the commands that write a
  // table for a reader, not by op_table / layer_table).
  std::optional<CompactTimeline> timeline;
};

TraceTable op_table(const TraceRun& run, bool by_shape);
TraceTable layer_table(const TraceRun& run);
// The table a command asks for by name ("op", "shape" or "layer"; anything else is refused,
// naming them), with the compact timeline only where a reader draws it (JSON, HTML).
TraceTable trace_table(const TraceRun& run, const std::string& group_by, bool with_timeline);

// Text, sorted by a column ("gpu" / "gpu_total", "gpu_self", "cpu" / "cpu_total", "cpu_self",
// "energy" / "energy_total", "energy_self", "calls", "name"), the first `limit` rows (0: all) and the total. Throws
// std::invalid_argument for an unknown column, naming the known ones.
std::string render_table(const TraceTable& t, const std::string& sort_by = "gpu", std::size_t limit = 0);
nlohmann::json to_json(const TraceTable& t);

}  // namespace opcost
