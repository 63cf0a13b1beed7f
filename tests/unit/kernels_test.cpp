// Attributing traced kernels to the outermost operator calls, and the isolation-versus-model
// kernel check, on hand-made traces.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/predict/kernels.h"
#include "core/predict/launches.h"

namespace opcost {
namespace {

TEST(KernelsPerCall, NestedLaunchesBelongToTheOutermostCall) {
  // linear [0,100] with addmm nested [10,90] launching a GEMM and a bias kernel; a view with no
  // kernel; relu launching one; and an op on another thread (autograd's device thread) that
  // starts last.
  std::vector<TraceOp> ops = {
      {"aten::relu", 1, 150, 180, 4}, {"aten::addmm", 1, 10, 90, 2}, {"aten::linear", 1, 0, 100, 1},
      {"aten::view", 1, 110, 120, 3}, {"aten::mm", 2, 200, 260, 5},
  };
  std::vector<TraceKernel> kernels = {
      {"sm90_gemm", 2, 3000}, {"bias_add", 2, 500}, {"relu_kernel", 4, 700}, {"gemm_bwd", 5, 9000}, {"lost", 99, 1}};
  std::size_t lost = 0;
  const auto calls = kernels_per_call(ops, kernels, &lost);
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(calls[0].op, "aten::linear");
  EXPECT_EQ(calls[0].kernels, (std::vector<std::string>{"sm90_gemm", "bias_add"}));
  EXPECT_EQ(calls[0].device_ns, 3500u);
  EXPECT_EQ(calls[1].op, "aten::view");
  EXPECT_TRUE(calls[1].kernels.empty());
  EXPECT_EQ(calls[2].kernels, std::vector<std::string>{"relu_kernel"});
  EXPECT_EQ(calls[3].op, "aten::mm");
  EXPECT_EQ(calls[3].kernels, std::vector<std::string>{"gemm_bwd"});
  EXPECT_EQ(lost, 1u);
}

TEST(KernelsPerCall, AnOpAndItsOnlyNestedCallWithEqualTimestampsStayOneCall) {
  std::vector<TraceOp> ops = {{"aten::conv2d", 1, 0, 50, 7}, {"aten::convolution", 1, 0, 50, 8}};
  const auto calls = kernels_per_call(ops, {{"implicit_gemm", 8}});
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].op, "aten::conv2d");
  EXPECT_EQ(calls[0].kernels, std::vector<std::string>{"implicit_gemm"});
}

TEST(KernelsPerCall, EachKernelKeepsItsLaunchAndStartTimes) {
  std::vector<TraceOp> ops = {{"aten::linear", 1, 1000, 2000, 1}};
  std::vector<TraceKernel> kernels = {{"gemm", 1, 300, 1500, 1400}, {"bias", 1, 100, 1800, 1900}};
  const auto calls = kernels_per_call(ops, kernels);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].start_ns, 1000u);
  EXPECT_EQ(calls[0].end_ns, 2000u);
  ASSERT_EQ(calls[0].launches.size(), 2u);
  EXPECT_EQ(calls[0].launches[1].launch_ns, 1900u);
  EXPECT_EQ(calls[0].launches[1].start_ns, 1800u);
  EXPECT_EQ(calls[0].launches[1].duration_ns, 100u);
}

Inventory two_convs_and_a_view() {
  Inventory inv;
  inv.entries = {{"aten::conv2d", "", "input=f32[1,64,56,56] weight=f32[64,64,3,3]", "forward", 2},
                 {"aten::view", "", "self=f32[1,64,56,56] size=[-1]", "forward", 1}};
  inv.sequence = {{0, "a"}, {1, "a"}, {0, "b"}};
  return inv;
}

TEST(KernelCheck, AnotherAlgorithmInsideTheModelIsAMismatch) {
  Inventory inv = two_convs_and_a_view();
  const std::vector<CallKernels> model = {{"aten::conv2d", {"winograd", "bias"}, 10000},
                                          {"aten::view", {}},
                                          {"aten::conv2d", {"implicit_gemm", "bias"}, 14000}};
  // Alone, the conv picks winograd (as the first call did, not the second); launch order is not compared.
  const std::vector<std::optional<std::vector<std::string>>> alone = {std::vector<std::string>{"bias", "winograd"},
                                                                      std::vector<std::string>{}};
  KernelReport r = compare_kernels(inv, model, alone);
  EXPECT_EQ(r.mismatches, 1u);
  ASSERT_TRUE(r.entries[0]);
  EXPECT_FALSE(r.entries[0]->match);
  EXPECT_EQ(r.entries[0]->in_model, (std::vector<std::string>{"implicit_gemm", "bias"}));
  EXPECT_DOUBLE_EQ(r.entries[0]->model_device_us, 12);  // the mean of the two calls' 10 and 14 µs
  ASSERT_TRUE(r.entries[1]);
  EXPECT_TRUE(r.entries[1]->match);  // a view launches nothing either way
  EXPECT_EQ(to_json(*r.entries[0])["match"], false);

  // Same kernels in both: no mismatch; an entry that was not replayed is not checked.
  const std::vector<CallKernels> same = {
      {"aten::conv2d", {"winograd", "bias"}}, {"aten::view", {}}, {"aten::conv2d", {"winograd", "bias"}}};
  r = compare_kernels(inv, same, {alone[0], std::nullopt});
  EXPECT_EQ(r.mismatches, 0u);
  EXPECT_TRUE(r.entries[0]->match);
  EXPECT_FALSE(r.entries[1]);
}

