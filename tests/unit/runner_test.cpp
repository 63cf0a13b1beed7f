#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/report/report.h"
#include "core/spec/op_call.h"
#include "fake_energy_probe.h"
#include "torch/runner.h"

using namespace opcost;

TEST(Runner, MeasuresAnOpOnTheCpu) {
  ReplayOptions o;
  o.device = "cpu";
  auto call = PreparedCall::prepare(parse_call("aten::mul.Tensor", {"self=f32[64,64]", "other=f32[64,64]"}), o);
  MeasureConfig cfg;
  cfg.time.max_seconds = 0.3;
  cfg.energy_max_s = 0.5;
  Runner runner("cpu", 0, cfg);
  const Measurement m = runner.measure(*call);
  EXPECT_EQ(m.op, "aten::mul");
  EXPECT_EQ(m.args, "self=f32[64,64] other=f32[64,64]");
  EXPECT_EQ(m.env.device_kind, "cpu");
  EXPECT_EQ(m.env.torch_version, OPCOST_TEST_TORCH_VERSION);  // the torch built against, as CMake read it
  EXPECT_GE(m.time.per_call_us.n, 10u);
  EXPECT_GT(m.time.per_call_us.median, 0.0);
  EXPECT_LE(m.time.per_call_us.min, m.time.per_call_us.median);
  EXPECT_LE(m.time.per_call_us.ci95_low, m.time.per_call_us.mean);
  EXPECT_GE(m.time.calls_per_sample, 1u);
  EXPECT_GT(m.total_calls, m.time.per_call_us.n);
  EXPECT_TRUE(m.time.stop_reason == "converged" || m.time.stop_reason == "time_budget");
  if (!m.energy.available) EXPECT_FALSE(m.energy.unavailable_reason.empty());
  const auto j = to_json(m);
  for (const char* k :
       {"op", "overload", "args", "device", "time_us", "power_W", "clocks_MHz", "temperature_C", "flags", "db_id"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_TRUE(j.contains("energy_mJ") != j.contains("energy_unavailable"));
}

TEST(Runner, EnergyCanBeSwitchedOffAndSaysSo) {
  ReplayOptions o;
  o.device = "cpu";
  auto call = PreparedCall::prepare(parse_call("aten::relu", {"self=f32[128]"}), o);
  MeasureConfig cfg;
  cfg.energy = false;
  cfg.time.max_seconds = 0.1;
  Runner runner("cpu", 0, cfg);
  const Measurement m = runner.measure(*call);
  EXPECT_FALSE(m.energy.available);
  EXPECT_NE(m.energy.unavailable_reason.find("switched off"), std::string::npos);
}

TEST(Runner, ASingleSampleIsFlaggedAndHasNoInterval) {
  ReplayOptions o;
  o.device = "cpu";
  // One call takes longer than the whole timing budget: one sample, and the report says so.
  auto call = PreparedCall::prepare(parse_call("aten::mm", {"self=f32[384,384]", "mat2=f32[384,384]"}), o);
  MeasureConfig cfg;
  cfg.energy = false;
  cfg.time.max_seconds = 1e-6;
  cfg.warmup_s = 0;
  Runner runner("cpu", 0, cfg);
  const Measurement m = runner.measure(*call);
  ASSERT_EQ(m.time.per_call_us.n, 1u);
  EXPECT_NE(std::find(m.flags.begin(), m.flags.end(), "no_interval:1 sample"), m.flags.end());
  EXPECT_TRUE(to_json(m)["time_us"]["rel_ci95"].is_null());
  EXPECT_NE(to_console(m).find("no interval"), std::string::npos) << to_console(m);
}

TEST(Runner, AbandonsAMeasurementFarPastItsBudget) {
  ReplayOptions o;
  o.device = "cpu";
  auto call = PreparedCall::prepare(parse_call("aten::mm", {"self=f32[256,256]", "mat2=f32[256,256]"}), o);
  MeasureConfig cfg;
  cfg.energy = false;
  cfg.time.max_seconds = 0.5;
  cfg.time.target_rel_ci95 = 1e-9;  // never converges: runs to its budget
  cfg.abandon_factor = 0.05;        // abandoned at 5% of its budget: well before it ends
  Runner runner("cpu", 0, cfg);
  try {
    runner.measure(*call);
    FAIL() << "the measurement should have been abandoned";
  } catch (const MeasurementAbandoned& e) {
    EXPECT_NE(std::string(e.what()).find("aten::mm self=f32[256,256] mat2=f32[256,256]: abandoned"), std::string::npos)
        << e.what();
  }
}

namespace {

// A whole step's measurement (synchronous_calls) on the CPU: an energy target met at once, the
// loop's budget `energy_max_s`, the simulated counter of fake_energy_probe.h.
MeasureConfig step_config(double energy_max_s) {
  MeasureConfig cfg;
  cfg.synchronous_calls = true;
  cfg.energy_settle_s = 0.02;
  cfg.energy_min_windows = 2;
  cfg.energy_target_rel_ci95 = 1.0;
  cfg.energy_max_s = cfg.energy_max_capped_s = energy_max_s;
  return cfg;
}

Measurement measure_step(const MeasureConfig& cfg, const std::string& mm_side) {
  ReplayOptions o;
  o.device = "cpu";
  const std::string arg = fmt::format("f32[{0},{0}]", mm_side);
  auto call = PreparedCall::prepare(parse_call("aten::mm", {"self=" + arg, "mat2=" + arg}), o);
  Runner runner("cpu", 0, cfg, cfg.energy ? std::make_unique<fakes::FakeEnergyProbe>(50.0, 0.01) : nullptr);
  return runner.measure(*call);
}

}  // namespace

TEST(Runner, ACallThatSynchronisesItselfIsTimedInItsEnergyLoopUntilBothAreDone) {
  // Its wall-clock samples come from the energy loop, which runs on past the energy's own
  // budget until the timing's is spent.
  MeasureConfig cfg = step_config(0.15);
  cfg.warmup_s = 0.01;
  cfg.time.max_seconds = 0.8;
  cfg.time.target_rel_ci95 = 1e-9;  // never converges: the timing runs to its budget
  const Measurement m = measure_step(cfg, "64");
  EXPECT_NE(m.method.find("wall clock in its energy loop"), std::string::npos) << m.method;
  EXPECT_EQ(m.time.stop_reason, "time_budget");
  EXPECT_GE(m.time.per_call_us.n, 10u);
  ASSERT_TRUE(m.energy.available) << m.energy.unavailable_reason;
  // A fast counter's periods make windows of about 0.1 s: stopped at the energy's 0.15 s, the
  // loop would hold one at most (no figure); run on to the timing's 0.8 s, up to seven (the
  // H100's host kept three to seven, leaving out windows around stalled batches).
  EXPECT_GE(m.energy.windows, 2u);
  EXPECT_GE(m.energy.seconds, 0.18);
  // Without energy, the step gets a timing loop of its own.
  cfg.energy = false;
  const Measurement t = measure_step(cfg, "64");
  EXPECT_EQ(t.method, "cpu-wall-clock");
  EXPECT_EQ(t.time.stop_reason, "time_budget");
  EXPECT_FALSE(t.energy.available);
}

TEST(Runner, AStepThatSpendsItsTimingBudgetInFewSamplesKeepsThemFromItsEnergyLoop) {
  // A step longer than a tenth of its timing budget: the energy loop's few samples are its
  // time, as a timing loop's would be, not a reason to time it again in a loop of its own.
  MeasureConfig cfg = step_config(0.4);
  cfg.warmup_s = 0;
  cfg.time.max_seconds = 1e-6;  // spent by the first sample
  const Measurement m = measure_step(cfg, "256");
  EXPECT_NE(m.method.find("wall clock in its energy loop"), std::string::npos) << m.method;
  EXPECT_EQ(m.time.per_call_us.n, 1u);
  EXPECT_EQ(m.time.stop_reason, "time_budget");
  EXPECT_TRUE(m.energy.available) << m.energy.unavailable_reason;
}

// tests/gpu/run sets OPCOST_TEST_DEVICE=cuda; elsewhere these skip.
bool on_test_gpu() {
  const char* d = std::getenv("OPCOST_TEST_DEVICE");
  return d && std::string(d) == "cuda";
}

TEST(RunnerOnGpu, ShortLoopsTimeAGpuBoundOpInTheEnergySettleAndALaunchBoundOneInItsOwnLoop) {
  if (!on_test_gpu()) GTEST_SKIP() << "a GPU test: OPCOST_TEST_DEVICE=cuda (tests/gpu/run)";
  MeasureConfig cfg;
  cfg.time_in_energy_settle = true;
  cfg.time.max_seconds = 0.1;
  cfg.energy_settle_s = 0.15;
  cfg.energy_min_windows = 2;
  cfg.energy_max_s = 0.6;
  cfg.part_of = MeasureConfig::Whole{20000, 2, 0.02};  // two calls of a 20 ms step
  Runner runner("cuda", 0, cfg);
  if (!runner.energy_unavailable_reason().empty()) GTEST_SKIP() << runner.energy_unavailable_reason();
  ReplayOptions o;
  o.device = "cuda";
  auto gemm = PreparedCall::prepare(parse_call("aten::mm", {"self=bf16[2048,2048]", "mat2=bf16[2048,2048]"}), o);
  const Measurement m = runner.measure(*gemm);
  EXPECT_NE(m.method.find("back to back in the energy loop's settle"), std::string::npos) << m.method;
  EXPECT_GE(m.time.per_call_us.n, 10u);
  EXPECT_GT(m.time.per_call_us.median, 0.0);
  EXPECT_LE(m.time.per_call_us.min, m.time.per_call_us.median);
  EXPECT_GT(m.time.host_us_per_call, 0.0);
  ASSERT_TRUE(m.energy.available) << m.energy.unavailable_reason;
  EXPECT_GE(m.energy.windows, 2u);
  EXPECT_NE(m.method.find("% target ("), std::string::npos) << m.method;  // its share's target, stated
  // One element: the GPU finishes each batch before the host has issued the next one, so no
  // batch times kernels alone; the op gets the timing loop behind a sleep-kernel prefill.
  auto tiny = PreparedCall::prepare(parse_call("aten::add.Tensor", {"self=f32[1]", "other=f32[1]"}), o);
  const Measurement t = runner.measure(*tiny);
  EXPECT_NE(t.method.find("behind a sleep-kernel prefill"), std::string::npos) << t.method;
  EXPECT_GE(t.time.per_call_us.n, 10u);
}
