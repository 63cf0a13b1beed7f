#pragma once
// Helpers shared by the built-in models and TorchScript models (LibTorch side).
#include <ATen/core/ScalarType.h>

#include <string>

#include "torch/models.h"

namespace opcost {

// fp32 | bf16 | fp16 (and their long names); throws std::invalid_argument naming the choices.
at::ScalarType model_dtype(const std::string& name);

// Rejects mode combinations that cannot run (autocast of a model already in bf16/fp16).
void check_mode(const ModelInput& in, at::ScalarType dtype);

}  // namespace opcost
