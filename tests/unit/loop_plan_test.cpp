// Which loops measure a call with or without device work (core/measure/loop_plan.h).
#include <gtest/gtest.h>

#include "core/measure/loop_plan.h"

using namespace opcost;

TEST(LoopPlan, ACallWithoutDeviceWorkOnAGpuGetsHostTimeAndNoEnergyLoop) {
  for (DeviceWork w : {DeviceWork::kNoneView, DeviceWork::kNoneNoKernel}) {
    const LoopPlan gpu = plan_loops(w, DeviceSpec::cuda());
    EXPECT_TRUE(gpu.host_time_only) << to_string(w);
    EXPECT_FALSE(gpu.energy_loop) << to_string(w);
    const LoopPlan gpu1 = plan_loops(w, DeviceSpec::cuda(1));
    EXPECT_FALSE(gpu1.energy_loop) << to_string(w);
  }
}

TEST(LoopPlan, OnTheCpuAViewKeepsItsLoopsAndACallWithWorkKeepsThemEverywhere) {
  // The host is the device on the CPU: a view's energy is its host time at the package's power.
  const LoopPlan cpu_view = plan_loops(DeviceWork::kNoneView, DeviceSpec::cpu());
  EXPECT_FALSE(cpu_view.host_time_only);
  EXPECT_TRUE(cpu_view.energy_loop);
  for (const DeviceSpec& d : {DeviceSpec::cpu(), DeviceSpec::cuda()}) {
    const LoopPlan p = plan_loops(DeviceWork::kUnknown, d);
    EXPECT_FALSE(p.host_time_only);
    EXPECT_TRUE(p.energy_loop);
  }
}

TEST(LoopPlan, TheStoredTextReadsBackAndAnOlderOrNewerTextIsUnknown) {
  for (DeviceWork w : {DeviceWork::kUnknown, DeviceWork::kNoneView, DeviceWork::kNoneNoKernel})
    EXPECT_EQ(device_work_of(to_string(w)), w) << to_string(w);
  EXPECT_STREQ(to_string(DeviceWork::kUnknown), "");  // a row stored before schema 5 reads as this
  EXPECT_EQ(device_work_of("none-something-newer"), DeviceWork::kUnknown);
  EXPECT_STRNE(device_work_reason(DeviceWork::kNoneView), "");
  EXPECT_STRNE(device_work_reason(DeviceWork::kNoneNoKernel), "");
}
