#include "torch/kernel_trace.h"

#include <ATen/DeviceAccelerator.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/core/InferenceMode.h>
#include <kineto/ActivityType.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include <set>
#include <unordered_map>
#include <unordered_set>

#include "core/inventory/compiled_kernel_name.h"

namespace opcost {

namespace {

bool is_device_activity(uint8_t type) {
  using T = libkineto::ActivityType;
  return type == uint8_t(T::CONCURRENT_KERNEL) || type == uint8_t(T::GPU_MEMCPY) || type == uint8_t(T::GPU_MEMSET);
}

// The runtime or driver call that launched a device activity (cudaLaunchKernel, cuLaunchKernel,
// cudaMemsetAsync): it shares the activity's CUPTI correlation id.
bool is_launch_call(uint8_t type) {
  using T = libkineto::ActivityType;
  return type == uint8_t(T::CUDA_RUNTIME) || type == uint8_t(T::CUDA_DRIVER);
}

}  // namespace

std::vector<CallKernels> trace_kernels(const std::function<void()>& body, uint64_t* unattributed_ns) {
  using namespace torch::autograd::profiler;
  namespace impl = torch::profiler::impl;
  if (!at::detail::getCUDAHooks().hasCUDA())
    throw std::runtime_error("no CUDA device: kernels can only be traced on a GPU");
  const impl::ProfilerConfig cfg(impl::ProfilerState::KINETO, /*report_input_shapes=*/false);
  const std::set<impl::ActivityType> acts = {impl::ActivityType::CPU, impl::ActivityType::CUDA};
  prepareProfiler(cfg, acts);
  enableProfiler(cfg, acts);
  try {
    body();
    at::accelerator::synchronizeDevice(at::accelerator::getDeviceIndex());  // every kernel recorded
  } catch (...) {
    disableProfiler();
    throw;
  }
  auto result = disableProfiler();
  // Kineto events carry no overload name: dispatcher ops are known by their base names.
  std::unordered_set<std::string> op_names;
  for (const auto& n : c10::Dispatcher::singleton().getAllOpNames()) op_names.insert(n.name);
  std::vector<TraceOp> ops;
  std::vector<TraceKernel> kernels;
  std::vector<uint64_t> kernel_correlation;  // CUPTI's: the launch call's and its activity's
  std::unordered_map<uint64_t, uint64_t> launch_start_ns;
  for (const auto& e : result->events()) {
    if (e.deviceType() == c10::DeviceType::CUDA && is_device_activity(e.activityType())) {
      kernels.push_back({e.name(), e.linkedCorrelationId(), e.durationNs(), e.startNs()});
      kernel_correlation.push_back(e.correlationId());
    } else if (e.deviceType() == c10::DeviceType::CPU && is_launch_call(e.activityType())) {
      launch_start_ns.emplace(e.correlationId(), e.startNs());
    } else if (e.deviceType() == c10::DeviceType::CPU && e.activityType() == uint8_t(libkineto::ActivityType::CPU_OP) &&
               (op_names.count(e.name()) || is_compiled_kernel_name(e.name()))) {
      // A generated kernel's record carries its source hash, which the inventory keeps as the
      // overload: compared by op name, as ATen's calls are.
      std::string name = is_compiled_kernel_name(e.name()) ? split_compiled_kernel_name(e.name()).first : e.name();
      ops.push_back({std::move(name), e.startThreadId(), e.startNs(), e.endNs(), e.correlationId()});
    }
  }
  for (std::size_t k = 0; k < kernels.size(); ++k)
    if (auto it = launch_start_ns.find(kernel_correlation[k]); it != launch_start_ns.end())
      kernels[k].launch_ns = it->second;
  return kernels_per_call(std::move(ops), kernels, nullptr, unattributed_ns);
}

std::vector<std::optional<std::vector<std::string>>> isolation_kernels(const std::vector<OpCall>& calls,
                                                                       const ReplayOptions& opt,
                                                                       std::size_t max_bytes) {
  c10::InferenceMode guard;  // as the measurement runs them
  std::vector<std::optional<std::vector<std::string>>> out(calls.size());
  std::size_t next = 0;
  while (next < calls.size()) {
    // Prepare a group (each prepare runs the op once, so the trace sees warm calls only).
    std::vector<std::pair<std::size_t, std::unique_ptr<PreparedCall>>> group;
    std::size_t bytes = 0;
    for (; next < calls.size() && (group.empty() || bytes < max_bytes); ++next) {
      try {
        auto p = PreparedCall::prepare(calls[next], opt);
        bytes += p->input_bytes();
        group.emplace_back(next, std::move(p));
      } catch (const std::exception&) {
        // Reported where the call is measured; here it just has no kernels to compare.
      }
    }
    if (group.empty()) continue;
    const auto traced = trace_kernels([&] {
      for (auto& [i, p] : group) p->call();
    });
    if (traced.size() != group.size())
      throw std::runtime_error("the replay trace saw " + std::to_string(traced.size()) + " calls for " +
                               std::to_string(group.size()) + " replays");
    for (std::size_t k = 0; k < group.size(); ++k) out[group[k].first] = traced[k].kernels;
  }
  return out;
}

}  // namespace opcost
