#pragma once
// Where each call of a model submits its GPU work within its own host time, and how long an
// idle GPU takes to start a launched kernel, from one traced step. Without them the timeline
// launches a call's whole GPU time as the call returns, and a kernel starts the moment it is
// launched: a host-bound step whose calls launch early (cuDNN's backward convolutions) comes
// out too slow, and one whose GPU keeps catching up with the host too fast. Torch-free.
#include <cstddef>
#include <optional>
#include <vector>

#include "core/inventory/inventory.h"
#include "core/predict/kernels.h"
#include "core/predict/timeline.h"

namespace opcost {

struct LaunchProfiles {
  // Per inventory entry: its calls' launch points, each the median over the calls traced;
  // empty where the trace shows no launch (a view, an op on the CPU).
  std::vector<std::vector<LaunchPoint>> by_entry;
  // From a launch call's start to its kernel's start, over the kernels launched while the GPU
  // had nothing else to run (their median); nullopt with fewer than kMinIdleLaunches of them.
  std::optional<double> latency_us;
  std::size_t idle_launches = 0;
  static constexpr std::size_t kMinIdleLaunches = 5;
  // The same latency from a probe without the profiler (launch_latency_untraced_us): from a
  // launch onto an idle GPU to the host seeing its kernel done, less the kernel and an idle
  // synchronisation, as the timeline ends a step. The profiler's callbacks lengthen launch
  // calls, so the traced figure is the longer one, and on a short host-bound step the
  // difference is prediction error. Unset on the CPU or without the probe.
  std::optional<double> untraced_latency_us;
  // What the timeline uses: the untraced figure where there is one, else the traced, else none.
  double timeline_latency_us() const { return untraced_latency_us.value_or(latency_us.value_or(0)); }
  // The timeline's own check: the traced step replayed through it with the trace's host times,
  // kernel times and launch points (each call its own), against the traced step (from its
  // first call's start to its last kernel's or call's end). Where the two differ the timeline
  // misses a mechanism; where they agree and the prediction misses, its inputs do. The traced
  // kernel times leave out the GPU's few µs between back-to-back kernels, which the
  // operators' loop times include; and the profiler slows the host (tenfold on a short step),
  // so the traced step is mostly host-bound and checks the host chain more than the GPU's.
  double traced_step_us = 0, traced_step_timeline_us = 0;
};

// `traced`: one step, a CallKernels per inventory call in order (trace_kernels). Throws
// std::runtime_error when it does not line up with the inventory.
LaunchProfiles launch_profiles(const Inventory& inv, const std::vector<CallKernels>& traced);

}  // namespace opcost
