// The duty-cycle method (issue 25) on a synthetic power trace: a simulated GPU runs bursts of an
// operator of known energy per call between gaps at a known power, a simulated energy counter
// integrates it and updates every 0.1 s, and the loop's completion timeline is recorded as
// Runner::measure_energy_duty_cycled records it. The fit must give back the planted energy.
// Also: the decision to run the loop, its shape, and the over-the-power-limit flag.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/energy/duty_cycle.h"
#include "core/energy/nvml.h"
#include "core/energy/windows.h"
#include "core/measurement.h"
#include "core/predict/prediction.h"

using namespace opcost;

namespace {

struct Segment {
  double t0, t1, watts;
};

// A GPU's power as constant segments, and the energy counter over it.
class PowerTrace {
 public:
  void add(double seconds, double watts) {
    const double t0 = segments_.empty() ? 0 : segments_.back().t1;
    if (seconds > 0) segments_.push_back({t0, t0 + seconds, watts});
  }
  double end_s() const { return segments_.empty() ? 0 : segments_.back().t1; }
  double energy_mJ_at(double t) const {
    double mJ = 0;
    for (const Segment& s : segments_) {
      if (s.t0 >= t) break;
      mJ += s.watts * (std::min(t, s.t1) - s.t0) * 1000.0;
    }
    return mJ;
  }
  // The counter updates every `period_s` (from `phase_s`) with the exact energy so far; the
  // monitor sees each update up to `poll_s` late.
  std::vector<CounterEdge> edges(double period_s, double phase_s, double poll_s, std::mt19937& rng) const {
    std::uniform_real_distribution<double> late(0, poll_s);
    std::vector<CounterEdge> out;
    for (double u = phase_s; u < end_s(); u += period_s) out.push_back({u + late(rng), 1e6 + energy_mJ_at(u)});
    return out;
  }

 private:
  std::vector<Segment> segments_;
};

struct SimulatedOp {
  double per_call_s = 100e-6;  // its GPU time per call
  double busy_W = 650;         // its power while it runs: energy per call = busy_W × per_call_s
  double busy_W_sd = 0;        // burst-to-burst spread of that power (relative)
  double mJ() const { return busy_W * per_call_s * 1000.0; }
};

struct SimulatedLoop {
  PowerTrace trace;
  std::vector<CompletionPoint> timeline;
};

// The duty-cycled loop as the runner runs it: the burst issued (launch latency, GPU idle), its
// calls back to back, the host seeing it done (sync latency), then the gap; everything not the
// op at `gap_W`.
SimulatedLoop run_duty_cycled(const SimulatedOp& op, double gap_W, double busy_share, double seconds, std::mt19937& rng,
                              double launch_s = 0, double sync_s = 0) {
  SimulatedLoop sim;
  std::normal_distribution<double> spread(1.0, op.busy_W_sd);
  const std::size_t burst = calls_per_burst(op.per_call_s);
  double calls = 0;
  while (sim.trace.end_s() < seconds) {
    sim.timeline.push_back({sim.trace.end_s(), calls});
    sim.trace.add(launch_s, gap_W);
    const double busy_s = double(burst) * op.per_call_s;
    sim.trace.add(busy_s, op.busy_W * (op.busy_W_sd > 0 ? spread(rng) : 1.0));
    sim.trace.add(sync_s, gap_W);
    calls += double(burst);
    sim.timeline.push_back({sim.trace.end_s(), calls});
    sim.trace.add(gap_after_burst_s(busy_s, busy_share), gap_W);
  }
  return sim;
}

DutyCycleEstimate fit(const SimulatedLoop& sim, const SimulatedOp& op, double gap_W, double gap_ci_W, std::mt19937& rng,
                      double poll_s = 0) {
  const auto edges = sim.trace.edges(0.1, 0.037, poll_s, rng);
  const auto windows = make_windows(edges, sim.timeline, 0.3);
  return estimate_duty_cycled(windows, op.per_call_s, gap_W, gap_ci_W);
}

}  // namespace

