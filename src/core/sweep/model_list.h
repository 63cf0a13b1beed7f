#pragma once
// Sweep model lists: models whose inventories' unique signatures become a sweep's items.
//
//   name: zoo-ops
//   models:
//     - model: resnet50              # a built-in model (opcost models)
//       batch: [1, 8, 32]            # a list is an axis: one configuration per value
//       dtype: [fp32, bf16]
//     - model: exported/encoder.pt   # a TorchScript file (relative to the list's folder)
//       input: [f32[1,3,224,224]]    # one tensor spec per forward argument
//     - model: distilgpt2
//       seq: 256
//       autocast: fp16
//       train: [false, true]
//     - model: torchvision.models:resnet18   # a Python model: package.module:callable or
//       input: f32[8,3,224,224]               # file.py:callable (swept from Python only)
//
// Keys: model (required), input, batch, seq, dtype, autocast, train. Configurations come in
// file order, each entry's lists as a cartesian product (the first key slowest). Torch-free.
#include <cstdint>
#include <string>
#include <vector>

#include "core/sweep/sweep_limits.h"

namespace opcost {

struct ModelConfig {
  std::string model;                // built-in name or TorchScript path
  std::vector<std::string> inputs;  // TorchScript: tensor specs
  int64_t batch = 1, seq = 128;
  std::string dtype = "fp32", autocast;
  bool train = false;
  std::string label;    // "resnet50 batch=8 dtype=bf16": the keys the entry gave
  bool python = false;  // package.module:callable or file.py:callable: the Python package runs it
};

struct ModelList {
  std::string name;
  std::vector<ModelConfig> configs;
};

// Whether a sweep file's text is a model list (it has `models:`) rather than a grid.
bool is_model_list_text(const std::string& yaml);
// Throws std::invalid_argument naming `origin`, the entry and the fix; SweepTooLarge when the
// entries' products add up to more than `max_configs` configurations (counted before any is made).
ModelList read_model_list_text(const std::string& yaml, const std::string& origin, const std::string& base_dir = "",
                               std::uint64_t max_configs = kDefaultMaxSweepItems);

}  // namespace opcost
