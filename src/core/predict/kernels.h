#pragma once
// Which GPU kernels each operator call launched, from a kernel trace, and the check that an
// operator launches the same kernels in isolation as inside the model. cuDNN and cuBLAS pick
// algorithms by shape, stride, alignment and workspace: another kernel inside the model makes
// the isolated cost the wrong one. Torch-free.
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/inventory/inventory.h"
#include "core/predict/prediction.h"

namespace opcost {

// A dispatcher op record of the trace (host side).
struct TraceOp {
  std::string name;
  uint64_t thread = 0, start_ns = 0, end_ns = 0, correlation = 0;
};
// A device activity (kernel, memcpy, memset) and the op record that launched it.
struct TraceKernel {
  std::string name;
  uint64_t linked_correlation = 0;
  uint64_t duration_ns = 0;
  uint64_t start_ns = 0;   // on the device, in the host's clock
  uint64_t launch_ns = 0;  // its launch call's start on the host; 0: not traced
};

// A device activity as its call launched it (core/predict/launches.h places launches in time).
struct TracedLaunch {
  uint64_t launch_ns = 0;  // 0: its launch call was not traced
  uint64_t start_ns = 0, duration_ns = 0;
};

// One outermost op call and the device activities it (or an op nested in it) launched.
struct CallKernels {
  std::string op;
  std::vector<std::string> kernels;    // in launch order
  uint64_t device_ns = 0;              // their summed durations
  uint64_t start_ns = 0, end_ns = 0;   // the call on the host
  std::vector<TracedLaunch> launches;  // one per kernel, in the same order
};

// The outermost op calls (time nesting per thread; threads merged in start order), each with
// its kernels. Kernels whose launching op is not among `ops` are counted in *unattributed, and
// their summed durations in *unattributed_ns.
std::vector<CallKernels> kernels_per_call(std::vector<TraceOp> ops, const std::vector<TraceKernel>& kernels,
                                          std::size_t* unattributed = nullptr, uint64_t* unattributed_ns = nullptr);

// The check of one inventory entry.
struct KernelCheck {
  std::vector<std::string> in_model;      // of the first call whose kernels differ (or the first call)
  std::vector<std::string> in_isolation;  // what the replay launched
  bool match = true;                      // every call in the model launched the replay's kernels
  double model_device_us = 0;             // mean per call in the model: the traced kernels' durations
};

// Per inventory entry: `model` is the traced model step (one CallKernels per inventory call,
// in order), `isolation` the replay's kernels per entry (empty optional: not traced).
// Throws std::runtime_error when the model trace does not line up with the inventory.
struct KernelReport {
  std::vector<std::optional<KernelCheck>> entries;
  std::size_t mismatches = 0;
};
KernelReport compare_kernels(const Inventory& inv, const std::vector<CallKernels>& model,
                             const std::vector<std::optional<std::vector<std::string>>>& isolation);

nlohmann::json to_json(const KernelCheck& c);

// Entries whose cost was measured as a call without device work (OpCost::device_work) but whose
// calls launched kernels in the traced step: the prediction charges them host time only.
std::vector<std::size_t> kernel_less_entries_with_kernels(const KernelReport& k,
                                                          const std::map<std::size_t, OpCost>& costs);

// GPU time: each checked entry's kernels traced in the model against its operator loop. Per-op
// errors can cancel in the total, so they are reported on their own.
struct DeviceTimeRow {
  std::size_t entry;
  double model_us, loop_us;  // per call
};
struct DeviceTimes {
  std::vector<DeviceTimeRow> rows;    // largest effect on the step (calls × difference) first
  double model_us = 0, loops_us = 0;  // over all calls
};
DeviceTimes device_times(const KernelReport& k, const Inventory& inv, const std::map<std::size_t, OpCost>& costs);

// The report: mismatches, and the GPU time traced in the model against the loops.
nlohmann::json to_json(const KernelReport& k, const Inventory& inv, const std::map<std::size_t, OpCost>& costs);
std::string to_table(const KernelReport& k, const Inventory& inv, const std::map<std::size_t, OpCost>& costs);

}  // namespace opcost
