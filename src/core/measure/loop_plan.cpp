#include "core/measure/loop_plan.h"

namespace opcost {

const char* to_string(DeviceWork work) {
  switch (work) {
    case DeviceWork::kNoneView:
      return "none-view";
    case DeviceWork::kNoneNoKernel:
      return "none-no-kernel";
    case DeviceWork::kUnknown:
      break;
  }
  return "";
}

DeviceWork device_work_of(std::string_view stored) {
  for (DeviceWork w : {DeviceWork::kNoneView, DeviceWork::kNoneNoKernel})
    if (stored == to_string(w)) return w;
  return DeviceWork::kUnknown;
}

const char* device_work_reason(DeviceWork work) {
  switch (work) {
    case DeviceWork::kNoneView:
      return "it returns views of its inputs and writes to none";
    case DeviceWork::kNoneNoKernel:
      return "its calls behind a GPU sleep took no more GPU time than an empty event pair";
    case DeviceWork::kUnknown:
      break;
  }
  return "";
}

LoopPlan plan_loops(DeviceWork work, const DeviceSpec& device) {
  if (work == DeviceWork::kUnknown || !device.is_cuda()) return {};
  return {.host_time_only = true, .energy_loop = false};
}

}  // namespace opcost
