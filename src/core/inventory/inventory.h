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
  std::string display_name() const { return overload.empty() ? op : op + "." + overload; }
  std::string signature() const { return display_name() + " " + args; }
};

struct InventoryCall {
  std::size_t entry;  // index into entries
  std::string layer;
  // Host time as observed in the model run (observer overhead included, ~0.5 µs per
  // dispatcher record): the call itself, and the host time since the previous call returned
  // (the model's own code: module calls, scopes, freeing tensors).
  double host_us = 0, host_gap_us = 0;
  // Layer scopes opened or closed in that gap (module boundaries crossed).
  int scope_events = 0;
};

struct Inventory {
  std::string model, input, device, dtype, mode = "inference";  // mode: inference | train
  std::string autocast;                                         // "" or the autocast dtype
  int64_t parameters = 0;
  // The observer's own host time in each gap between calls, measured with the run (see
  // observer_gap_floor_us); 0 when unknown.
  double observer_gap_us = 0;
  // Host time each layer scope's opening or closing adds to a gap when the scopes exist only
  // while observing (Python's module hooks), measured with the run; 0 where the scopes are
  // the model's own code (built-in models open them in every run).
  double layer_scope_us = 0;
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
// Returns how many runs were used.
std::size_t take_median_host_times(Inventory& inv, const std::vector<Inventory>& runs, bool timing_runs_only = false);

// Groups recorded calls: each call is (signature parts, layer, nested op names, phase).
class InventoryBuilder {
 public:
  void add(const std::string& op, const std::string& overload, const std::string& args, const std::string& layer,
           const std::vector<std::string>& nested, const std::string& phase = "forward");
  // Sets the observed host times of the call added last.
  void time_last(double host_us, double host_gap_us, int scope_events = 0);
  Inventory take() { return std::move(inv_); }

 private:
  Inventory inv_;
  std::map<std::string, std::size_t> index_;  // phase + signature -> entry
};

}  // namespace opcost
