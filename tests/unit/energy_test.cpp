// Energy windowing and sampling logic, driven by synthetic data and by FakeEnergyProbe
// (fake_energy_probe.h), a simulated sensor that exists only in the tests (never reachable from
// the CLI or Python).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/energy/monitor.h"
#include "core/energy/nvml.h"
#include "core/energy/probe.h"
#include "core/energy/windows.h"
#include "core/measurement.h"
#include "fake_energy_probe.h"

using namespace opcost;
using opcost::fakes::FakeEnergyProbe;

namespace {

std::vector<CounterEdge> steady_edges(double watts, double period, double first, int n) {
  std::vector<CounterEdge> e;
  for (int k = 0; k < n; ++k) {
    const double t = first + k * period;
    e.push_back({t, watts * t * 1000.0});
  }
  return e;
}

std::vector<CompletionPoint> steady_timeline(double calls_per_s, double until) {
  std::vector<CompletionPoint> tl;
  for (double t = 0; t <= until + 1e-12; t += 0.002) tl.push_back({t, calls_per_s * t});
  return tl;
}

}  // namespace

TEST(Windows, InterpolatesTheCompletionTimeline) {
  const std::vector<CompletionPoint> tl = {{0, 0}, {1, 100}, {2, 100}, {3, 400}};
  EXPECT_DOUBLE_EQ(*calls_at(tl, 0.5), 50);
  EXPECT_DOUBLE_EQ(*calls_at(tl, 1.5), 100);
  EXPECT_DOUBLE_EQ(*calls_at(tl, 2.5), 250);
  EXPECT_FALSE(calls_at(tl, 3.5));
  EXPECT_FALSE(calls_at(tl, -0.1));
}

TEST(Windows, ConstantLoadGivesExactEnergyPerCall) {
  // 300 W, one call every 100 us: 30 mJ per call; idle 100 W: 20 mJ above idle.
  const auto edges = steady_edges(300, 0.1, 0.05, 20);
  const auto tl = steady_timeline(10000, 2.0);
  const auto w = make_windows(edges, tl, 0.3, 1);
  ASSERT_EQ(w.size(), 16u);  // edges 0.35 .. 1.95: 17 edges, 16 windows
  for (const auto& x : w) {
    EXPECT_NEAR(x.per_call_mJ(), 30.0, 1e-9);
    EXPECT_NEAR(x.power_W(), 300.0, 1e-9);
  }
  const auto est = estimate_energy(w, 100.0);
  EXPECT_NEAR(est.per_call_mJ.mean, 30.0, 1e-9);
  EXPECT_NEAR(est.above_idle_mJ, 20.0, 1e-9);
  EXPECT_NEAR(est.wall_s_per_call, 1e-4, 1e-12);
  EXPECT_NEAR(est.per_call_mJ.ci95_half_width(), 0.0, 1e-9);
}

TEST(Windows, GroupsPeriodsAndSkipsInvalidWindows) {
  auto edges = steady_edges(200, 0.1, 0.05, 12);
  edges[6].energy_mJ = edges[5].energy_mJ;  // a window that read 0 J is invalid, not zero
  edges[7].energy_mJ = edges[6].energy_mJ + 200 * 0.2 * 1000;
  const auto tl = steady_timeline(1000, 1.2);
  const auto one = make_windows(edges, tl, 0.0, 1);
  EXPECT_EQ(one.size(), 10u);  // 11 intervals, one rejected
  const auto two = make_windows(edges, tl, 0.0, 2);
  EXPECT_EQ(two.size(), 5u);
  for (const auto& w : two) EXPECT_NEAR(w.seconds(), 0.2, 1e-9);
}

TEST(Windows, NoisyEdgesGiveAnIntervalThatCoversTheTruth) {
  // Edges seen up to 0.5 ms late (poll jitter): the CI must still cover 30 mJ.
  std::vector<CounterEdge> edges;
  for (int k = 0; k < 16; ++k) {
    const double t = 0.05 + 0.1 * k;
    edges.push_back({t + 0.0005 * ((k * 7) % 5) / 4.0, 300 * t * 1000});
  }
  const auto est = estimate_energy(make_windows(edges, steady_timeline(10000, 2.0), 0.0, 1), 0);
  EXPECT_LE(est.per_call_mJ.ci95_low, 30.0);
  EXPECT_GE(est.per_call_mJ.ci95_high, 30.0);
  EXPECT_LT(est.per_call_mJ.rel_ci95(), 0.01);
}

