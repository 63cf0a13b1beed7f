#pragma once
// The two-resource timeline that predicts a model step's wall time from its operators: the
// CPU issues each operator in order (its host cost), and the GPU runs the operator's kernels
// in order (its GPU time), starting when both the launch has been issued and the previous
// kernel is done. At small batches the GPU waits for the CPU; at large ones the CPU runs ahead
// and waits at the final synchronisation. Torch-free.
#include <vector>

namespace opcost {

struct TimelineOp {
  double cpu_us = 0;  // host time to issue the call (dispatch, launch)
  double gpu_us = 0;  // device time of its kernels; 0 for views and CPU-only work
  // The call returns only when the device has finished all earlier work (aten::item, a copy
  // to the host): the host waits, then spends cpu_us.
  bool waits_for_device = false;
};

struct Timeline {
  double wall_us = 0;            // from the first issue to the end of the last kernel (or issue)
  double cpu_us = 0;             // sum of issue times
  double gpu_busy_us = 0;        // sum of kernel times
  double gap_us = 0;             // time within wall_us when the GPU runs nothing
  std::vector<double> stall_us;  // per op: GPU idle time just before its kernels, waiting for the CPU
  double tail_us = 0;            // CPU issue time after the last kernel ends (CPU-only trailing ops)
};

// `sync_us` is added at the end: the host's cost to observe the device finishing.
Timeline simulate(const std::vector<TimelineOp>& ops, double sync_us = 0);

}  // namespace opcost