TEST(KernelCheck, ACallMeasuredWithoutDeviceWorkThatLaunchedKernelsInTheModelIsNamed) {
  Inventory inv = two_convs_and_a_view();
  const std::vector<std::optional<std::vector<std::string>>> alone = {std::vector<std::string>{"winograd"},
                                                                      std::vector<std::string>{}};
  std::map<std::size_t, OpCost> costs;
  costs[1].device_work = "none-view";
  // The view launched nothing in the model either: nothing to say.
  const std::vector<CallKernels> quiet = {
      {"aten::conv2d", {"winograd"}, 10000}, {"aten::view", {}}, {"aten::conv2d", {"winograd"}, 10000}};
  EXPECT_TRUE(kernel_less_entries_with_kernels(compare_kernels(inv, quiet, alone), costs).empty());
  // In the model its call copied (a non-contiguous input there): named.
  const std::vector<CallKernels> copied = {{"aten::conv2d", {"winograd"}, 10000},
                                           {"aten::view", {"copy_kernel"}, 800},
                                           {"aten::conv2d", {"winograd"}, 10000}};
  const KernelReport r = compare_kernels(inv, copied, alone);
  EXPECT_EQ(kernel_less_entries_with_kernels(r, costs), (std::vector<std::size_t>{1}));
  // The same kernels under a cost with device work: the ordinary mismatch, not this.
  costs[1].device_work.clear();
  EXPECT_TRUE(kernel_less_entries_with_kernels(r, costs).empty());
}

TEST(KernelReport, ListsMismatchesAndTheLargestGpuTimeDifferences) {
  Inventory inv = two_convs_and_a_view();
  const std::vector<CallKernels> model = {
      {"aten::conv2d", {"winograd"}, 10000}, {"aten::view", {}}, {"aten::conv2d", {"implicit_gemm"}, 14000}};
  const KernelReport r =
      compare_kernels(inv, model, {std::vector<std::string>{"winograd"}, std::vector<std::string>{}});
  std::map<std::size_t, OpCost> costs;
  costs[0].gpu_us = 15;  // the loop: 15 µs per call, against 12 µs traced in the model
  costs[1].gpu_us = 0;
  const DeviceTimes t = device_times(r, inv, costs);
  EXPECT_DOUBLE_EQ(t.loops_us, 30);
  EXPECT_DOUBLE_EQ(t.model_us, 24);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows.front().entry, 0u);  // 2 calls × 3 µs: the largest effect
  const auto j = to_json(r, inv, costs);
  EXPECT_EQ(j["signatures_checked"], 2);
  ASSERT_EQ(j["mismatches"].size(), 1u);
  EXPECT_EQ(j["mismatches"][0]["signature"], inv.entries[0].signature());
  const std::string table = to_table(r, inv, costs);
  EXPECT_NE(table.find("1 of 2 signatures launch the same kernels"), std::string::npos) << table;
  EXPECT_NE(table.find("MISMATCH aten::conv2d"), std::string::npos) << table;
  EXPECT_NE(table.find("30.0 µs from their loops, 24.0 µs traced in the model (+25.0%)"), std::string::npos) << table;
}

TEST(KernelCheck, ATraceThatDoesNotLineUpWithTheInventoryIsAnError) {
  Inventory inv = two_convs_and_a_view();
  EXPECT_THROW(compare_kernels(inv, {{"aten::conv2d", {}}}, {}), std::runtime_error);
  EXPECT_THROW(compare_kernels(inv, {{"aten::conv2d", {}}, {"aten::relu", {}}, {"aten::conv2d", {}}}, {}),
               std::runtime_error);
}