TEST(Windows, UpdatePeriodAndAveragePower) {
  const auto edges = steady_edges(125, 0.1, 0.0, 5);
  EXPECT_NEAR(*update_period_s(edges), 0.1, 1e-12);
  EXPECT_NEAR(*average_power_W(edges), 125, 1e-9);
  EXPECT_FALSE(average_power_W({edges[0]}));
}

namespace {

// The fake counter updates exactly every `period_s`: two edges' times differ by whole periods,
// each edge within its blur (half_gap_s) of its update.
void expect_edges_bracket_their_updates(const std::vector<CounterEdge>& edges, double period_s) {
  for (std::size_t i = 1; i < edges.size(); ++i) {
    EXPECT_GT(edges[i].half_gap_s, 0) << i;
    const double dt = edges[i].t_s - edges[i - 1].t_s;
    const double periods = std::max(1.0, std::round(dt / period_s));
    EXPECT_LE(std::abs(dt - periods * period_s), edges[i].half_gap_s + edges[i - 1].half_gap_s + 1e-9) << i;
  }
}

// A counter whose every other read fails (an NVML call that errs now and then): a failed read
// must not narrow an edge's blur, or the update may lie outside it.
class CounterThatFailsEveryOtherRead : public FakeEnergyProbe {
 public:
  using FakeEnergyProbe::FakeEnergyProbe;
  std::optional<double> energy_mJ() override {
    if (++reads_ % 2 == 0) return std::nullopt;
    return FakeEnergyProbe::energy_mJ();
  }

 private:
  unsigned reads_ = 0;
};

// Energy every 0.5 ms, power every 5 ms, the device's state every 20 ms.
const MonitorConfig kQuickPolls{0.0005, 0.005, 0.02};

// The monitor polling for a quarter of a second, as beside a measuring loop.
void run_beside_a_loop(EnergyMonitor& mon) {
  mon.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  mon.stop();
}

}  // namespace

TEST(Monitor, AFailedReadDoesNotNarrowAnEdge) {
  CounterThatFailsEveryOtherRead probe(250, 0.01);
  EnergyMonitor mon(probe, kQuickPolls);
  run_beside_a_loop(mon);
  const auto edges = mon.edges();
  ASSERT_GE(edges.size(), 10u);
  expect_edges_bracket_their_updates(edges, 0.01);
}

TEST(Monitor, RecordsCounterEdgesPowerAndState) {
  FakeEnergyProbe probe(250, 0.01);
  EnergyMonitor mon(probe, kQuickPolls);
  run_beside_a_loop(mon);
  const auto edges = mon.edges();
  ASSERT_GE(edges.size(), 15u);
  EXPECT_NEAR(*update_period_s(edges), 0.01, 0.003);
  expect_edges_bracket_their_updates(edges, 0.01);
  EXPECT_NEAR(*average_power_W(edges), 250, 25);
  EXPECT_GE(mon.power_trace().size(), 20u);
  const auto st = mon.state_summary();
  EXPECT_EQ(*st.sm_clock_min_MHz, 1400u);
  EXPECT_EQ(*st.sm_clock_max_MHz, 1980u);
  EXPECT_EQ(st.throttle_reasons_seen, throttle::kSwPowerCap);
  EXPECT_EQ(*st.temperature_max_C, 63u);
  const auto temperatures = mon.temperature_trace();  // a trace's temperature track
  ASSERT_EQ(temperatures.size(), mon.sm_clock_trace().size());
  EXPECT_EQ(temperatures.front().watts, 61);
}

TEST(Monitor, IdlePowerFromAlignedEdges) {
  FakeEnergyProbe probe(80, 0.01);
  std::string why;
  auto w = measure_idle_power_W(probe, 5, 1.0, &why);
  ASSERT_TRUE(w) << why;
  EXPECT_NEAR(*w, 80, 8);
}

TEST(Monitor, IdlePowerReportsACounterThatNeverMoves) {
  FakeEnergyProbe frozen(0, 0.01);  // 0 W: the value never changes
  std::string why;
  EXPECT_FALSE(measure_idle_power_W(frozen, 3, 0.1, &why));
  EXPECT_NE(why.find("did not update"), std::string::npos) << why;
}