TEST(DutyCycle, RecoversThePlantedEnergyPerCallExactly) {
  std::mt19937 rng(1);
  // Short, long (one call a burst) and mid-sized operators at low, mid and high busy shares.
  for (double per_call_s : {37e-6, 400e-6, 3e-3}) {
    for (double share : {0.25, 0.55, 0.85}) {
      SimulatedOp op;
      op.per_call_s = per_call_s;
      const auto sim = run_duty_cycled(op, 180, share, 2.0, rng);
      const DutyCycleEstimate est = fit(sim, op, 180, 0, rng);
      ASSERT_TRUE(est.why_none.empty()) << est.why_none;
      EXPECT_GE(est.windows, 15u);
      EXPECT_NEAR(est.per_call_mJ.mean / op.mJ(), 1.0, 1e-9) << per_call_s << " s at " << share;
      EXPECT_NEAR(est.per_call_mJ.stdev / op.mJ(), 0.0, 1e-9);
      EXPECT_NEAR(est.busy_share, share, 0.02);
      // The loop's power is the mix the busy share asked for.
      EXPECT_NEAR(est.power_W, share * op.busy_W + (1 - share) * 180, 0.02 * op.busy_W);
    }
  }
}

TEST(DutyCycle, LaunchAndSyncLatenciesAreChargedAsGaps) {
  std::mt19937 rng(2);
  SimulatedOp op;
  const auto sim = run_duty_cycled(op, 200, 0.5, 2.0, rng, 6e-6, 12e-6);
  const DutyCycleEstimate est = fit(sim, op, 200, 0, rng);
  // The timeline spreads a burst's calls over its latencies too: a window edge inside a burst
  // miscounts a fraction of one burst among ~50 a window.
  EXPECT_NEAR(est.per_call_mJ.mean / op.mJ(), 1.0, 2e-3);
  EXPECT_LT(est.busy_share, 0.5);  // the latencies lengthen the cycle
}

TEST(DutyCycle, AWrongGapPowerBiasesByItsErrorOverTheGapsAndTheIntervalCarriesIt) {
  std::mt19937 rng(3);
  SimulatedOp op;
  const double true_gap_W = 200, assumed_gap_W = 215;
  const auto sim = run_duty_cycled(op, true_gap_W, 0.5, 2.0, rng);
  const DutyCycleEstimate est = fit(sim, op, assumed_gap_W, 0, rng);
  // Each call's share of the gaps is charged 15 W too much.
  const double expected_bias_mJ = -(assumed_gap_W - true_gap_W) * est.gap_s_per_call * 1000.0;
  EXPECT_NEAR(est.per_call_mJ.mean - op.mJ(), expected_bias_mJ, 1e-6 * op.mJ());
  EXPECT_GT(std::abs(est.per_call_mJ.mean - op.mJ()) / op.mJ(), 0.01);  // a real error
  // Given as the gap power's interval, the error is inside the energy's.
  const DutyCycleEstimate with_ci = fit(sim, op, assumed_gap_W, 15, rng);
  EXPECT_NEAR(with_ci.systematic_ci_mJ, 15 * with_ci.gap_s_per_call * 1000.0, 1e-9);
  EXPECT_LE(with_ci.per_call_mJ.ci95_low, op.mJ());
  EXPECT_GE(with_ci.per_call_mJ.ci95_high, op.mJ());
}

