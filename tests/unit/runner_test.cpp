#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/report/report.h"
#include "core/spec/op_call.h"
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
  EXPECT_EQ(m.env.torch_version, "2.11.0");
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
  EXPECT_NE(m.energy.unavailable_reason.find("disabled"), std::string::npos);
}

namespace {
// Counts the calls it forwards to a real prepared call.
class Counting : public PreparedCall {
 public:
  explicit Counting(std::unique_ptr<PreparedCall> inner) : inner_(std::move(inner)) { info_ = inner_->info(); }
  void call() override {
    ++calls;
    inner_->call();
  }
  std::size_t calls = 0;

 private:
  std::unique_ptr<PreparedCall> inner_;
};
}  // namespace

TEST(HostPass, MeasuresEveryCallInEachRoundAndTimesThePairedStep) {
  ReplayOptions o;
  o.device = "cpu";
  Counting relu(PreparedCall::prepare(parse_call("aten::relu", {"self=f32[4096]"}), o));
  Counting add(PreparedCall::prepare(parse_call("aten::add.Tensor", {"self=f32[1]", "other=f32[1]"}), o));
  Counting step(PreparedCall::prepare(parse_call("aten::mm", {"self=f32[64,64]", "mat2=f32[64,64]"}), o));
  const HostPass pass = interleaved_host_costs({&relu, &add}, 0.05, &step);
  ASSERT_GE(pass.rounds, 3);
  ASSERT_EQ(pass.host_us.size(), 2u);
  for (double us : pass.host_us) EXPECT_GT(us, 0);
  // Batches of at least five calls per round; the step twice per round (one warm-up, one timed).
  EXPECT_GE(relu.calls, 5u * pass.rounds);
  EXPECT_GE(add.calls, 5u * pass.rounds);
  EXPECT_EQ(step.calls, 2u * pass.rounds);
  ASSERT_TRUE(pass.paired_us.has_value());
  EXPECT_GT(*pass.paired_us, 0);
  EXPECT_TRUE(interleaved_host_costs({}, 0.05).host_us.empty());
}