TEST(Hygiene, FlagsThrottlingClockChangesAndOtherProcesses) {
  DeviceState before, after;
  before.sm_clock_MHz = 1980;
  after.sm_clock_MHz = 1980;
  StateSummary quiet;
  quiet.sm_clock_min_MHz = quiet.sm_clock_max_MHz = 1980;
  quiet.throttle_reasons_seen = throttle::kGpuIdle;
  EXPECT_TRUE(hygiene_flags(before, after, quiet).empty());

  StateSummary hot = quiet;
  hot.throttle_reasons_seen |= throttle::kSwPowerCap;
  hot.sm_clock_min_MHz = 1380;
  hot.other_processes_max = 1;
  const auto f = hygiene_flags(before, after, hot);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0], "throttled:sw_power_cap");
  EXPECT_EQ(f[1], "clock_changed:1380-1980MHz");
  EXPECT_EQ(f[2], "other_processes:1");
}

TEST(Rapl, SumsPackagesAndUnwrapsTheCounter) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / "opcost_rapl_fixture";
  fs::remove_all(root);
  fs::create_directories(root / "intel-rapl:0");
  fs::create_directories(root / "intel-rapl:0:0");  // a sub-domain: not summed
  auto write = [](const fs::path& p, const std::string& v) { std::ofstream(p) << v << "\n"; };
  write(root / "intel-rapl:0/energy_uj", "900000");
  write(root / "intel-rapl:0/max_energy_range_uj", "1000000");
  write(root / "intel-rapl:0:0/energy_uj", "5");
  std::string why;
  auto probe = make_rapl_probe(&why, root.string());
  ASSERT_TRUE(probe) << why;
  EXPECT_DOUBLE_EQ(*probe->energy_mJ(), 900.0);
  write(root / "intel-rapl:0/energy_uj", "100000");  // wrapped past 1 J
  EXPECT_DOUBLE_EQ(*probe->energy_mJ(), 1100.0);
  fs::remove_all(root);
}

TEST(Rapl, MissingPowercapIsUnavailableWithAReason) {
  std::string why;
  EXPECT_FALSE(make_rapl_probe(&why, "/nonexistent/powercap"));
  EXPECT_NE(why.find("does not exist"), std::string::npos) << why;
}

TEST(Windows, CorrelatedWindowsWidenTheInterval) {
  // Per-call energy oscillating slowly (like a power-capped GPU's clock control) gives
  // correlated consecutive windows: the interval must widen to the effective count.
  std::vector<EnergyWindow> slow, iid;
  for (int k = 0; k < 30; ++k) {
    const double wobble = std::sin(2 * M_PI * k / 10.0);  // period of 10 windows
    slow.push_back({0.1 * k, 0.1 * (k + 1), 1000 * (20 + 2 * wobble), 1000});
    const double alt = (k * 7919 % 13) / 6.0 - 1.0;  // scrambled, ~uncorrelated
    iid.push_back({0.1 * k, 0.1 * (k + 1), 1000 * (20 + 2 * alt), 1000});
  }
  const auto s = estimate_energy(slow, 0), i = estimate_energy(iid, 0);
  EXPECT_GT(s.lag1_autocorrelation, 0.7);
  EXPECT_LT(s.effective_windows, 6.0);
  const double naive = student_t975(29) * s.per_call_mJ.stdev / std::sqrt(30.0);
  EXPECT_GT(s.per_call_mJ.ci95_half_width(), 2.5 * naive);
  EXPECT_LT(std::abs(i.lag1_autocorrelation), 0.4);
  EXPECT_GT(i.effective_windows, 13.0);
}

TEST(Windows, Lag1AutocorrelationOfKnownSeries) {
  EXPECT_NEAR(lag1_autocorrelation({1, -1, 1, -1, 1, -1, 1, -1}), -0.875, 1e-9);
  EXPECT_EQ(lag1_autocorrelation({1, 2}), 0.0);
  EXPECT_EQ(lag1_autocorrelation({3, 3, 3, 3}), 0.0);
}

TEST(Windows, StalledWindowsAreDropped) {
  // 1000 calls per 100 ms window, but in one the loop stalled: 600 calls and idle energy.
  std::vector<EnergyWindow> w;
  for (int k = 0; k < 8; ++k) w.push_back({0.1 * k, 0.1 * (k + 1), 20000, 1000});
  w[0] = {0.0, 0.1, 15000, 600};
  EXPECT_EQ(drop_stalled_windows(w), 1u);
  ASSERT_EQ(w.size(), 7u);
  EXPECT_NEAR(estimate_energy(w, 0).per_call_mJ.mean, 20.0, 1e-12);
  // A steady launch-bound loop (slow but even) loses nothing.
  std::vector<EnergyWindow> even(6, EnergyWindow{0, 0.1, 5000, 100});
  EXPECT_EQ(drop_stalled_windows(even), 0u);
}
