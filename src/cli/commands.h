#pragma once
// The subcommands that work on whole models (inventory, predict, validate, model).
#include <string>
#include <vector>

#include "core/inventory/inventory.h"
#include "torch/models.h"
#include "torch/runner.h"

namespace opcost {

struct ModelOptions {
  std::string model;                // built-in name or TorchScript file
  std::vector<std::string> inputs;  // TorchScript: one tensor spec per forward argument
  ModelInput in;
};

// Runs the model's warm-up, then observes a few steps: the calls come from the first, host
// times are medians over all of them (see take_median_host_times).
Inventory take_inventory(RunnableModel& model, const ModelOptions& o);

struct PredictOptions {
  ModelOptions model;
  std::string db;
  bool db_create_parent = false;  // opcost's default location: its directories may be made
  bool json = false;
  bool measure = false;        // validate / model: measure what the database lacks, and the whole step
  double target = 0;           // model: stop measuring operators once both shares reach this
  std::string cache = "warm";  // operator measurements to use and make: warm or cold inputs
  MeasureConfig op_config;     // for operators
  MeasureConfig step_config;   // for the whole step
};

int run_predict(const PredictOptions& o);

}  // namespace opcost
