#pragma once
// Whether a call does work on its device, and which loops measure it accordingly. A call that
// launches no kernel (a view, an empty allocation) costs the step only its host time: on a GPU
// it needs neither CUDA-event timing nor an energy loop, whose counter periods would cost far
// more than the call. Torch-free: the detection is torch/device_work.h's.
#include <string_view>

#include "core/spec/device_spec.h"

namespace opcost {

enum class DeviceWork {
  kUnknown,       // it does work, or it was not checked (a row stored before schema 5)
  kNoneView,      // it returns views of its inputs and writes to none: no kernel on any device
  kNoneNoKernel,  // on a GPU: its calls behind a sleep took no more GPU time than an empty event pair
};

// The stored text (Measurement::device_work): "", "none-view", "none-no-kernel".
const char* to_string(DeviceWork work);
// The stored text read back; an unknown text (a newer opcost's) reads as kUnknown.
DeviceWork device_work_of(std::string_view stored);
// What the method says of it ("" for kUnknown).
const char* device_work_reason(DeviceWork work);

struct LoopPlan {
  // Time the call by host wall clock only, its GPU time exactly 0.
  bool host_time_only = false;
  // Loop for energy. Without: its energy is 0 above the GPU's gap power (the gap power over its
  // host time is what the prediction's timeline charges for the host time anyway).
  bool energy_loop = true;
};

// On a GPU a call without device work gets the host time alone and no energy loop. On the CPU
// the host is the device: a view's energy is its host time at the package's power, which only
// the loops measure, so they stay.
LoopPlan plan_loops(DeviceWork work, const DeviceSpec& device);

}  // namespace opcost
