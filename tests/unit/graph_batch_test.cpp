// The energy loop's CUDA graphs (torch/graph_batch.h): when a loop replays one, how many calls it
// holds, the option that switches them off, and that the CPU's loops are untouched. The capture
// itself runs on the GPU (tests/gpu/run sets OPCOST_TEST_DEVICE=cuda; elsewhere those skip).
#include <gtest/gtest.h>

#include <ATen/DeviceAccelerator.h>
#include <c10/core/Event.h>
#include <c10/core/InferenceMode.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>

#include "core/energy/monitor.h"
#include "core/spec/op_call.h"
#include "fake_energy_probe.h"
#include "torch/graph_batch.h"
#include "torch/runner.h"
#include "workflow/options.h"

using namespace opcost;

namespace {

bool on_test_gpu() {
  const char* d = std::getenv("OPCOST_TEST_DEVICE");
  return d && std::string(d) == "cuda";
}

std::unique_ptr<PreparedCall> prepared(const std::string& op, std::vector<std::string> args,
                                       const std::string& device) {
  ReplayOptions o;
  o.device = device;
  return PreparedCall::prepare(parse_call(op, args), o);
}

}  // namespace

TEST(EnergyGraphs, OnlyAHostBoundCallWithGpuWorkAndGraphsOnReplaysOne) {
  // A 4 µs kernel behind 20 µs of issue: the GPU idles between kernels.
  EXPECT_TRUE(energy_loop_replays_graph(kEnergyGraphsAuto, 4, 20));
  EXPECT_FALSE(energy_loop_replays_graph(kEnergyGraphsOff, 4, 20));
  // GPU-bound (or even): two batches in flight keep the GPU busy already.
  EXPECT_FALSE(energy_loop_replays_graph(kEnergyGraphsAuto, 20, 4));
  EXPECT_FALSE(energy_loop_replays_graph(kEnergyGraphsAuto, 8, 8));
  // No GPU work to speak of (a call that launches no kernel), or times unknown.
  EXPECT_FALSE(energy_loop_replays_graph(kEnergyGraphsAuto, 0.1, 20));
  EXPECT_FALSE(energy_loop_replays_graph(kEnergyGraphsAuto, 0, 20));
  EXPECT_FALSE(energy_loop_replays_graph(kEnergyGraphsAuto, std::nan(""), 20));
  EXPECT_FALSE(energy_loop_replays_graph(kEnergyGraphsAuto, 4, std::numeric_limits<double>::infinity()));
  EXPECT_FALSE(energy_loop_replays_graph("", 4, 20));
}

TEST(EnergyGraphs, AGraphHoldsAboutTwoMillisecondsOfGpuTimeWithinItsBounds) {
  EXPECT_EQ(graph_batch_calls(4), 500u);
  EXPECT_EQ(graph_batch_calls(20), 100u);
  EXPECT_EQ(graph_batch_calls(0.5), kMaxGraphCalls);  // 4000 calls capped
  EXPECT_EQ(graph_batch_calls(5000), 1u);             // one call outlasts the batch
  EXPECT_EQ(graph_batch_calls(0), 1u);
  EXPECT_EQ(graph_batch_calls(std::nan("")), 1u);
}

TEST(EnergyGraphs, TheOptionIsAutoOrOffAndPartOfTheIdentity) {
  MeasureOptions o;
  EXPECT_EQ(o.config.energy_graphs, kEnergyGraphsAuto);
  apply_option_text(o, "energy_graphs", "off");
  EXPECT_EQ(o.config.energy_graphs, kEnergyGraphsOff);
  try {
    apply_option(o, "energy_graphs", std::string("sometimes"));
    FAIL() << "accepted 'sometimes'";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "energy_graphs (--energy-graphs): unknown energy graphs mode 'sometimes' (use auto or off)");
  }
  const MeasureOptionSpec* spec = find_measure_option("energy_graphs");
  ASSERT_NE(spec, nullptr);
  EXPECT_TRUE(spec->identity);
  EXPECT_NE(find_predict_option("energy_graphs"), nullptr);  // validate and model measure too
  PredictOptions p = predict_preset(kValidateCommand);
  apply_option(p, "energy_graphs", std::string("off"));
  EXPECT_EQ(p.op_config.energy_graphs, kEnergyGraphsOff);
}

#if !defined(OPCOST_TORCH_HAS_CUDA)
TEST(EnergyGraphs, ABuildWithoutCudaCapturesNothingAndSaysWhy) {
  auto call = prepared("aten::add.Tensor", {"self=f32[16]", "other=f32[16]"}, "cpu");
  std::string why;
  EXPECT_EQ(GraphBatch::capture(*call, 10, why), nullptr);
  EXPECT_NE(why.find("no CUDA"), std::string::npos) << why;
}
#endif

