#pragma once
// The two-resource timeline that predicts a model step's wall time from its operators: the
// CPU issues each operator in order (its host cost), and the GPU runs the operator's kernels
// in order (its GPU time), starting when both the launch has been issued and the previous
// kernel is done. At small batches the GPU waits for the CPU; at large ones the CPU runs ahead
// and waits at the final synchronisation. Torch-free.
#include <utility>
#include <vector>

namespace opcost {

// Where a call submits part of its GPU work: at this fraction of the call's own host time
// (0: as it starts, 1: as it returns), this share of its GPU time. A cuDNN convolution's
// backward launches its first kernels early in a call of 170 µs; placing them all at its end
// delays the GPU by most of that call (core/predict/launches.h measures the points).
struct LaunchPoint {
  double at_fraction = 1;
  double gpu_share = 1;
};

struct TimelineOp {
  TimelineOp(double cpu = 0, double gpu = 0, bool waits = false, double starts_after = 0,
             std::vector<LaunchPoint> points = {})
      : cpu_us(cpu),
        gpu_us(gpu),
        waits_for_device(waits),
        call_starts_after_us(starts_after),
        launches(std::move(points)) {}
  double cpu_us = 0;  // host time to issue the call (dispatch, launch)
  double gpu_us = 0;  // device time of its kernels; 0 for views and CPU-only work
  // The call returns only when the device has finished all earlier work (aten::item, a copy
  // to the host): the host waits, then spends cpu_us.
  bool waits_for_device = false;
  // Of cpu_us, the model's own code before the call proper (launch points are placed in the rest).
  double call_starts_after_us = 0;
  // In order, shares adding to 1; empty: all of gpu_us is launched as the call returns.
  std::vector<LaunchPoint> launches;
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
// `launch_latency_us`: from a launch to its kernel's start on an idle GPU (a busy one starts it
// when the kernel ahead ends). `launch_points` false: every call launches as it returns.
Timeline simulate(const std::vector<TimelineOp>& ops, double sync_us = 0, double launch_latency_us = 0,
                  bool launch_points = true);

}  // namespace opcost
