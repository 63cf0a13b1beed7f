#include "core/trace/compact_timeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/trace/table.h"

using namespace opcost;

namespace {

// One step [1000, 3000] ns on thread 1: layer "block" holding "block.fc" (aten::linear and
// aten::relu, kernels at [1100, 1140] and [1150, 1155]); aten::mm on autograd's thread (no
// layer, kernel [1160, 1180]); a copy no call launched [1181, 1190]. Power sampled three times.
TraceRun small_run() {
  TraceRun run;
  run.steps = {{"ProfilerStep#0", 1, 1000, 3000}};
  run.layers = {{"block", 1, 1000, 1100}, {"block.fc", 1, 1010, 1060}};
  run.ops = {{"aten::linear", "", 1, 1012, 1050, {11}},
             {"aten::relu", "", 1, 1052, 1058, {12}},
             {"aten::mm", "", 2, 1020, 1030, {14}}};
  run.device_activities = {{"gemm", "kernel", 0, 7, 1100, 1140, 11},
                           {"relu_kernel", "kernel", 0, 7, 1150, 1155, 12},
                           {"mm_kernel", "kernel", 0, 7, 1160, 1180, 14},
                           {"stray", "memcpy", 0, 8, 1181, 1190, 99}};
  run.counters = {{"GPU power (W)", 0, {{1200, 305.0}, {1000, 120.0}, {1100, 310.5}}}};  // out of order
  tie_activities(run);
  return run;
}

// "layer1.0" ... "layer1.7", then "layer2.0" ... "layer2.7".
std::string fmt_block(int b) { return "layer" + std::to_string(1 + b / 8) + "." + std::to_string(b % 8); }

const TimelineLane& lane_named(const CompactTimeline& t, const std::string& name) {
  for (const auto& l : t.lanes)
    if (l.name == name) return l;
  throw std::runtime_error("no lane " + name);
}

}  // namespace

TEST(CompactTimeline, LanesAreTheLongestPathCutThatNamesNewLayersAndTimesCountFromTheFirstStep) {
  const CompactTimeline t = compact_timeline(small_run());
  EXPECT_EQ(t.lane_path_parts, 2);  // block.fc; longer prefixes name the same lanes
  ASSERT_EQ(t.lanes.size(), 3u);
  const TimelineLane& fc = lane_named(t, "block.fc");
  EXPECT_EQ(fc.activities, 2u);
  EXPECT_NEAR(fc.busy_us, 0.045, 1e-9);
  ASSERT_EQ(fc.spans_us.size(), 2u);  // 10 ns apart: nothing merges while the spans fit
  EXPECT_DOUBLE_EQ(fc.spans_us[0].first, 0.1);
  EXPECT_DOUBLE_EQ(fc.spans_us[0].second, 0.14);
  EXPECT_EQ(lane_named(t, "(no layer)").activities, 1u);
  EXPECT_EQ(lane_named(t, "(not tied to a call)").activities, 1u);
  EXPECT_EQ(t.lanes.front().name, "block.fc");  // the busiest first
  EXPECT_DOUBLE_EQ(t.merge_gap_us, 0);
  ASSERT_EQ(t.steps_us.size(), 1u);
  EXPECT_DOUBLE_EQ(t.steps_us[0].first, 0);
  EXPECT_DOUBLE_EQ(t.steps_us[0].second, 2.0);
  ASSERT_EQ(t.counters.size(), 1u);
  ASSERT_EQ(t.counters[0].samples.size(), 3u);
  EXPECT_DOUBLE_EQ(t.counters[0].samples[0].first, 0);  // sorted by time
  EXPECT_DOUBLE_EQ(t.counters[0].samples[0].second, 120.0);
  EXPECT_DOUBLE_EQ(t.counters[0].samples[2].first, 0.2);

  const nlohmann::json j = to_json(t);
  EXPECT_EQ(j["origin"], "the first kept step's start");
  EXPECT_EQ(j["lanes"][0]["name"], "block.fc");
  EXPECT_DOUBLE_EQ(j["lanes"][0]["spans_us"][1][0].get<double>(), 0.15);
  EXPECT_EQ(j["counters"][0]["samples_in_trace"], 3);
  EXPECT_FALSE(j.contains("counters_unavailable"));
}

TEST(CompactTimeline, TheTableCarriesItOnlyWhereSet) {
  TraceRun run = small_run();
  TraceTable t = layer_table(run);
  EXPECT_FALSE(to_json(t).contains("timeline"));
  t.timeline = compact_timeline(run);
  EXPECT_EQ(to_json(t)["timeline"]["device_activities"], 4);
  run.counters.clear();
  run.device_activities.clear();
  run.counters_unavailable = "no NVML";
  t.timeline = compact_timeline(run);
  EXPECT_TRUE(t.timeline->empty());
  EXPECT_FALSE(to_json(t).contains("timeline"));  // nothing to draw: no key
}