TEST(EnergyGraphs, OnTheCpuTheEnergyLoopIsTheSameWithGraphsOnOrOff) {
  // The host is the device there: nothing to capture, the loop issues its calls as before.
  auto call = prepared("aten::add.Tensor", {"self=f32[256]", "other=f32[256]"}, "cpu");
  for (std::string_view mode : {kEnergyGraphsAuto, kEnergyGraphsOff}) {
    MeasureConfig cfg;
    cfg.time.max_seconds = 0.05;
    cfg.warmup_s = 0.01;
    cfg.energy_settle_s = 0.02;
    cfg.energy_min_windows = 2;
    cfg.energy_max_s = 0.4;
    cfg.energy_graphs = std::string(mode);
    Runner runner("cpu", 0, cfg, std::make_unique<fakes::FakeEnergyProbe>(40.0, 0.01));
    const Measurement m = runner.measure(*call);
    ASSERT_TRUE(m.energy.available) << mode << ": " << m.energy.unavailable_reason;
    EXPECT_TRUE(m.energy.loop_note.empty()) << mode << ": " << m.energy.loop_note;
    EXPECT_EQ(m.method.find("graph"), std::string::npos) << mode << ": " << m.method;
    EXPECT_GT(m.energy.per_call_mJ.mean, 0) << mode;
  }
}

TEST(GraphBatchOnGpu, ReplaysTheCapturedCallsAtTheGpusPace) {
  if (!on_test_gpu()) GTEST_SKIP() << "a GPU test: OPCOST_TEST_DEVICE=cuda (tests/gpu/run)";
  c10::InferenceMode guard;
  auto call = prepared("aten::add.Tensor", {"self=f32[1024]", "other=f32[1024]"}, "cuda");
  constexpr std::size_t kCalls = 200;
  std::string why;
  auto graph = GraphBatch::capture(*call, kCalls, why);
  ASSERT_NE(graph, nullptr) << why;
  EXPECT_EQ(graph->calls(), kCalls);
  const c10::Stream stream = at::accelerator::getCurrentStream(0);
  c10::Event a(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);
  c10::Event b(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);
  gpu_sleep_s(0.01);  // the replay queued behind a sleep: the events time its kernels alone
  a.record(stream);
  const double t0 = now_s();
  graph->replay();
  const double replay_issue_s = now_s() - t0;
  b.record(stream);
  b.synchronize();
  const double gpu_us = double(a.elapsedTime(b)) * 1e3;
  // The kernels ran (an empty graph takes a few µs, not 200 kernels' worth), and one launch
  // issued them all: far less host time than 200 calls (each at least a few µs).
  EXPECT_GT(gpu_us, double(kCalls) * 0.5) << gpu_us;
  EXPECT_LT(replay_issue_s * 1e6, double(kCalls) * 2.0) << replay_issue_s;
  graph->release();
  graph.reset();
  call->call();
  synchronize_device("cuda", 0);
}

TEST(GraphBatchOnGpu, ACallThatSynchronisesIsNotCapturedAndCudaGoesOn) {
  if (!on_test_gpu()) GTEST_SKIP() << "a GPU test: OPCOST_TEST_DEVICE=cuda (tests/gpu/run)";
  c10::InferenceMode guard;
  // nonzero copies its count to the host: a synchronisation, refused during capture.
  auto syncing = prepared("aten::nonzero", {"self=f32[1024]"}, "cuda");
  std::string why;
  EXPECT_EQ(GraphBatch::capture(*syncing, 10, why), nullptr);
  EXPECT_FALSE(why.empty());
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  // The context is usable: the same call eagerly, and a capture after it, succeed.
  syncing->call();
  synchronize_device("cuda", 0);
  auto add = prepared("aten::add.Tensor", {"self=f32[1024]", "other=f32[1024]"}, "cuda");
  std::string why_not;
  auto graph = GraphBatch::capture(*add, 20, why_not);
  ASSERT_NE(graph, nullptr) << why_not;
  graph->replay();
  graph->release();
  synchronize_device("cuda", 0);
}

TEST(GraphBatchOnGpu, AHostBoundOpsEnergyLoopReplaysAGraphAndItsMethodSaysSo) {
  if (!on_test_gpu()) GTEST_SKIP() << "a GPU test: OPCOST_TEST_DEVICE=cuda (tests/gpu/run)";
  MeasureConfig cfg;
  cfg.time.max_seconds = 0.2;
  cfg.energy_settle_s = 0.15;
  cfg.energy_min_windows = 3;
  cfg.energy_max_s = 1.0;
  Runner runner("cuda", 0, cfg);
  if (!runner.energy_unavailable_reason().empty()) GTEST_SKIP() << runner.energy_unavailable_reason();
  auto call = prepared("aten::add.Tensor", {"self=f32[1024]", "other=f32[1024]"}, "cuda");
  const Measurement m = runner.measure(*call);
  ASSERT_TRUE(m.energy.available) << m.energy.unavailable_reason;
  ASSERT_LT(m.time.per_call_us.median, m.time.host_us_per_call) << "not host-bound on this GPU";
  EXPECT_NE(m.method.find("energy loop replayed from a CUDA graph of"), std::string::npos) << m.method;
  // The loop ran at the GPU's pace, not the host's (a bound in a GPU test, never in CI).
  EXPECT_LT(m.energy.wall_us_per_call, 1.3 * m.time.per_call_us.median) << m.energy.wall_us_per_call;
}
