#pragma once
// Making a call's input tensors from their specs: how much memory a spec's tensor takes
// (checked before anything is allocated), the seeded generator the data is drawn from, and the
// tensor itself, its values by the per-operator rules of torch/input_values.
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>

#include "core/spec/arg_value.h"
#include "torch/input_values.h"

namespace opcost {

// What a spec's tensor takes, or why it cannot be made.
struct TensorFootprint {
  enum class Problem {
    none,
    overflow,         // more elements (or bytes) than a tensor can hold: over 2^63
    negative_stride,  // a stride below 0, which as_strided refuses
  };
  Problem problem = Problem::none;
  int64_t storage = 0;        // elements of storage the shape and strides span
  int64_t bytes = 0;          // the storage in the spec's dtype
  int64_t staging_bytes = 0;  // what drawing it first adds (in float, complex or int64)
};

// Computed with overflow checks: LibTorch would fail deep inside with "Stride calculation
// overflowed" and a backtrace.
TensorFootprint footprint_of(const TensorSpec& t, at::ScalarType dtype);

// Inputs are drawn where they live, from a generator of that device seeded with `seed`: the
// same data on every run on that kind of device, without drawing hundreds of MB on one host
// thread first (the H100's resnet50 b32: 80 ms an operator). A dry bind draws nothing, so it
// gets a CPU generator whatever the device.
at::Generator seeded_generator(c10::Device device, uint64_t seed, bool dry);

// The tensor of argument `place`: `storage` elements drawn by `gen` (torch/input_values'
// draw_values), converted to `dtype`, moved to `device` and viewed with the spec's shape and
// strides.
at::Tensor synthesize_tensor(const ArgPlace& place, const TensorSpec& t, at::ScalarType dtype, int64_t storage,
                             at::Generator& gen, c10::Device device);

}  // namespace opcost
