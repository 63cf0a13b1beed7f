#pragma once
// Helpers shared by the built-in models and TorchScript models (LibTorch side).
#include <ATen/core/Tensor.h>
#include <c10/core/DeviceType.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "torch/models.h"

namespace opcost {

// fp32 | bf16 | fp16 (and their long names); throws std::invalid_argument naming the choices.
at::ScalarType model_dtype(const std::string& name);

// The autocast dtype `in` asks for (nullopt without --autocast). Throws std::invalid_argument for
// combinations that cannot run (autocast of a model already in bf16/fp16) and bad names.
std::optional<at::ScalarType> resolve_autocast(const ModelInput& in, at::ScalarType dtype);

// One step as `in` asks: `forward`, or (--train) with gradients set to none first, then
// backward of sum(output) in the layer "loss"; under `autocast` when set. Grad and inference
// modes are RunnableModel::step()'s, which runs this.
// `forward` returns the model's output tensor (undefined when it has none).
void run_model_step(const ModelInput& in, std::optional<at::ScalarType> autocast, c10::DeviceType device,
                    const std::vector<at::Tensor>& parameters, const std::function<at::Tensor()>& forward);

}  // namespace opcost
