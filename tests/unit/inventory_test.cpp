// Inventory grouping and its JSON document (torch-free).
#include "core/inventory/inventory.h"

#include "core/inventory/cache_reuse.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace opcost {
namespace {

Inventory sample() {
  InventoryBuilder b;
  b.add("aten::linear", "", "input=f32[2,8] weight=f32[4,8]", "fc1", {"aten::t", "aten::addmm"});
  b.add("aten::relu", "", "self=f32[2,4]", "act", {"aten::clamp_min"});
  b.add("aten::linear", "", "input=f32[2,8] weight=f32[4,8]", "fc2", {"aten::t", "aten::addmm"});
  b.add("aten::linear", "", "input=f32[2,8] weight=f32[4,8]", "fc1", {"aten::t", "aten::mm"});
  b.add("aten::mm", "", "self=f32[2,4] mat2=f32[4,8]", "fc1", {}, "backward");
  b.add("aten::mm", "", "self=f32[2,4] mat2=f32[4,8]", "fc1", {}, "forward");
  return b.take();
}

TEST(InventoryBuilder, GroupsBySignatureAndPhaseKeepingFirstUseOrder) {
  Inventory inv = sample();
  ASSERT_EQ(inv.entries.size(), 4u);
  const auto& linear = inv.entries[0];
  EXPECT_EQ(linear.count, 3u);
  EXPECT_EQ(linear.layers, (std::vector<std::string>{"fc1", "fc2"}));
  EXPECT_EQ(linear.nested.at("aten::t"), 3u);
  EXPECT_EQ(linear.nested.at("aten::addmm"), 2u);
  EXPECT_EQ(linear.nested.at("aten::mm"), 1u);
  EXPECT_EQ(inv.entries[2].phase, "backward");
  EXPECT_EQ(inv.entries[3].phase, "forward");  // same signature, other phase: its own entry
  ASSERT_EQ(inv.sequence.size(), 6u);
  EXPECT_EQ(inv.sequence[2].entry, 0u);
  EXPECT_EQ(inv.sequence[2].layer, "fc2");
  EXPECT_EQ(inv.layer_count(), 3u);
}

TEST(InventoryJson, CarriesTotalsSignaturesAndTheSequence) {
  Inventory inv = sample();
  inv.model = "toy";
  inv.autocast = "bf16";
  inv.host_calibration = {90, 120, 8};
  const auto j = to_json(inv);
  EXPECT_DOUBLE_EQ(j["host_calibration"]["scale"], 0.75);
  EXPECT_EQ(j["host_calibration"]["rounds"], 8);
  EXPECT_EQ(j["totals"]["calls"], 6);
  EXPECT_EQ(j["totals"]["unique_signatures"], 4);
  EXPECT_EQ(j["totals"]["layers"], 3);
  EXPECT_EQ(j["autocast"], "bf16");
  EXPECT_EQ(j["ops"][0]["signature"], "aten::linear input=f32[2,8] weight=f32[4,8]");
  EXPECT_EQ(j["ops"][2]["phase"], "backward");
  EXPECT_EQ(j["sequence"][1][0], 1);
  EXPECT_EQ(j["sequence"][1][1], "act");
  const std::string table = to_table(inv);
  EXPECT_NE(table.find("aten::mm (bwd)"), std::string::npos);
  EXPECT_NE(table.find("totals: 6 operator calls, 4 unique signatures, 3 layers"), std::string::npos);
}

TEST(InventoryHostTimes, MedianOverRunsOfTheSameCallsOnly) {
  Inventory inv = sample();
  const std::size_t n = inv.sequence.size();
  auto with_times = [&](double host, double gap) {
    Inventory r = sample();
    for (auto& c : r.sequence) c.host_us = host, c.host_gap_us = gap;
    return r;
  };
  for (auto& c : inv.sequence) c.host_us = 10, c.host_gap_us = 1;
  Inventory different = with_times(1000, 1000);
  different.sequence.pop_back();  // another call sequence: never mixed in
  const std::vector<Inventory> runs = {with_times(12, 2), with_times(30, 9), with_times(11, 1.5), different};
  EXPECT_EQ(take_median_host_times(inv, runs), 4u);
  ASSERT_EQ(inv.sequence.size(), n);
  for (const auto& c : inv.sequence) {
    EXPECT_DOUBLE_EQ(c.host_us, 11.5);      // median of 10, 12, 30, 11
    EXPECT_DOUBLE_EQ(c.host_gap_us, 1.75);  // of 1, 2, 9, 1.5
  }
  // Timing runs only: the run that recorded inputs (and paid for it) is left out; runs
  // observed without inputs have the same ops without arguments, and still match.
  Inventory with_inputs = sample();
  for (auto& c : with_inputs.sequence) c.host_us = 100, c.host_gap_us = 100;
  Inventory no_args = with_times(12, 2);
  for (auto& e : no_args.entries) e.args.clear();
  EXPECT_EQ(take_median_host_times(with_inputs, {no_args, with_times(14, 4), different}, true), 2u);
  for (const auto& c : with_inputs.sequence) {
    EXPECT_DOUBLE_EQ(c.host_us, 13);
    EXPECT_DOUBLE_EQ(c.host_gap_us, 3);
  }
}

TEST(InventoryHostTimes, MediansAddUpToTheMedianStep) {
  // Each run has one slow call, a different one each time: every call's median is its fast
  // time, yet no step was that fast.
  const std::size_t n = sample().sequence.size();
  ASSERT_GE(n, 3u);
  std::vector<Inventory> runs;
  for (std::size_t slow = 0; slow < n; ++slow) {
    Inventory r = sample();
    for (std::size_t i = 0; i < n; ++i) r.sequence[i].host_us = i == slow ? 30 : 10, r.sequence[i].host_gap_us = 2;
    r.host_after_last_call_us = 4;
    runs.push_back(r);
  }
  Inventory inv = sample();
  take_median_host_times(inv, runs, true);
  const double step = 12.0 * double(n) + 20 + 4;  // every run: n calls of 10 + 2, one 20 slower
  double sum = inv.host_after_last_call_us;
  for (const auto& c : inv.sequence) sum += c.host_us + c.host_gap_us;
  EXPECT_NEAR(sum, step, 1e-9);
  // The shares stay the medians': calls 10 to gaps 2 to the tail 4.
  const double scale = step / (12.0 * double(n) + 4);
  EXPECT_NEAR(inv.sequence[0].host_us, 10 * scale, 1e-9);
  EXPECT_NEAR(inv.sequence[1].host_gap_us, 2 * scale, 1e-9);
  EXPECT_NEAR(inv.host_after_last_call_us, 4 * scale, 1e-9);
}

// A step of three calls: x, w1 -> a; a -> b; b, w2 -> c (addresses and bytes made up).
std::vector<CallTouches> three_calls() {
  return {{{1, 10, 0}, {1000, 100, 1}, {2000, 50, -1}},
          {{2000, 50, 0}, {3000, 50, -1}},
          {{3000, 50, 0}, {4000, 100, 1}, {5000, 50, -1}}};
}

TEST(CacheReuse, AWeightReadOnceAStepIsColdAndAnActivationJustWrittenIsWarm) {
  const auto cold = cold_inputs(three_calls(), 120);
  ASSERT_EQ(cold.size(), 3u);
  // w1: since the step before read it, c, w2, b and a (250 bytes) passed through; x alone is
  // too small to matter (its 10 bytes are cold too, by the same rule).
  EXPECT_EQ(cold[0], (std::vector<int>{0, 1}));
  EXPECT_TRUE(cold[1].empty());               // a: its producer has just written it
  EXPECT_EQ(cold[2], (std::vector<int>{1}));  // w2 cold, b warm
}

TEST(CacheReuse, AStepThatFitsTheCacheIsWarmThroughout) {
  for (const auto& c : cold_inputs(three_calls(), 1000)) EXPECT_TRUE(c.empty());
}

TEST(CacheReuse, AListArgumentIsColdWhenMostOfItsBytesAre) {
  // call 1 reads a list (argument 0) of a (just written, 50 bytes) and w (read a step ago).
  auto touches = [](std::uint64_t w_bytes) {
    return std::vector<CallTouches>{{{2000, 50, -1}, {6000, 400, -1}}, {{2000, 50, 0}, {7000, w_bytes, 0}}};
  };
  EXPECT_EQ(cold_inputs(touches(100), 300)[1], std::vector<int>{0});
  EXPECT_TRUE(cold_inputs(touches(10), 300)[1].empty());
}

TEST(CacheReuse, ColdInputsSplitASignatureIntoEntriesWithTheirCacheMode) {
  InventoryBuilder b;
  b.add("aten::linear", "", "input=f32[2,8] weight=f32[4,8]", "fc1", {}, "forward", {"weight"});
  b.add("aten::linear", "", "input=f32[2,8] weight=f32[4,8]", "fc2", {}, "forward", {});
  b.add("aten::linear", "", "input=f32[2,8] weight=f32[4,8]", "fc3", {}, "forward", {"weight"});
  const Inventory inv = b.take();
  ASSERT_EQ(inv.entries.size(), 2u);
  EXPECT_EQ(inv.entries[0].cache_mode(), "cold:weight");
  EXPECT_EQ(inv.entries[0].count, 2u);
  EXPECT_EQ(inv.entries[1].cache_mode(), "warm");
  EXPECT_EQ(to_json(inv)["ops"][0]["cold_args"], nlohmann::json::array({"weight"}));
}

}  // namespace
}  // namespace opcost
