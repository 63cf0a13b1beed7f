// Calls without device work (torch/device_work.h, core/measure/loop_plan.h) on the CPU: views
// told from calls that compute, and what the runner measures for a view there.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/spec/op_call.h"
#include "fake_energy_probe.h"
#include "torch/runner.h"

using namespace opcost;

namespace {

std::unique_ptr<PreparedCall> on_cpu(const std::string& op, const std::vector<std::string>& args) {
  ReplayOptions o;
  o.device = "cpu";
  return PreparedCall::prepare(parse_call(op, args), o);
}

struct Case {
  std::string op;
  std::vector<std::string> args;
};

}  // namespace

TEST(DeviceWork, ViewsOfTheInputsAreToldApart) {
  const std::vector<Case> views = {
      {"aten::view", {"self=f32[8,64]", "size=[512]"}},
      {"aten::permute", {"self=f32[2,3,4]", "dims=[2,0,1]"}},
      {"aten::select.int", {"self=f32[4,5]", "dim=0", "index=1"}},
      {"aten::unsqueeze", {"self=f32[4]", "dim=0"}},
      {"aten::t", {"self=f32[4,5]"}},
      {"aten::expand", {"self=f32[1,5]", "size=[4,5]"}},
      {"aten::unbind.int", {"self=f32[3,5]"}},             // a list of views
      {"aten::contiguous", {"self=f32[4,5]"}},             // already contiguous: itself
      {"aten::reshape", {"self=f32[4,5]", "shape=[20]"}},  // a view where the strides allow
  };
  Runner runner("cpu", 0, MeasureConfig{}, nullptr);
  for (const Case& c : views) {
    auto call = on_cpu(c.op, c.args);
    EXPECT_TRUE(call->returns_views_only()) << c.op;
    EXPECT_EQ(runner.device_work_of(*call), DeviceWork::kNoneView) << c.op;
  }
}

TEST(DeviceWork, CallsThatComputeOrWriteAreNotViews) {
  const std::vector<Case> work = {
      {"aten::add_.Tensor", {"self=f32[4]", "other=f32[4]"}},          // in place: returns self, computes
      {"aten::relu_", {"self=f32[4]"}},                                // likewise
      {"aten::relu", {"self=f32[4]"}},                                 // a new tensor
      {"aten::contiguous", {"self=f32[4,5]:stride[1,4]"}},             // copies a transposed input
      {"aten::reshape", {"self=f32[4,5]:stride[1,4]", "shape=[20]"}},  // cannot be a view: copies
      {"aten::clone", {"self=f32[4,5]"}},
  };
  Runner runner("cpu", 0, MeasureConfig{}, nullptr);
  for (const Case& c : work) {
    auto call = on_cpu(c.op, c.args);
    EXPECT_FALSE(call->returns_views_only()) << c.op;
    EXPECT_EQ(runner.device_work_of(*call), DeviceWork::kUnknown) << c.op;
  }
}

TEST(DeviceWork, OnTheCpuAViewIsRecordedButStillLoopedForEnergy) {
  // The host is the device on the CPU: the view's energy is its host time at the package's
  // power, which only a loop measures (plan_loops). A simulated counter stands in for RAPL.
  MeasureConfig cfg;
  cfg.time.max_seconds = 0.1;
  cfg.energy_settle_s = 0.05;
  cfg.energy_min_windows = 2;
  cfg.energy_max_s = 0.4;
  cfg.energy_max_capped_s = 0.4;  // the fake sensor reports the power cap throughout
  Runner runner("cpu", 0, cfg, std::make_unique<fakes::FakeEnergyProbe>(50.0, 0.01));
  auto view = on_cpu("aten::view", {"self=f32[8,64]", "size=[512]"});
  const Measurement m = runner.measure(*view);
  EXPECT_EQ(m.device_work, "none-view");
  EXPECT_GE(m.time.per_call_us.n, 10u);
  EXPECT_GT(m.time.per_call_us.median, 0.0);  // its host time: the CPU's time
  EXPECT_EQ(m.time.host_us.n, 0u);            // no separate host figure: the time is the host's
  ASSERT_TRUE(m.energy.available) << m.energy.unavailable_reason;
  EXPECT_GE(m.energy.windows, 2u);
  EXPECT_GT(m.energy.per_call_mJ.mean, 0.0);
  EXPECT_NE(m.method.find("no device work beyond the host's"), std::string::npos) << m.method;
  // On a GPU the same view would get neither the event timing nor the energy loop.
  const LoopPlan on_gpu = plan_loops(device_work_of(m.device_work), DeviceSpec::cuda());
  EXPECT_TRUE(on_gpu.host_time_only);
  EXPECT_FALSE(on_gpu.energy_loop);
  // A call that computes is recorded as such.
  auto relu = on_cpu("aten::relu", {"self=f32[64]"});
  EXPECT_EQ(runner.measure(*relu).device_work, "");
}
