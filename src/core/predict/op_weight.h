#pragma once
// How much of a step an operator call is likely to take, before anything of it is measured:
// the order in which `opcost model` measures a model's operators, so that fewer of them
// explain its target share. Relative only, never shown as a figure. Torch-free.
#include <cstddef>

#include "core/spec/op_call.h"

namespace opcost {

// The larger of the bytes its tensors move (inputs, and an output as large as the largest) and
// its multiply-adds (convolutions, matrix products) over a nominal balance of 100 flops per
// byte for 32-bit and 300 for 16-bit types (a GPU's peak flops over its memory bandwidth), plus
// a floor for the host cost every call has; times its calls per step.
double expected_weight(const OpCall& call, std::size_t calls);

}  // namespace opcost