TEST(DutyCycle, TheIntervalCoversTheTruthAtItsNominalRateUnderNoise) {
  // Burst-to-burst power spread and late edges (a 0.5 ms poll): the truth falls inside the 95%
  // interval in about 95% of loops.
  SimulatedOp op;
  op.busy_W_sd = 0.05;
  int covered = 0;
  constexpr int kSeeds = 200;
  for (int seed = 0; seed < kSeeds; ++seed) {
    std::mt19937 rng(1000 + seed);
    const auto sim = run_duty_cycled(op, 190, 0.6, 1.2, rng, 5e-6, 10e-6);
    const DutyCycleEstimate est = fit(sim, op, 190, 0, rng, 0.5e-3);
    ASSERT_TRUE(est.why_none.empty());
    covered += est.per_call_mJ.ci95_low <= op.mJ() && op.mJ() <= est.per_call_mJ.ci95_high;
  }
  EXPECT_GE(covered, int(0.88 * kSeeds));
  EXPECT_LE(covered, int(0.995 * kSeeds));
}

TEST(DutyCycle, TooFewWindowsGiveNoFigureAndSayWhy) {
  std::mt19937 rng(4);
  SimulatedOp op;
  const auto sim = run_duty_cycled(op, 200, 0.5, 0.45, rng);
  const DutyCycleEstimate est = fit(sim, op, 200, 0, rng);
  EXPECT_EQ(est.windows, 0u);
  EXPECT_NE(est.why_none.find("at least 2"), std::string::npos) << est.why_none;
  EXPECT_NE(estimate_duty_cycled({{0, 0.1, 50, 10}, {0.1, 0.2, 50, 10}}, 0, 200, 0).why_none, "");
}

TEST(DutyCycle, BusyShareBringsTheLoopToTheStepsPowerWithinItsBounds) {
  // 0.5·700 + 0.5·200 = 450
  EXPECT_DOUBLE_EQ(busy_share_for(450, 200, 700), 0.5);
  EXPECT_DOUBLE_EQ(busy_share_for(210, 200, 700), kMinBusyShare);
  EXPECT_DOUBLE_EQ(busy_share_for(150, 200, 700), kMinBusyShare);
  EXPECT_DOUBLE_EQ(busy_share_for(690, 200, 700), kMaxBusyShare);
  EXPECT_DOUBLE_EQ(busy_share_for(450, 700, 700), kMaxBusyShare);  // degenerate: no division by zero
  EXPECT_EQ(calls_per_burst(100e-6), 10u);
  EXPECT_EQ(calls_per_burst(3e-3), 1u);
  EXPECT_EQ(calls_per_burst(0), 1u);
  EXPECT_EQ(calls_per_burst(1e-12), 10000u);
  EXPECT_DOUBLE_EQ(gap_after_burst_s(1e-3, 0.5), 1e-3);
  EXPECT_DOUBLE_EQ(gap_after_burst_s(1e-3, 0.8), 0.25e-3);
  EXPECT_DOUBLE_EQ(gap_after_burst_s(1e-3, 0.01), 4e-3);  // clamped to kMinBusyShare
}

TEST(DutyCycle, RunsOnlyAtTheCapForAStepBelowItWithAGapPower) {
  DutyCycleInputs in;
  in.power_limit_W = 700;
  in.loop_power_W = 640;
  in.loop_max_window_power_W = 660;
  in.step_power_W = 450;
  in.gap_power_W = 200;
  EXPECT_FALSE(plan_duty_cycle(in).at_cap);  // below 0.97 × 700 and no cap reason
  in.loop_max_window_power_W = 690;          // ≥ 679 W
  DutyCyclePlan p = plan_duty_cycle(in);
  EXPECT_TRUE(p.at_cap);
  EXPECT_TRUE(p.run);
  EXPECT_NEAR(p.busy_share, (450.0 - 200) / (640 - 200), 1e-12);
  in.loop_max_window_power_W = 600;
  in.sw_power_cap_seen = true;
  EXPECT_TRUE(plan_duty_cycle(in).run);

  DutyCycleInputs near_cap = in;
  near_cap.step_power_W = 640;  // ≥ 0.9 × 700: the step is capped too
  p = plan_duty_cycle(near_cap);
  EXPECT_TRUE(p.at_cap);
  EXPECT_FALSE(p.run);
  EXPECT_NE(p.why_not.find("near the 700 W limit"), std::string::npos) << p.why_not;
  DutyCycleInputs no_gap = in;
  no_gap.gap_power_W.reset();
  EXPECT_NE(plan_duty_cycle(no_gap).why_not.find("gap probe"), std::string::npos);
  DutyCycleInputs alone = in;
  alone.step_power_W.reset();
  EXPECT_NE(plan_duty_cycle(alone).why_not.find("on its own"), std::string::npos);
  DutyCycleInputs no_limit = in;
  no_limit.power_limit_W.reset();
  EXPECT_FALSE(plan_duty_cycle(no_limit).run);
}

