#pragma once
// Records a run of steps with LibTorch's Kineto profiler (CUPTI on a GPU; never CUPTI loaded
// beside it): steps, layer ranges (USER_SCOPE records: built-in modules, Python's module
// hooks), outermost operator calls and the device activities they launched, as a TraceRun.
// Torch-free header.
#include <functional>
#include <memory>
#include <string>

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
  // NVTX ranges for every step, layer, operator call and backward function while the recorder
  // lives, so that an nsys capture of the same program lines up with opcost's layers (and
  // imports to the same tables: core/trace/nsys_import.h).
  bool nvtx = false;
};

// A recording driven step by step, as torch.profiler's `prof.step()`: next_step() marks the
// start of each step (the first call, the first step), finish() ends the last one and returns
// the run. The schedule decides which steps are traced; steps past the schedule's end run
// untraced. `device_kind` "cuda" records device activity too, synchronising `device_index`
// at the end of each cycle. Calls come from one thread (step scopes are thread-local).
class TraceRecorder {
 public:
  // Throws std::invalid_argument for a schedule without active steps, naming the fix.
  TraceRecorder(std::string device_kind, int device_index, TraceRecordOptions options);
  ~TraceRecorder();  // stops a recording left open (an exception in the user's loop)
  TraceRecorder(const TraceRecorder&) = delete;
  TraceRecorder& operator=(const TraceRecorder&) = delete;

  void next_step();
  TraceRun finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int step_ = -1;  // the step running now (-1: none yet)
};

// Runs `step` schedule.total_steps() times under a TraceRecorder.
TraceRun record_trace(const std::function<void()>& step, const std::string& device_kind, int device_index,
                      const TraceRecordOptions& options);

}  // namespace opcost
