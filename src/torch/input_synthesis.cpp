#include "torch/input_synthesis.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>

#include <mutex>

namespace opcost {

TensorFootprint footprint_of(const TensorSpec& t, at::ScalarType dtype) {
  using Problem = TensorFootprint::Problem;
  TensorFootprint f;
  int64_t storage = 1;
  bool empty = false;
  for (auto d : t.shape) {
    if (d == 0) empty = true;
    if (!empty && __builtin_mul_overflow(storage, d, &storage)) return {Problem::overflow};
  }
  if (t.strides) {
    storage = 1;
    for (std::size_t i = 0; i < t.shape.size(); ++i) {
      if ((*t.strides)[i] < 0) return {Problem::negative_stride};
      int64_t span = 0;
      if (!empty && (__builtin_mul_overflow(t.shape[i] - 1, (*t.strides)[i], &span) ||
                     __builtin_add_overflow(storage, span, &storage)))
        return {Problem::overflow};
    }
  }
  if (empty) storage = 0;
  f.storage = storage;
  if (__builtin_mul_overflow(storage, int64_t(c10::elementSize(dtype)), &f.bytes)) return {Problem::overflow};
  // The seeded data is drawn in float (complex) first: the peak a tensor adds.
  f.staging_bytes = storage * (at::isComplexType(dtype) ? 8 : at::isFloatingType(dtype) ? 4 : 8);
  return f;
}

at::Generator seeded_generator(c10::Device device, uint64_t seed, bool dry) {
  if (device.is_cpu() || dry) return at::detail::createCPUGenerator(seed);
  at::Generator g = at::globalContext().defaultGenerator(device).clone();
  std::lock_guard lock(g.mutex());
  g.set_current_seed(seed);
  return g;
}

at::Tensor synthesize_tensor(const ArgPlace& place, const TensorSpec& t, at::ScalarType dtype, int64_t storage,
                             at::Generator& gen, c10::Device device) {
  const auto draw = at::TensorOptions().device(gen.device());  // where the generator draws
  // Values the call needs to be valid and to cost what the model paid (torch/input_values).
  const at::Tensor flat = draw_values(place, t, dtype, storage, gen, draw);
  at::Tensor x = flat.to(dtype).to(device);
  return t.strides ? x.as_strided(t.shape, *t.strides) : x.view(t.shape);
}

}  // namespace opcost
