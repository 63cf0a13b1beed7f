#pragma once
// A model as the workflows take it (a built-in name or a TorchScript file, its input, dtype,
// device and mode), and its inventory: every operator call of an observed step. Torch-free.
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

// Runs the model's warm-up, then observes a few steps: the calls come from the first, host
// times are medians over all of them (see take_median_host_times).
Inventory take_inventory(RunnableModel& model, const ModelOptions& o);

}  // namespace opcost