TEST(LaunchProfiles, PointsAreMediansOfEachEntrysCallsAndTheLatencyIsMeasuredOnAnIdleGpu) {
  Inventory inv = two_convs_and_a_view();  // conv, view, conv
  // Times in ns. The first conv (host 0-10000) launches at 2000 and 8000: 3000 and 1000 ns of
  // kernels, the first on an idle GPU (starts 5000 after its launch). The second conv (host
  // 20000-30000) launches at 24000 and 30000 (its end). The view launches nothing.
  CallKernels conv1{"aten::conv2d", {"a", "b"}, 4000, 0, 10000, {{2000, 7000, 3000}, {8000, 12000, 1000}}};
  CallKernels view{"aten::view", {}, 0, 12000, 13000, {}};
  CallKernels conv2{"aten::conv2d", {"a", "b"}, 4000, 20000, 30000, {{30000, 35000, 1000}, {24000, 29000, 3000}}};
  LaunchProfiles l = launch_profiles(inv, {conv1, view, conv2});
  ASSERT_EQ(l.by_entry.size(), 2u);
  ASSERT_EQ(l.by_entry[0].size(), 2u);
  // Per launch in launch order: at 0.2 and 0.4 → 0.3; 0.8 and 1.0 → 0.9; shares 3/4 both times.
  EXPECT_DOUBLE_EQ(l.by_entry[0][0].at_fraction, 0.3);
  EXPECT_DOUBLE_EQ(l.by_entry[0][1].at_fraction, 0.9);
  EXPECT_DOUBLE_EQ(l.by_entry[0][0].gpu_share, 0.75);
  EXPECT_DOUBLE_EQ(l.by_entry[0][1].gpu_share, 0.25);
  EXPECT_TRUE(l.by_entry[1].empty());
  // Launches onto an idle GPU: 2000 (starts 5000 ns later) and 24000 (the GPU is free from
  // 13000; 5000 ns). The others found the GPU busy. Fewer than 5 give no latency.
  EXPECT_EQ(l.idle_launches, 2u);
  EXPECT_FALSE(l.latency_us);
  EXPECT_DOUBLE_EQ(l.timeline_latency_us(), 0);  // none: every kernel starts at its launch
  // Six calls of one kernel 1 µs long every 10 µs, starting 4, 5, 5, 6, 5 and 90 µs after their
  // launches; the one at 90 µs delays the next, which found the GPU busy and is no sample.
  Inventory many;
  many.entries = {{"aten::relu", "", "self=f32[8]", "forward", 7}};
  std::vector<CallKernels> traced;
  const uint64_t delays_ns[] = {4000, 5000, 5000, 6000, 5000, 90000, 1000};
  for (std::size_t i = 0; i < 7; ++i) {
    const uint64_t t0 = i * 10000, start = t0 + 1000 + delays_ns[i];
    many.sequence.push_back({0, "r"});
    traced.push_back({"aten::relu", {"k"}, 1000, t0, t0 + 2000, {{t0 + 1000, start, 1000}}});
  }
  traced.back().launches[0].start_ns = 60000 + 1000 + 90000 + 1000;  // queued behind the slow one
  l = launch_profiles(many, traced);
  EXPECT_EQ(l.idle_launches, 6u);
  ASSERT_TRUE(l.latency_us);
  EXPECT_DOUBLE_EQ(*l.latency_us, 5);
  EXPECT_DOUBLE_EQ(l.timeline_latency_us(), 5);  // traced only: the traced figure
  l.untraced_latency_us = 3.5;                   // the profiler-free probe's, where there is one
  EXPECT_DOUBLE_EQ(l.timeline_latency_us(), 3.5);
  EXPECT_DOUBLE_EQ(l.by_entry[0][0].at_fraction, 0.5);
  // The traced step (0 to conv2's last kernel's end at 36 µs) replayed through the timeline:
  // without a latency (2 idle launches are too few) every kernel starts at its launch, and
  // conv2's last ends at 31 µs.
  l = launch_profiles(inv, {conv1, view, conv2});
  EXPECT_DOUBLE_EQ(l.traced_step_us, 36);
  EXPECT_DOUBLE_EQ(l.traced_step_timeline_us, 31);
  // A launch the trace did not see goes to the call's return.
  conv1.launches[0].launch_ns = 0;
  l = launch_profiles(inv, {conv1, view, conv2});
  EXPECT_DOUBLE_EQ(l.by_entry[0].back().at_fraction, 1.0);  // median of 1.0 (unseen) and 1.0 (conv2's end)
  // A trace that does not line up with the inventory is an error.
  EXPECT_THROW(launch_profiles(inv, {conv1, view}), std::runtime_error);
}

}  // namespace
}  // namespace opcost
