#pragma once
// Kernel traces through the Kineto profiler (CUPTI): which kernels each operator call
// launches. Torch-free header.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/predict/kernels.h"
#include "torch/replay.h"

namespace opcost {

// Runs `body` once under the profiler (host ops and CUDA activity) and returns each outermost
// dispatcher call with the device activities it launched, in call order; the time of device
// activities no such call launched in *unattributed_ns (a CUDA graph's replay). Throws
// std::runtime_error when device activity cannot be traced (no CUDA, no CUPTI).
std::vector<CallKernels> trace_kernels(const std::function<void()>& body, uint64_t* unattributed_ns = nullptr);

// The kernels each call launches when replayed alone, one replay per call (each prepared as
// `opcost measure` prepares it, then called once more under the trace). A call that cannot be
// prepared is left empty. Calls are traced in groups of at most `max_bytes` of inputs.
std::vector<std::optional<std::vector<std::string>>> isolation_kernels(const std::vector<OpCall>& calls,
                                                                       const ReplayOptions& opt,
                                                                       std::size_t max_bytes = std::size_t(2) << 30);

}  // namespace opcost
