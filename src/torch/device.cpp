#include "torch/device.h"

#include <ATen/Context.h>
#include <ATen/DeviceAccelerator.h>
#include <fmt/format.h>

#include <stdexcept>

#include "torch/replay.h"

namespace opcost {

namespace {

bool has_cuda_gpu() { return at::hasCUDA() && at::accelerator::deviceCount() > 0; }

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

int cuda_device_count() {
  auto acc = at::accelerator::getAccelerator(false);
  return acc && *acc == at::kCUDA ? int(at::accelerator::deviceCount()) : 0;
}

}  // namespace opcost
