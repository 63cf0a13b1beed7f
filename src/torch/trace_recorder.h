#pragma once
// Records a run of steps with LibTorch's Kineto profiler (CUPTI on a GPU; never CUPTI loaded
// beside it): steps, layer ranges (USER_SCOPE records: built-in modules, Python's module
// hooks), outermost operator calls and the device activities they launched, as a TraceRun.
// Torch-free header.
#include <functional>

#include "core/trace/activities.h"

namespace opcost {

// torch.profiler.schedule's: per cycle, `wait` steps untraced, `warmup` steps traced and
// dropped (the profiler's start-up noise), `active` steps kept; `repeat` cycles.
struct TraceSchedule {
  int wait = 0, warmup = 1, active = 1, repeat = 1;
  int total_steps() const { return (wait + warmup + active) * repeat; }
};

struct TraceRecordOptions {
  TraceSchedule schedule;
  bool shapes = false;  // record each call's input shapes (for a table by shape; costs host time)
  bool flops = false;   // the profiler's FLOP estimates (matmuls and convolutions)
};

// Runs `step` schedule.total_steps() times; `device_kind` "cuda" records device activity too,
// and synchronises `device_index` at the end of each cycle. Throws std::invalid_argument for a
// schedule without active steps.
TraceRun record_trace(const std::function<void()>& step, const std::string& device_kind, int device_index,
                      const TraceRecordOptions& options);

}  // namespace opcost
