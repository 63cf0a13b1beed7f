// The timeline model on hand-made sequences with known answers, and predictions from costs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/predict/op_weight.h"
#include "core/predict/prediction.h"
#include "core/predict/timeline.h"
#include "core/report/report.h"
#include "core/spec/spec_file.h"

namespace opcost {
namespace {

TEST(Timeline, GpuBoundRunsBackToBackAfterTheFirstLaunch) {
  // CPU issues each op in 5 µs, kernels take 100 µs: the GPU waits only for the first launch.
  Timeline t = simulate({{5, 100}, {5, 100}, {5, 100}}, 10);
  EXPECT_DOUBLE_EQ(t.wall_us, 5 + 300 + 10);
  EXPECT_DOUBLE_EQ(t.gpu_busy_us, 300);
  EXPECT_DOUBLE_EQ(t.gap_us, 15);
  EXPECT_EQ(t.stall_us, (std::vector<double>{5, 0, 0}));
  EXPECT_DOUBLE_EQ(t.tail_us, 0);
}

TEST(Timeline, CpuBoundStepIsTheSumOfIssueTimes) {
  // Kernels of 2 µs issued every 10 µs: the GPU idles 8 µs before each.
  Timeline t = simulate({{10, 2}, {10, 2}, {10, 2}, {10, 2}});
  EXPECT_DOUBLE_EQ(t.wall_us, 42);  // the last kernel ends 2 µs after the last issue
  EXPECT_DOUBLE_EQ(t.gpu_busy_us, 8);
  EXPECT_DOUBLE_EQ(t.gap_us, 34);
  EXPECT_EQ(t.stall_us, (std::vector<double>{10, 8, 8, 8}));
}

TEST(Timeline, MixedViewsAndKernels) {
  // A view (no kernel) between two kernels delays the second launch; a long kernel then lets
  // the CPU run ahead, and trailing CPU-only ops end after the GPU.
  Timeline t = simulate({{10, 50}, {20, 0}, {10, 5}, {5, 0}, {100, 0}});
  // op0: issue 0-10, gpu 10-60. op1: cpu 10-30. op2: cpu 30-40, gpu 60-65. op3,4: cpu 40-145.
  EXPECT_DOUBLE_EQ(t.wall_us, 145);
  EXPECT_DOUBLE_EQ(t.tail_us, 80);
  EXPECT_EQ(t.stall_us, (std::vector<double>{10, 0, 0, 0, 0}));
  EXPECT_DOUBLE_EQ(t.gap_us, 145 - 55);
  // Every microsecond of the wall is a stall, a kernel, or the tail.
  double stalls = 0;
  for (double s : t.stall_us) stalls += s;
  EXPECT_DOUBLE_EQ(stalls + t.gpu_busy_us + t.tail_us, t.wall_us);
}

TEST(Timeline, KernelsLaunchedWithinACallStartBeforeItReturns) {
  // 20 µs of the model's code, then an 80 µs call that launches 30% of its 50 µs of GPU time
  // halfway through and the rest at its end: the GPU starts at 20 + 40 = 60, not at 100.
  TimelineOp conv{100, 50, false, 20, {{0.5, 0.3}, {1.0, 0.7}}};
  Timeline t = simulate({conv});
  // 60-75, then the second launch at 100: 100-135.
  EXPECT_DOUBLE_EQ(t.wall_us, 135);
  EXPECT_DOUBLE_EQ(t.stall_us[0], 60 + 25);
  EXPECT_DOUBLE_EQ(t.gpu_busy_us, 50);
  EXPECT_DOUBLE_EQ(t.gap_us, 85);
  // Without its launch points the whole call launches as it returns.
  EXPECT_DOUBLE_EQ(simulate({conv}, 0, 0, false).wall_us, 150);
  // Launched early enough, the GPU runs the whole call's work before it returns.
  conv.launches = {{0.1, 0.5}, {0.2, 0.5}};
  t = simulate({conv});
  EXPECT_DOUBLE_EQ(t.wall_us, 100);  // GPU 28-78; the host returns at 100
  EXPECT_DOUBLE_EQ(t.tail_us, 22);
  // The points are ignored for a call without GPU time.
  conv.gpu_us = 0;
  EXPECT_DOUBLE_EQ(simulate({conv}).gpu_busy_us, 0);
}

TEST(Timeline, ALaunchLatencyDelaysKernelsOnlyWhereTheGpuWaits) {
  // Host-bound: every kernel waits for its launch, and starts 3 µs after it.
  Timeline t = simulate({{10, 2}, {10, 2}, {10, 2}}, 0, 3);
  EXPECT_DOUBLE_EQ(t.wall_us, 30 + 3 + 2);
  EXPECT_EQ(t.stall_us, (std::vector<double>{13, 8, 8}));
  // GPU-bound: only the first kernel pays it.
  t = simulate({{5, 100}, {5, 100}, {5, 100}}, 0, 3);
  EXPECT_DOUBLE_EQ(t.wall_us, 5 + 3 + 300);
}

Inventory two_layer_inventory() {
  InventoryBuilder b;
  b.add("aten::linear", "", "input=f32[8,64] weight=f32[64,64]", "fc1", {});
  b.add("aten::relu", "", "self=f32[8,64]", "act", {});
  b.add("aten::linear", "", "input=f32[8,64] weight=f32[64,64]", "fc2", {});
  b.add("aten::view", "", "self=f32[8,64] size=[512]", "", {});
  Inventory inv = b.take();
  inv.model = "toy";
  const double in_call_us[] = {5, 10, 5, 3};  // each call's host time in the model run
  for (std::size_t i = 0; i < inv.sequence.size(); ++i) inv.sequence[i].host_us = in_call_us[i];
  return inv;
}

OpCost cost(double cpu, double gpu, double energy, double loop_wall) {
  OpCost c;
  c.cpu_us = cpu;
  c.gpu_us = gpu;
  c.gpu_ci_us = gpu * 0.01;
  c.energy_mJ = energy;
  c.energy_ci_mJ = energy * 0.02;
  c.loop_wall_us = loop_wall;
  return c;
}

TEST(Prediction, EnergyIsActiveEnergyPlusGapPowerOverTheTimelinesGaps) {
  Inventory inv = two_layer_inventory();
  PredictionInputs in;
  in.gap_power_W = 100;  // 0.1 mJ per µs... per 1000 µs: 100 W × 1 µs = 0.1 mJ
  in.sync_us = 0;
  // linear: GPU-bound in its loop (no own gaps); relu: launch-bound loop (4 µs kernel, 10 µs
  // per call: 6 µs of its loop energy is gap power, 0.6 mJ, not the op's); view: host only.
  std::map<std::size_t, OpCost> costs = {
      {0, cost(5, 40, 12.0, 40)}, {1, cost(10, 4, 1.6, 10)}, {2, cost(3, 0, 0.3, 3)}};
  Prediction p = predict(inv, costs, in);
  // Timeline: fc1 cpu 0-5 gpu 5-45; relu cpu 5-15 gpu 45-49; fc2 cpu 15-20 gpu 49-89; view cpu 20-23.
  EXPECT_DOUBLE_EQ(p.time_us, 89);
  EXPECT_DOUBLE_EQ(p.timeline.gap_us, 5);
  ASSERT_TRUE(p.energy_mJ);
  // active: 12 + (1.6 - 100 W × 6 µs = 0.6) + 12 + (0.3 - 100 W × 3 µs = 0.3 -> 0) ; gaps 5 µs × 100 W.
  EXPECT_NEAR(*p.energy_mJ, 12 + 1.0 + 12 + 0 + 0.5, 1e-9);
  EXPECT_TRUE(p.complete());
  EXPECT_EQ(p.measured_calls, 4u);
  // Errors of one signature repeat over its calls (linear twice), signatures add in quadrature.
  EXPECT_NEAR(p.time_ci_us, std::sqrt(std::pow(2 * 0.4, 2) + std::pow(0.04, 2)), 1e-9);
  // Layers: fc1 owns its kernel and the GPU's wait for the first launch.
  ASSERT_FALSE(p.layers.empty());
  EXPECT_EQ(p.layers.front().name, "fc1");
  EXPECT_DOUBLE_EQ(p.layers.front().time_us, 45);
}

// What the runner stores for a call without device work on a GPU (Runner::time_host_only): GPU
// time exactly 0 from as many samples as its host time, energy 0 mJ above the gaps, no windows.
Measurement without_device_work(double host_us) {
  Measurement m;
  m.op = "aten::view";
  m.args = "self=f32[8,64] size=[512]";
  m.env.device_kind = "cuda";
  m.device_work = "none-view";
  auto& h = m.time.host_us;
  h.n = 40;
  h.mean = h.median = h.clipped_mean = h.min = host_us;
  h.ci95_low = host_us * 0.99;
  h.ci95_high = host_us * 1.01;
  m.time.per_call_us.n = h.n;
  m.time.host_us_per_call = host_us;
  m.time.stop_reason = "converged";
  m.energy.available = true;
  m.energy.source = "no-device-work";
  return m;
}

TEST(Prediction, ACallWithoutDeviceWorkCostsItsHostTimeAtGapPowerOnly) {
  // A view of 30 µs of host time before a linear: the GPU idles through the view, and the
  // timeline charges that at gap power; the view itself adds no energy of its own.
  InventoryBuilder b;
  b.add("aten::view", "", "self=f32[8,64] size=[512]", "flat", {});
  b.add("aten::linear", "", "input=f32[8,64] weight=f32[64,64]", "fc", {});
  Inventory inv = b.take();
  inv.sequence[0].host_us = 30;
  inv.sequence[1].host_us = 5;
  PredictionInputs in;
  in.gap_power_W = 100;
  // Through the stored document, as predict reads a database's row.
  const Measurement stored = from_json(to_json(without_device_work(2.5)));
  EXPECT_EQ(stored.device_work, "none-view");
  EXPECT_EQ(stored.time.host_us.n, 40u);
  const OpCost view = op_cost_from(stored, true);
  EXPECT_EQ(view.gpu_us, 0.0);
  EXPECT_EQ(view.gpu_ci_us, 0.0);
  ASSERT_TRUE(view.energy_mJ);
  EXPECT_EQ(*view.energy_mJ, 0.0);
  EXPECT_EQ(view.device_work, "none-view");
  EXPECT_TRUE(view.flags.empty());
  EXPECT_EQ(active_energy_mJ(view, in), 0.0);
  const std::map<std::size_t, OpCost> costs = {{0, view}, {1, cost(5, 40, 12.0, 40)}};
  const Prediction p = predict(inv, costs, in);
  // view cpu 0-30 (no GPU work); linear cpu 30-35, GPU 35-75.
  EXPECT_DOUBLE_EQ(p.time_us, 75);
  EXPECT_DOUBLE_EQ(p.timeline.gap_us, 35);
  ASSERT_TRUE(p.energy_mJ) << p.energy_why;
  EXPECT_NEAR(p.gap_energy_mJ, 100 * 35e-3, 1e-12);
  EXPECT_NEAR(*p.energy_mJ, 12 + 100 * 35e-3, 1e-12);
  EXPECT_TRUE(p.complete());
  for (const PredictedRow& r : p.ops)
    if (r.name.starts_with("aten::view")) {
      ASSERT_TRUE(r.energy_mJ);
      EXPECT_EQ(*r.energy_mJ, 0.0);  // its host time is in the gaps, not in its row
      EXPECT_EQ(r.gpu_us, 0.0);
    }
  // Its interval adds nothing: the linear's alone.
  EXPECT_NEAR(*p.energy_ci_mJ, 12.0 * 0.02, 1e-12);
}

TEST(Timeline, AnOpThatWaitsForTheDeviceStartsWhenTheGpuIsDone) {
  // op0's kernel runs 5-105; op1 (aten::item) waits for it, then takes 3 µs; op2 launches at 113.
  Timeline t = simulate({{5, 100}, {3, 0, true}, {5, 10}});
  EXPECT_DOUBLE_EQ(t.wall_us, 123);
  EXPECT_EQ(t.stall_us, (std::vector<double>{5, 0, 8}));
}

TEST(Prediction, TheModelsHostTimesLessTheObserversShareDelayLaunches) {
  Inventory inv = two_layer_inventory();
  const double gaps[] = {0.5, 4, 5, 501};  // the last: a long stretch of Python before the view
  for (std::size_t i = 0; i < inv.sequence.size(); ++i) inv.sequence[i].host_gap_us = gaps[i];
  inv.host_after_last_call_us = 10;
  inv.host_calibration = {50, 100, 4};  // the observed step took twice the plain one
  const ModelHostTimes host = model_host_times(inv);
  EXPECT_EQ(host.before_us, (std::vector<double>{0.25, 2, 2.5, 250.5}));
  EXPECT_EQ(host.in_call_us, (std::vector<double>{2.5, 5, 2.5, 1.5}));
  EXPECT_DOUBLE_EQ(host.after_last_us, 5);
  PredictionInputs in;
  in.gap_power_W = 100;
  // The stored host costs (first argument) are not used on a GPU: the model's own are.
  std::map<std::size_t, OpCost> costs = {
      {0, cost(500, 40, 12.0, 40)}, {1, cost(500, 4, 1.6, 10)}, {2, cost(500, 0, 0.3, 3)}};
  Prediction p = predict(inv, costs, in);
  // fc1 cpu 0-2.75 gpu 2.75-42.75; relu cpu -9.75 gpu 42.75-46.75; fc2 cpu -14.75 gpu 46.75-86.75;
  // view cpu -266.75; after the last call -271.75.
  EXPECT_DOUBLE_EQ(p.timeline.cpu_us, 271.75);
  EXPECT_DOUBLE_EQ(p.time_us, 271.75);
  EXPECT_DOUBLE_EQ(p.timeline.tail_us, 271.75 - 86.75);
  // relu waits for the device (aten::item-like): its stored wall time, after fc1's kernel.
  costs[1].waits_for_device = true;
  p = predict(inv, costs, in);
  // relu waits until 42.75, then its 2 µs before and 4 µs of wall time: 48.75; fc2 cpu -53.75.
  EXPECT_DOUBLE_EQ(p.timeline.gpu_busy_us, 80);
  EXPECT_DOUBLE_EQ(p.timeline.cpu_us, 42.75 + 6 + 5 + 252 + 5);
  // On the CPU, a call's time is its stored wall time; the model's code between calls stays.
  in.on_gpu = false;
  costs[1].waits_for_device = false;
  costs[1].cpu_us = 7;
  EXPECT_DOUBLE_EQ(predict(inv, costs, in).timeline.cpu_us, 0.25 + 500 + 2 + 7 + 2.5 + 500 + 250.5 + 500 + 5);
}

TEST(Prediction, LaunchPointsAndLatencyComeFromTheInputsPerEntry) {
  Inventory inv = two_layer_inventory();  // host times 5, 10, 5, 3 µs in the calls, no gaps
  PredictionInputs in;
  in.gap_power_W = 100;
  std::map<std::size_t, OpCost> costs = {{0, cost(5, 2, 1, 2)}, {1, cost(10, 2, 1, 10)}, {2, cost(3, 0, 0, 3)}};
  Prediction p = predict(inv, costs, in);
  // fc1 cpu 0-5 gpu 5-7; relu cpu 5-15 gpu 15-17; fc2 cpu 15-20 gpu 20-22; view cpu 20-23.
  EXPECT_DOUBLE_EQ(p.time_us, 23);
  EXPECT_FALSE(p.time_us_launched_at_return);
  // relu launches at the start of its call; every kernel starts 1 µs after its launch.
  in.launches_by_entry = {{}, {{0.0, 1.0}}, {}};
  in.launch_latency_us = 1;
  p = predict(inv, costs, in);
  // fc1 gpu 6-8; relu launches at 5, gpu 8-10; fc2 launches at 20, gpu 21-23; the host ends at 23.
  EXPECT_DOUBLE_EQ(p.timeline.gpu_busy_us, 6);
  EXPECT_DOUBLE_EQ(p.time_us, 23);
  EXPECT_EQ(p.timeline.stall_us, (std::vector<double>{6, 0, 11, 0, 0}));
  ASSERT_TRUE(p.time_us_launched_at_return);
  EXPECT_DOUBLE_EQ(*p.time_us_launched_at_return, 23);
  // With a longer kernel on relu the early launch shortens the step.
  costs[1].gpu_us = 20;
  p = predict(inv, costs, in);
  // relu gpu 8-28, fc2 28-30.
  EXPECT_DOUBLE_EQ(p.time_us, 30);
  EXPECT_DOUBLE_EQ(*p.time_us_launched_at_return, 37);  // relu 15-35, fc2 35-37
}

TEST(Prediction, AHostScaleStretchesTheModelsHostTimesAndIsFoundFromAStepTime) {
  Inventory inv = two_layer_inventory();  // host times 5, 10, 5, 3 µs in the calls
  for (auto& c : inv.sequence) c.host_gap_us = 20;
  PredictionInputs in;
  in.gap_power_W = 100;
  std::map<std::size_t, OpCost> costs = {{0, cost(5, 4, 1.2, 4)}, {1, cost(10, 4, 1.2, 10)}, {2, cost(3, 0, 0.3, 3)}};
  // Host-bound: 4 × 20 µs between calls + 23 µs in them; the last kernel ends before the view.
  const Prediction at_one = predict(inv, costs, in);
  EXPECT_DOUBLE_EQ(at_one.time_us, 103);
  in.host_scale = 2;
  const Prediction at_two = predict(inv, costs, in);
  EXPECT_DOUBLE_EQ(at_two.time_us, 206);
  // A slower host: longer gaps on the GPU, the same kernels, so more energy (100 W × the gap).
  EXPECT_NEAR(*at_two.energy_mJ - *at_one.energy_mJ, 0.1 * (at_two.timeline.gap_us - at_one.timeline.gap_us), 1e-9);
  EXPECT_GT(at_two.timeline.gap_us, at_one.timeline.gap_us);
  in.host_scale = 1;
  const auto scale = host_scale_matching(inv, costs, in, 154.5);
  ASSERT_TRUE(scale);
  EXPECT_NEAR(*scale, 1.5, 1e-3);
  // No host speed within [1/4, 4] gives a step of 10 µs or 1 ms.
  EXPECT_FALSE(host_scale_matching(inv, costs, in, 10));
  EXPECT_FALSE(host_scale_matching(inv, costs, in, 1000));
  // GPU-bound: the host's speed barely moves the time, so a time it cannot reach is no match.
  costs[0].gpu_us = costs[2].gpu_us = 400;
  EXPECT_FALSE(host_scale_matching(inv, costs, in, 700));
}

TEST(Prediction, CostsFromAnotherBoardAreCounted) {
  Inventory inv = two_layer_inventory();
  PredictionInputs in;
  in.gap_power_W = 100;
  std::map<std::size_t, OpCost> costs = {{0, cost(5, 4, 1.2, 4)}, {1, cost(10, 4, 1.2, 10)}, {2, cost(3, 0, 0.3, 3)}};
  costs[0].gpu_uuid = "GPU-this";
  costs[1].gpu_uuid = "GPU-other";
  EXPECT_EQ(predict(inv, costs, in).from_other_board, 0u);  // this board unknown: nothing counted
  in.gpu_uuid = "GPU-this";
  // Per signature; one whose board is not recorded is not counted.
  EXPECT_EQ(predict(inv, costs, in).from_other_board, 1u);
}

TEST(Prediction, EnergyFromOperatorsMeasuredAtThePowerCapIsCountedAndSaid) {
  Inventory inv = two_layer_inventory();
  PredictionInputs in;
  in.gap_power_W = 100;
  std::map<std::size_t, OpCost> costs = {{0, cost(5, 4, 1.2, 4)}, {1, cost(10, 4, 1.2, 10)}, {2, cost(3, 0, 0.3, 3)}};
  const Prediction none = predict(inv, costs, in);
  EXPECT_EQ(none.capped_signatures, 0u);
  EXPECT_EQ(none.capped_energy_mJ, 0.0);
  EXPECT_EQ(to_table(none, inv, nullptr).find("power cap"), std::string::npos);
  costs[1].flags = {"throttled:sw_power_cap"};
  costs[2].flags = {"throttled:hw_slowdown", "clock_changed:1300-1980MHz"};  // slowed, but not by the cap
  const Prediction p = predict(inv, costs, in);
  EXPECT_EQ(p.capped_signatures, 1u);
  // Every call of signature 1, at its active energy (its loop's energy less its own gaps).
  std::size_t calls_of_1 = 0;
  for (const auto& c : inv.sequence) calls_of_1 += c.entry == 1;
  ASSERT_GT(calls_of_1, 0u);
  EXPECT_NEAR(p.capped_energy_mJ, double(calls_of_1) * active_energy_mJ(costs[1], in), 1e-12);
  ASSERT_TRUE(p.energy_mJ);
  EXPECT_LT(p.capped_energy_mJ, *p.energy_mJ);
  EXPECT_NE(to_table(p, inv, nullptr).find("1 measured signatures ("), std::string::npos) << to_table(p, inv, nullptr);
  EXPECT_EQ(to_json(p, inv, nullptr)["capped"]["signatures"], 1);
}

// A pooled energy (its power shared with calls of its kind) is how the row was measured, not a
// warning about the device: counted and said apart from the flagged ones.
TEST(Prediction, PooledEnergiesAreCountedApartFromFlaggedOnes) {
  Inventory inv = two_layer_inventory();
  PredictionInputs in;
  in.gap_power_W = 100;
  std::map<std::size_t, OpCost> costs = {{0, cost(5, 4, 1.2, 4)}, {1, cost(10, 4, 1.2, 10)}, {2, cost(3, 0, 0.3, 3)}};
  costs[0].flags = {"energy_pooled:3"};
  costs[1].flags = {"energy_pooled:3", "throttled:hw_slowdown"};  // pooled, and slowed as well
  const Prediction p = predict(inv, costs, in);
  EXPECT_EQ(p.pooled_energy, 2u);
  ASSERT_EQ(p.flagged.size(), 1u);
  EXPECT_EQ(p.flagged[0], inv.entries[1].signature());
  const std::string table = to_table(p, inv, nullptr);
  EXPECT_NE(table.find("2 measured signatures of tiny shares have pooled energies"), std::string::npos) << table;
  EXPECT_NE(table.find("1 measured signatures were flagged"), std::string::npos) << table;
  EXPECT_EQ(to_json(p, inv, nullptr)["pooled_energy"], 2);
  EXPECT_FALSE(is_pooled_flag("throttled:sw_power_cap"));
}

TEST(Prediction, ASignaturesWarmAndColdCallsAreTwoRowsEachWithItsOwnCost) {
  InventoryBuilder b;
  b.add("aten::linear", "", "input=f32[8,64] weight=f32[64,64]", "fc1", {}, "forward", {"weight"});
  b.add("aten::linear", "", "input=f32[8,64] weight=f32[64,64]", "fc2", {}, "forward", {});
  Inventory inv = b.take();
  ASSERT_EQ(inv.entries.size(), 2u);
  PredictionInputs in;
  in.gap_power_W = 100;
  const Prediction p = predict(inv, {{0, cost(5, 40, 12.0, 40)}, {1, cost(5, 4, 1.2, 4)}}, in);
  ASSERT_EQ(p.ops.size(), 2u);
  std::map<std::string, double> gpu_us;
  for (const auto& r : p.ops) gpu_us[r.name] = r.gpu_us;
  EXPECT_EQ(gpu_us["aten::linear input=f32[8,64] weight=f32[64,64] (from memory: weight)"], 40);
  EXPECT_EQ(gpu_us["aten::linear input=f32[8,64] weight=f32[64,64]"], 4);
}

TEST(Prediction, AMissingOperatorIsReportedNeverFree) {
  Inventory inv = two_layer_inventory();
  PredictionInputs in;
  in.gap_power_W = 100;
  std::map<std::size_t, OpCost> costs = {{0, cost(5, 40, 12.0, 40)}, {2, cost(3, 0, 0.3, 3)}};
  Prediction p = predict(inv, costs, in);
  EXPECT_FALSE(p.complete());
  ASSERT_EQ(p.missing, std::vector<std::size_t>{1});
  // Its host time in the model (10 µs) counts as zero too: `model` decides by what is measured.
  EXPECT_DOUBLE_EQ(p.timeline.cpu_us, 5 + 5 + 3);
  EXPECT_EQ(p.measured_calls, 3u);
  const auto j = to_json(p, inv, nullptr);
  EXPECT_EQ(j["complete"], false);
  EXPECT_EQ(j["missing"][0]["signature"], "aten::relu self=f32[8,64]");
  const std::string table = to_table(p, inv, nullptr);
  EXPECT_NE(table.find("INCOMPLETE: 1 of 3 signatures (1 of 4 calls)"), std::string::npos) << table;
  EXPECT_NE(table.find("aten::relu self=f32[8,64] ×1"), std::string::npos);
}

TEST(Prediction, GpuTimeNoCallLaunchedMakesItIncompleteAndSaysSo) {
  // Every signature measured, but the traced step ran 900 of its 1000 µs of GPU time in kernels
  // no call launched (a CUDA graph's replay): complete no more, and the table says why.
  Inventory inv = two_layer_inventory();
  PredictionInputs in;
  in.gap_power_W = 100;
  std::map<std::size_t, OpCost> costs = {{0, cost(5, 40, 12, 40)}, {1, cost(10, 4, 1.6, 10)}, {2, cost(3, 0, 0.3, 3)}};
  Prediction p = predict(inv, costs, in);
  EXPECT_TRUE(p.complete());
  p.coverage.traced_device_us = 1000;
  p.coverage.untied_device_us = 9;  // under 1%: covered enough
  EXPECT_TRUE(p.complete());
  EXPECT_EQ(to_json(p, inv, nullptr)["uncovered"], false);
  p.coverage.untied_device_us = 900;
  EXPECT_TRUE(p.missing.empty());
  EXPECT_FALSE(p.complete());
  const auto j = to_json(p, inv, nullptr);
  EXPECT_EQ(j["complete"], false);
  EXPECT_DOUBLE_EQ(j["untied_device_us"].get<double>(), 900);
  EXPECT_EQ(j["uncovered"], true);  // the page's and a program's reason, without the threshold
  const std::string table = to_table(p, inv, nullptr);
  EXPECT_NE(table.find("INCOMPLETE: 900.0 µs of the traced step's 1000.0 µs of GPU time (90.0%)"), std::string::npos)
      << table;
  EXPECT_EQ(table.find("signatures ("), std::string::npos) << table;  // no signature is missing
}

TEST(Prediction, NoGapPowerMeansNoEnergyFigure) {
  Inventory inv = two_layer_inventory();
  PredictionInputs in;
  in.gap_power_why = "not measured";
  std::map<std::size_t, OpCost> costs = {{0, cost(5, 40, 12, 40)}, {1, cost(10, 4, 1.6, 10)}, {2, cost(3, 0, 0.3, 3)}};
  Prediction p = predict(inv, costs, in);
  EXPECT_FALSE(p.energy_mJ);
  EXPECT_NE(p.energy_why.find("not measured"), std::string::npos);
  StepMeasurement m;
  m.time_us = 100;
  m.time_ci_us = 1;
  m.energy_mJ = 30;
  const auto j = to_json(p, inv, &m);
  EXPECT_NEAR(j["error"]["time"].get<double>(), -0.11, 1e-12);
  EXPECT_TRUE(j["error"]["energy"].is_null());
}

TEST(Prediction, CostsComeFromStoredDocuments) {
  const auto doc = nlohmann::json::parse(R"({"db_id": 7, "time_us": {"mean": 20, "ci95_low": 19, "ci95_high": 21},
    "host_us_per_call": {"wall": 6, "cpu": 5}, "energy_mJ": {"per_call": 3, "ci95_low": 2.9, "ci95_high": 3.1,
    "loop_wall_us_per_call": 21}, "flags": ["throttled:sw_power_cap"], "environment": {"gpu_uuid": "GPU-1"}})");
  OpCost gpu = op_cost_from(from_json(doc), true);
  EXPECT_EQ(gpu.db_id, 7);
  EXPECT_DOUBLE_EQ(gpu.gpu_us, 20);
  EXPECT_DOUBLE_EQ(gpu.gpu_ci_us, 1);
  EXPECT_DOUBLE_EQ(gpu.cpu_us, 6);
  EXPECT_NEAR(*gpu.energy_ci_mJ, 0.1, 1e-12);
  EXPECT_EQ(gpu.flags.size(), 1u);
  EXPECT_EQ(gpu.gpu_uuid, "GPU-1");
  OpCost cpu = op_cost_from(from_json(doc), false);  // on the CPU the time is the host's
  EXPECT_DOUBLE_EQ(cpu.cpu_us, 20);
  EXPECT_DOUBLE_EQ(cpu.gpu_us, 0);
}

}  // namespace
}  // namespace opcost

