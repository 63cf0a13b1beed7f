#include "core/predict/timeline.h"

#include <algorithm>

namespace opcost {

Timeline simulate(const std::vector<TimelineOp>& ops, double sync_us, double launch_latency_us, bool launch_points) {
  Timeline t;
  t.stall_us.resize(ops.size(), 0);
  double cpu = 0, gpu = 0;  // when each resource is next free
  static const std::vector<LaunchPoint> at_return = {LaunchPoint{}};
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const TimelineOp& op = ops[i];
    if (op.waits_for_device) cpu = std::max(cpu, gpu);
    const double call_start = cpu + op.call_starts_after_us;
    const double call_us = op.cpu_us - op.call_starts_after_us;
    cpu += op.cpu_us;
    if (op.gpu_us <= 0) continue;
    for (const LaunchPoint& l : op.launches.empty() || !launch_points ? at_return : op.launches) {
      const double start = std::max(gpu, call_start + l.at_fraction * call_us + launch_latency_us);
      t.stall_us[i] += start - gpu;
      gpu = start + l.gpu_share * op.gpu_us;
    }
    t.gpu_busy_us += op.gpu_us;
  }
  t.cpu_us = cpu;
  t.tail_us = std::max(0.0, cpu - gpu);
  t.wall_us = std::max(cpu, gpu) + sync_us;
  t.gap_us = t.wall_us - t.gpu_busy_us;
  return t;
}

}  // namespace opcost
