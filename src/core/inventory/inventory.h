#pragma once
// A model's operator inventory: every outermost ATen call of one forward, grouped by
// canonical signature, with the layers that issued it and the ops nested inside it.
// Torch-free, so reports and later tools (prediction) compile without LibTorch.
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace opcost {

struct InventoryEntry {
  std::string op, overload, args;  // args: canonical, as `opcost measure` accepts
  std::string phase = "forward";   // or "backward" (--train)
  std::size_t count = 0;
  std::vector<std::string> layers;            // in order of first use
  std::map<std::string, std::size_t> nested;  // nested op -> calls, summed over `count` calls
  // Inputs the model reads from memory, not from the GPU's L2 (core/inventory/cache_reuse): a
  // weight read once a step. Empty where every input is warm, or where it was not analysed.
  std::vector<std::string> cold_args;
  // It returned views of its arguments and wrote none (narrow, select, detach; contiguous of a
  // contiguous tensor): it launched no kernel, and its measurement is host time alone. Known
  // where a model was observed with its inputs classed by cache; false otherwise, which costs
  // time, never a figure.
  bool returns_views = false;
  std::string display_name() const { return overload.empty() ? op : op + "." + overload; }
  std::string signature() const { return display_name() + " " + args; }
  // The replay's cache mode that matches the model: "warm", or "cold:<arg>,<arg>".
  std::string cache_mode() const;
  // The signature, followed where some inputs are read from memory by "(from memory: a, b)":
  // what report rows are keyed by, so that a signature's warm and cold calls stay two rows.
  std::string row_name() const;
};

struct InventoryCall {
  std::size_t entry;  // index into entries
  std::string layer;
  // Host time as observed in the model run (the observer's own cost included; see
  // HostCalibration): the call itself, and the host time since the previous call returned, or
  // since the step began for the first call (the model's own code: Python, module calls,
  // freeing tensors).
  double host_us = 0, host_gap_us = 0;
};

// The observer's cost, measured: the same step's host time (from its start until it returns,
// before any synchronisation) with and without the observer, interleaved, medians. Observed
// host times × plain / observed are the model's own.
struct HostCalibration {
  double plain_step_us = 0, observed_step_us = 0;
  int rounds = 0;
  double scale() const { return plain_step_us > 0 && observed_step_us > 0 ? plain_step_us / observed_step_us : 1; }
};

struct Inventory {
  std::string model, input, device, dtype, mode = "inference";  // mode: inference | train
  std::string autocast;                                         // "" or the autocast dtype
  int64_t parameters = 0;
  // The observed step's host time from its start until it returned, and the part of it after
  // its last call returned (building outputs, Python).
  double host_step_us = 0, host_after_last_call_us = 0;
  HostCalibration host_calibration;
  // The L2 capacity the inputs were classed against (cold_args); 0: not classed.
  std::uint64_t cache_bytes = 0;
  std::vector<InventoryEntry> entries;  // in order of first call
  std::vector<InventoryCall> sequence;  // every outermost call, in issue order
  std::size_t layer_count() const;
};

nlohmann::json to_json(const Inventory& inv);

std::string to_table(const Inventory& inv);

// The host's speed moves from step to step (tens of percent on a shared VM), so host times are
// taken over several observed runs of the same step: each call's host times become the median
// over those `runs` whose calls are the same (the same ops in the same order), and over `inv`
// itself unless `timing_runs_only` (its observer recorded inputs, which costs the host more).
// The medians are then scaled together so that they add up to the median run's host time.
// Returns how many runs were used.
std::size_t take_median_host_times(Inventory& inv, const std::vector<Inventory>& runs, bool timing_runs_only = false);
// Whether two inventories made the same calls in the same order (their host times then
// belong to the same calls).
bool same_calls(const Inventory& a, const Inventory& b);

// Groups recorded calls: each call is (signature parts, layer, nested op names, phase, cold
// inputs). Calls of one signature with different cold inputs are different entries: they are
// measured apart.
class InventoryBuilder {
 public:
  void add(const std::string& op, const std::string& overload, const std::string& args, const std::string& layer,
           const std::vector<std::string>& nested, const std::string& phase = "forward",
           const std::vector<std::string>& cold_args = {}, bool returns_views = false);
  // Sets the observed host times of the call added last.
  void time_last(double host_us, double host_gap_us);
  Inventory take() { return std::move(inv_); }

 private:
  Inventory inv_;
  std::map<std::string, std::size_t> index_;  // phase + signature -> entry
};

}  // namespace opcost