namespace opcost {

TEST(ExpectedWeight, ArithmeticOutranksBytesWhereItSetsTheTime) {
  const auto call = [](const std::string& line) { return parse_call_line(line, "test"); };
  // A 3×3 convolution has fewer elements than an add of its input's size, but does far more
  // arithmetic (118 GFLOP against 154 MB moved).
  const double conv =
      expected_weight(call("aten::conv2d input=f32[32,512,28,28] weight=f32[512,512,3,3] padding=[1,1]"), 1);
  const double add = expected_weight(call("aten::add.Tensor self=f32[32,512,28,28] other=f32[32,512,28,28]"), 1);
  const double small_add = expected_weight(call("aten::add.Tensor self=f32[32,256,14,14] other=f32[32,256,14,14]"), 1);
  EXPECT_GT(conv, add);
  EXPECT_GT(add, small_add);
  // Stride shrinks the output, and so the arithmetic.
  const double strided = expected_weight(
      call("aten::conv2d input=f32[32,512,28,28] weight=f32[512,512,3,3] stride=[2,2] padding=[1,1]"), 1);
  EXPECT_NEAR(conv / strided, 4.0, 0.6);
  // Calls per step multiply; a tiny call still weighs its host floor.
  EXPECT_DOUBLE_EQ(expected_weight(call("aten::relu self=f32[8]"), 6),
                   6 * expected_weight(call("aten::relu self=f32[8]"), 1));
  EXPECT_GT(expected_weight(call("aten::relu self=f32[1]"), 1), 0);
  // 16-bit products reach their balance later: the same GEMM in bf16 weighs less than in fp32.
  EXPECT_LT(expected_weight(call("aten::mm self=bf16[4096,4096] mat2=bf16[4096,4096]"), 1),
            expected_weight(call("aten::mm self=f32[4096,4096] mat2=f32[4096,4096]"), 1));
}

// --no-energy left every operator without energy: the prediction said one of them "has no
// energy figure", as if that one were at fault. A reason all share is said as the run's.
TEST(Prediction, MissingEnergyBlamesNoOperatorWhenAllShareTheReason) {
  Inventory inv = two_layer_inventory();
  PredictionInputs in;
  in.gap_power_W = 60;
  std::map<std::size_t, OpCost> costs = {{0, cost(5, 40, 12, 40)}, {1, cost(10, 4, 1.6, 10)}, {2, cost(3, 0, 0.3, 3)}};
  for (auto& [e, c] : costs) {
    c.energy_mJ.reset();
    c.energy_why = "energy measurement switched off (--no-energy; energy=False in Python)";
  }
  const Prediction all = predict(inv, costs, in);
  EXPECT_EQ(all.energy_why,
            "no measured operator has an energy figure: energy measurement switched off (--no-energy; energy=False in "
            "Python)");
  costs[0].energy_mJ = 12;  // one has energy, two do not: counted, the first named
  EXPECT_NE(predict(inv, costs, in).energy_why.find("2 of 3 measured signatures have no energy figure"),
            std::string::npos);
  in.energy_off = true;
  EXPECT_EQ(predict(inv, costs, in).energy_why, "energy was switched off (--no-energy; energy=False in Python)");
}

// On the CPU, the interval is no "GPU time only", and the step is no "host only" prediction.
TEST(Prediction, CpuPredictionsAreWordedForTheCpu) {
  Inventory inv = two_layer_inventory();
  PredictionInputs in;
  in.on_gpu = false;
  std::map<std::size_t, OpCost> costs = {{0, cost(5, 40, 12, 40)}, {1, cost(10, 4, 1.6, 10)}, {2, cost(3, 0, 0.3, 3)}};
  const std::string table = to_table(predict(inv, costs, in), inv, nullptr);
  EXPECT_EQ(table.find("GPU time only"), std::string::npos) << table;
  EXPECT_EQ(table.find("host only"), std::string::npos) << table;
  EXPECT_NE(table.find("on the CPU the whole step is host time"), std::string::npos) << table;
}

// Nothing measured: no tables of zeros, no error against the measured step.
TEST(Prediction, NothingMeasuredPrintsNoTablesAndNoError) {
  Inventory inv = two_layer_inventory();
  const Prediction p = predict(inv, {}, PredictionInputs{});
  StepMeasurement m;
  m.time_us = 100;
  m.time_ci_us = 1;
  const std::string table = to_table(p, inv, &m);
  EXPECT_NE(table.find("predicted: nothing: no operator of the model is measured yet"), std::string::npos) << table;
  EXPECT_NE(table.find("run `opcost validate`"), std::string::npos) << table;
  EXPECT_EQ(table.find("0.0%"), std::string::npos) << table;
  EXPECT_EQ(table.find("error"), std::string::npos) << table;
  EXPECT_TRUE(to_json(p, inv, &m)["error"]["time"].is_null());
}

}  // namespace opcost
