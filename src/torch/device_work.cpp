// The two checks for calls without device work. The view check reads the schema's alias
// annotations and the tensors' storages; the GPU check times a batch between CUDA events behind
// a sleep kernel, so that the host's issue time never shows as GPU time.
#include "torch/device_work.h"

#include <ATen/DeviceAccelerator.h>
#include <ATen/Tensor.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/Event.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>

#include "core/energy/monitor.h"
#include "core/stats/summary.h"
#include "torch/runner.h"

namespace opcost {

namespace {

// The defined tensors in an argument or a return: a tensor, a list of (optional) tensors, a
// tuple. Nested no deeper than a schema nests them.
void collect_tensors(const c10::IValue& v, std::vector<at::Tensor>& out, int depth = 0) {
  if (depth > 3) return;
  if (v.isTensor()) {
    if (v.toTensor().defined()) out.push_back(v.toTensor());
  } else if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorVector())
      if (t.defined()) out.push_back(t);
  } else if (v.isList()) {
    for (const c10::IValue& x : v.toListRef()) collect_tensors(x, out, depth + 1);
  } else if (v.isTuple()) {
    for (const c10::IValue& x : v.toTupleRef().elements()) collect_tensors(x, out, depth + 1);
  }
}

bool shares_storage(const at::Tensor& a, const at::Tensor& b) {
  // Tensors without a storage (sparse, nested) cannot be compared: not taken for a view.
  if (!a.has_storage() || !b.has_storage()) return false;
  return a.is_alias_of(b);
}

}  // namespace

bool outputs_are_views_of_inputs(const c10::FunctionSchema& schema, const std::vector<c10::IValue>& inputs,
                                 const std::vector<c10::IValue>& outputs) {
  for (const c10::Argument& a : schema.arguments())
    if (a.alias_info() && a.alias_info()->isWrite()) return false;
  std::vector<at::Tensor> in, out;
  for (const auto& v : inputs) collect_tensors(v, in);
  for (const auto& v : outputs) collect_tensors(v, out);
  if (out.empty()) return false;  // a number (.item(), a size): the GPU check decides
  return std::all_of(out.begin(), out.end(), [&](const at::Tensor& o) {
    return std::any_of(in.begin(), in.end(), [&](const at::Tensor& i) { return shares_storage(o, i); });
  });
}

std::optional<double> gpu_us_per_call_behind_sleep(PreparedCall& call, int device_index,
                                                   std::optional<double> one_call_us) {
#if defined(OPCOST_TORCH_HAS_CUDA)
  const auto device = c10::DeviceIndex(device_index);
  const c10::Stream stream = at::accelerator::getCurrentStream(device);
  c10::Event start(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);
  c10::Event end(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);
  constexpr std::size_t kCalls = 100;
  constexpr double kClearKernelUs = 10;  // far above an empty event pair's span (~1 µs)
  constexpr double kMaxPrefillS = 0.05;
  double prefill_s = 0.002;
  // The GPU time between two events with `calls` calls issued between them behind a prefill.
  // nullopt when the host took longer than the prefill to issue them: the GPU then reached the
  // second event only when the host recorded it, and the span would be host time.
  auto span_us = [&](std::size_t calls) -> std::optional<double> {
    gpu_sleep_s(prefill_s);
    start.record(stream);
    const double t0 = now_s();
    for (std::size_t i = 0; i < calls; ++i) call.call();
    const double issue_s = now_s() - t0;
    end.record(stream);
    end.synchronize();
    if (issue_s > 0.8 * prefill_s) {
      prefill_s = std::min(kMaxPrefillS, 2 * issue_s + 0.001);
      return std::nullopt;
    }
    return double(start.elapsedTime(end)) * 1e3;
  };
  // One call first: a kernel of more than a few µs shows at once, and a long op is never run
  // a hundred times for the check.
  std::optional<double> one = one_call_us;
  for (int attempt = 0; attempt < 4 && !one; ++attempt) one = span_us(1);
  if (!one) return std::nullopt;
  if (*one >= kClearKernelUs) return *one;
  std::vector<double> with_calls, empty;
  for (int attempt = 0; attempt < 4 && with_calls.empty(); ++attempt)
    if (auto us = span_us(kCalls)) with_calls.push_back(*us);
  if (with_calls.empty()) return std::nullopt;
  // A kernel clearly: no need to resolve it from the empty pair.
  if (with_calls.front() / double(kCalls) >= 5 * kNoKernelGpuUsPerCall) return with_calls.front() / double(kCalls);
  // Otherwise the batch against the empty pair, three of each, interleaved: the medians.
  while (with_calls.size() < 3 || empty.size() < 3) {
    const auto e = span_us(0);
    const auto w = span_us(kCalls);
    if (!e || !w) return std::nullopt;  // the host slowed down mid-check: not decided
    empty.push_back(*e);
    with_calls.push_back(*w);
  }
  return std::max(0.0, median_of(with_calls) - median_of(empty)) / double(kCalls);
#else
  (void)call, (void)device_index, (void)one_call_us;
  return std::nullopt;
#endif
}

Runner::WorkCheck Runner::check_device_work(PreparedCall& call) {
  WorkCheck c;
  if (cfg_.synchronous_calls) {  // a whole step: it does work, and waits for it
    c.synchronous = true;
    return c;
  }
  if (call.returns_views_only()) {
    c.work = DeviceWork::kNoneView;
    return c;
  }
  if (!device_.is_cuda()) return c;
  // A call that waits for the device would hold the host behind the check's prefill: it has
  // device work to wait for (a copy, a value), and is timed by wall clock.
  const DeviceWait wait = waits_for_device(call);
  c.synchronous = wait.waits;
  if (c.synchronous) return c;
  const std::optional<double> gpu_us = gpu_us_per_call_behind_sleep(call, index_, wait.one_call_gpu_us);
  if (gpu_us && *gpu_us < kNoKernelGpuUsPerCall) c.work = DeviceWork::kNoneNoKernel;
  return c;
}

DeviceWork Runner::device_work_of(PreparedCall& call) {
  // As measure_call runs it: without autograd, on the measured device.
  c10::InferenceMode guard;
  const c10::DeviceGuard device_guard(device_.is_cuda() ? c10::Device(c10::kCUDA, c10::DeviceIndex(index_))
                                                        : c10::Device(c10::kCPU));
  return check_device_work(call).work;
}

}  // namespace opcost