// A model that opens "layer1.0" with no "layer1" range around it (opcost's built-in ResNets):
// lanes still go by the path, "layer1" and "layer2", not one lane for the root.
TEST(CompactTimeline, LanesGoByModulePathWhereNoRangeEnclosesABlock) {
  TraceRun run;
  run.steps = {{"ProfilerStep#0", 1, 0, 10'000}};
  run.layers = {{"net", 1, 0, 9000}};
  uint64_t corr = 1;
  for (int b = 0; b < 16; ++b) {
    const std::string block = fmt_block(b);
    const int64_t t0 = 100 + b * 500;
    run.layers.push_back({block, 1, t0, t0 + 400});
    run.ops.push_back({"aten::conv2d", "", 1, t0 + 10, t0 + 20, {corr}});
    run.device_activities.push_back({"k", "kernel", 0, 7, t0 + 100, t0 + 300, corr++});
  }
  tie_activities(run);
  const CompactTimeline t = compact_timeline(run);
  EXPECT_EQ(t.lane_path_parts, 1);  // 16 blocks would be over 12 lanes
  ASSERT_EQ(t.lanes.size(), 2u);
  EXPECT_EQ(lane_named(t, "layer1").activities, 8u);
  EXPECT_EQ(lane_named(t, "layer2").activities, 8u);
}

// 20 top-level layers, 50 kernels each, 1 µs apart, and a power track of 999 samples with one
// spike: every limit holds, nothing busy is lost, the spike survives the thinning.
TEST(CompactTimeline, LongRunsStayWithinTheirLimitsAndKeepWhatMatters) {
  TraceRun run;
  run.steps = {{"ProfilerStep#0", 1, 0, 2'000'000}};
  uint64_t corr = 1;
  int64_t t0 = 0;
  for (int l = 0; l < 20; ++l) {
    const int64_t start = t0;
    for (int k = 0; k < 50; ++k, ++corr) {
      run.ops.push_back({"aten::op", "", 1, t0 + 10, t0 + 20, {corr}});
      // Layer l's kernels take l + 1 hundred ns each: lanes differ in busy time.
      run.device_activities.push_back({"k", "kernel", 0, 7, t0 + 100, t0 + 100 + 100 * (l + 1), corr});
      t0 += 1000 + 100 * (l + 1);
    }
    run.layers.push_back({"l" + std::to_string(l), 1, start, t0});
  }
  CounterTrack power{"GPU power (W)", 0, {}};
  for (int i = 0; i < 999; ++i) power.samples.emplace_back(int64_t(i) * 1000, i == 517 ? 699.0 : 300.0 + i % 7);
  run.counters = {power};
  tie_activities(run);

  const CompactTimeline t = compact_timeline(run, CompactTimelineLimits{30, 5, 40});
  ASSERT_EQ(t.lanes.size(), 5u);
  EXPECT_EQ(t.lanes.front().name, "l19");
  EXPECT_EQ(t.lanes.back().name, "(other layers)");
  EXPECT_EQ(t.lanes.back().activities, 16u * 50);
  double busy = 0;
  std::size_t spans = 0;
  for (const auto& l : t.lanes) {
    busy += l.busy_us;
    spans += l.spans_us.size();
  }
  double traced = 0;
  for (const auto& a : run.device_activities) traced += double(a.duration_ns()) / 1000;
  EXPECT_NEAR(busy, traced, 1e-6);
  EXPECT_LE(spans, 40u);
  EXPECT_GT(t.merge_gap_us, 0);

  // Every activity lies inside a span of its lane.
  const TimelineLane& l19 = t.lanes.front();
  for (const auto& a : run.device_activities) {
    if (run.layers[std::size_t(run.ops[std::size_t(a.op)].layer)].name != "l19") continue;
    const double s = double(a.start_ns) / 1000, e = double(a.end_ns) / 1000;
    EXPECT_TRUE(std::any_of(l19.spans_us.begin(), l19.spans_us.end(),
                            [&](const auto& span) { return span.first <= s && e <= span.second; }));
  }
  const auto& kept = t.counters.at(0).samples;
  EXPECT_LE(kept.size(), 30u);
  EXPECT_EQ(t.counters[0].samples_in_trace, 999u);
  EXPECT_TRUE(std::is_sorted(kept.begin(), kept.end()));
  EXPECT_TRUE(std::any_of(kept.begin(), kept.end(), [](const auto& s) { return s.second == 699.0; }));
}

// One lane of 100 kernels whose gaps grow 1, 2, ..., 99 ns: the narrowest gap that keeps at most
// 50 spans merges the 50 narrowest gaps, not every gap under the next power of two.
TEST(CompactTimeline, SpansAreMergedNoMoreThanTheLimitNeeds) {
  TraceRun run;
  run.steps = {{"ProfilerStep#0", 1, 0, 1'000'000}};
  run.layers = {{"net", 1, 0, 1'000'000}};
  int64_t t0 = 0;
  for (uint64_t k = 0; k < 100; ++k) {
    run.ops.push_back({"aten::op", "", 1, int64_t(k) * 10 + 1, int64_t(k) * 10 + 2, {k + 1}});
    run.device_activities.push_back({"k", "kernel", 0, 7, t0, t0 + 1000, k + 1});
    t0 += 1000 + int64_t(k) + 1;
  }
  tie_activities(run);
  const CompactTimeline t = compact_timeline(run, CompactTimelineLimits{1000, 12, 50});
  ASSERT_EQ(t.lanes.size(), 1u);
  EXPECT_LE(t.lanes[0].spans_us.size(), 50u);
  EXPECT_GE(t.lanes[0].spans_us.size(), 48u);
  EXPECT_NEAR(t.merge_gap_us * 1000, 50, 2);  // ns: the 50th narrowest gap
}
