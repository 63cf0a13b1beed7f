// Attributing traced kernels to the outermost operator calls, and the isolation-versus-model
// kernel check, on hand-made traces.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/predict/kernels.h"

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

}  // namespace
}  // namespace opcost