namespace {

Measurement row(double per_call_mJ, double gpu_us, double loop_wall_us) {
  Measurement m;
  m.time.per_call_us.n = 20;
  m.time.per_call_us.mean = m.time.per_call_us.median = gpu_us;
  m.energy.available = true;
  m.energy.per_call_mJ.mean = per_call_mJ;
  m.energy.wall_us_per_call = loop_wall_us;
  m.energy.idle_power_W = 70;
  m.before.power_limit_W = 700;
  return m;
}

bool has_flag(const std::vector<std::string>& flags, const std::string& prefix) {
  return std::any_of(flags.begin(), flags.end(), [&](const std::string& f) { return f.rfind(prefix, 0) == 0; });
}

}  // namespace

TEST(PowerLimitFlag, AnEnergyImplyingMoreThanTheLimitOverTheGpuTimeIsFlagged) {
  // The ViT's MLP linear of the issue: 808 W over its own time on a 700 W board.
  Measurement capped = row(80.8, 100, 100);
  EXPECT_NEAR(*implied_power_W(capped), 808, 1e-9);
  const auto flags = measurement_flags(capped);
  ASSERT_TRUE(has_flag(flags, "energy_over_power_limit:"));
  EXPECT_NE(std::find(flags.begin(), flags.end(), "energy_over_power_limit:808W>700W"), flags.end());
  EXPECT_FALSE(has_flag(measurement_flags(row(65, 100, 100)), "energy_over_power_limit"));
  // No limit known (the CPU), or no GPU time (a call timed by wall clock): nothing to compare.
  Measurement no_limit = capped;
  no_limit.before.power_limit_W.reset();
  EXPECT_FALSE(has_flag(measurement_flags(no_limit), "energy_over_power_limit"));
  Measurement waits = capped;
  waits.waits_for_device = true;
  EXPECT_FALSE(implied_power_W(waits));
}

TEST(PowerLimitFlag, ALaunchBoundLoopsGapsAreChargedAtTheGapPower) {
  // 1 µs of GPU work per 10 µs of loop at 180 W: 1.8 mJ per call. Charged at the gap power the
  // kernel draws 180 W; charged at idle power only (70 W), it would seem to draw 1170 W.
  const Measurement tiny = row(1.8, 1, 10);
  EXPECT_NEAR(*implied_power_W(tiny, 180.0), 180, 1e-9);
  EXPECT_FALSE(has_flag(measurement_flags(tiny, 180.0), "energy_over_power_limit"));
  EXPECT_NEAR(*implied_power_W(tiny), 1170, 1e-9);
  EXPECT_TRUE(has_flag(measurement_flags(tiny), "energy_over_power_limit"));
}

TEST(PowerLimitFlag, ADutyCycledEnergyIsNotCountedAsMeasuredAtTheCap) {
  Measurement m = row(70, 100, 100);
  m.flags.push_back("throttled:" + throttle::describe(throttle::kSwPowerCap));
  OpCost capped = op_cost_from(m, true);
  EXPECT_TRUE(measured_at_power_cap(capped));
  m.energy.duty_cycle_busy_share = 0.55;
  for (auto& f : measurement_flags(m)) m.flags.push_back(f);
  EXPECT_TRUE(has_flag(m.flags, "energy_at_duty_cycle:55%"));
  EXPECT_FALSE(measured_at_power_cap(op_cost_from(m, true)));
}
