#include "torch/device.h"

#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <fmt/format.h>

#include <stdexcept>

#include "torch/replay.h"

namespace opcost {

namespace {

bool has_cuda_gpu() { return cuda_device_count() > 0; }

[[noreturn]] void no_gpu(std::string_view asked) {
  throw ReplayError(fmt::format("device '{}' requested but this machine has no CUDA GPU (use --device cpu)", asked));
}

}  // namespace

c10::Device resolve_device(const DeviceSpec& spec) {
  if (spec.is_auto()) return cuda_device_count() > 0 ? c10::Device(at::kCUDA, 0) : c10::Device(at::kCPU);
  if (spec.is_cpu()) return c10::Device(at::kCPU);
  if (!has_cuda_gpu()) no_gpu(to_string(spec));
  return c10::Device(at::kCUDA, c10::DeviceIndex(spec.index.value_or(0)));
}

c10::Device resolve_device_option(std::string_view text) {
  try {
    return resolve_device(parse_device_spec(text));
  } catch (const std::invalid_argument& e) {
    throw ReplayError(e.what());
  }
}

c10::Device resolve_argument_device(const std::string& text) {
  try {
    c10::Device d(text);
    if (d.is_cuda() && !has_cuda_gpu()) no_gpu(text);
    if (d.is_cuda() && !d.has_index()) d = c10::Device(at::kCUDA, 0);
    return d;
  } catch (const c10::Error&) {
    throw ReplayError(fmt::format("unknown device '{}' (use auto, cpu, cuda or cuda:N)", text));
  }
}

// The CUDA runtime's own count (c10::cuda::device_count, through the CUDA hooks), not the
// accelerator registry's: once torch.compile has run in the process (inductor, on the CPU),
// at::accelerator::deviceCount() answered 8 on a machine without a GPU (torch 2.11), and "auto"
// then chose a CUDA device that does not exist. CUDA's own count stayed 0.
int cuda_device_count() { return at::hasCUDA() ? at::detail::getCUDAHooks().getNumGPUs() : 0; }

}  // namespace opcost
