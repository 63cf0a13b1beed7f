#pragma once
// A model as the workflows take it (a built-in name or a TorchScript file, its input, dtype,
// device and mode), and its inventory: every operator call of an observed step. Torch-free.
#include <cstdint>
#include <string>
#include <vector>

#include "core/inventory/inventory.h"
#include "torch/models.h"

namespace opcost {

struct ModelOptions {
  std::string model;                // built-in name or TorchScript file
  std::vector<std::string> inputs;  // TorchScript: one tensor spec per forward argument
  ModelInput in;
};

// One round of host timing: a step observed for its calls' host times, between two plain
// steps timed alone (their mean host time until the step returned, and wall time until the
// device finished).
struct HostRound {
  Inventory observed;  // host times only (see ObserveOptions::host_times_only)
  double plain_step_us = 0, plain_wall_us = 0;
};
HostRound time_host_round(RunnableModel& model);

// Runs the model's warm-up, then observes one step with its layers and inputs (the calls and
// their signatures), then times `host_rounds` rounds: each call's host times are medians over
// the rounds' observed steps, calibrated by the plain steps (Inventory::host_calibration).
// `cache_bytes` > 0 classes each call's inputs as read from L2 or memory against that capacity
// (ObserveOptions::cache_bytes).
Inventory take_inventory(RunnableModel& model, const ModelOptions& o, int host_rounds = 8,
                         std::uint64_t cache_bytes = 0);

// The capacity take_inventory classes inputs against: `requested` where > 0 (on any device:
// "what if the cache were this size"), else the L2 of the model's GPU; 0 (nothing classed) on
// the CPU or where the driver cannot say, with why in `why` (may be null).
std::uint64_t cache_bytes_to_class(const RunnableModel& model, std::uint64_t requested, std::string* why);

// The median host times of `rounds` whose calls are `inv`'s, and their calibration.
void take_host_times(Inventory& inv, const std::vector<HostRound>& rounds);

}  // namespace opcost
