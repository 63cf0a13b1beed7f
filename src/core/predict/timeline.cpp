#include "core/predict/timeline.h"

#include <algorithm>

namespace opcost {

Timeline simulate(const std::vector<TimelineOp>& ops, double sync_us) {
  Timeline t;
  t.stall_us.resize(ops.size(), 0);
  double cpu = 0, gpu = 0;  // when each resource is next free
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].waits_for_device) cpu = std::max(cpu, gpu);
    cpu += ops[i].cpu_us;  // the launch leaves the host at the end of the call
    if (ops[i].gpu_us > 0) {
      const double start = std::max(gpu, cpu);
      t.stall_us[i] = start - gpu;
      gpu = start + ops[i].gpu_us;
      t.gpu_busy_us += ops[i].gpu_us;
    }
  }
  t.cpu_us = cpu;
  t.tail_us = std::max(0.0, cpu - gpu);
  t.wall_us = std::max(cpu, gpu) + sync_us;
  t.gap_us = t.wall_us - t.gpu_busy_us;
  return t;
}

}  // namespace opcost
