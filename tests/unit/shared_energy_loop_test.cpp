// Runner::measure_group on the CPU with the simulated power sensor (fake_energy_probe.h): a
// counter that steps like the H100's, only faster (the idle-power probe waits for 50 of its
// updates on the CPU). At constant power every call's energy is that power times its time in
// the loop, so the least-squares split of the shared windows must give each operator exactly
// that, whatever the mix of its windows.
#include <gtest/gtest.h>

#include <ATen/ops/zeros.h>
#include <c10/core/InferenceMode.h>
#include <torch/library.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <regex>
#include <stdexcept>
#include <thread>

#include "core/spec/op_call.h"
#include "fake_energy_probe.h"
#include "torch/group_loop.h"
#include "torch/runner.h"
#include "workflow/session.h"

using namespace opcost;
using opcost::fakes::FakeEnergyProbe;

namespace {

constexpr double kWatts = 120;

MeasureConfig quick_config() {
  MeasureConfig cfg;
  cfg.time.max_seconds = 0.05;
  cfg.time.min_seconds = 0.01;
  cfg.warmup_s = 0.01;
  cfg.energy_settle_s = 0.02;
  cfg.energy_max_s = 0.4;
  cfg.energy_max_capped_s = 0.4;  // the fake sensor reports the power cap in every state
  cfg.energy_min_windows = 2;
  return cfg;
}

std::unique_ptr<PreparedCall> cpu_call(const std::string& op, std::vector<std::string> args) {
  ReplayOptions o;
  o.device = "cpu";
  return PreparedCall::prepare(parse_call(op, args), o);
}

struct TwoCalls {
  std::unique_ptr<PreparedCall> mul = cpu_call("aten::mul.Tensor", {"self=f32[64,64]", "other=f32[64,64]"});
  std::unique_ptr<PreparedCall> mm = cpu_call("aten::mm", {"self=f32[96,96]", "mat2=f32[96,96]"});
  std::vector<PreparedCall*> both() { return {mul.get(), mm.get()}; }
};

}  // namespace

// The loop's timeline: one completion per batch after the opening one, in the order issued, with
// its operator and calls, never going back in time; on a GPU (OPCOST_TEST_DEVICE=cuda, tests/gpu/
// run) each batch's end on the GPU's clock, past the ring of batches in flight, and a graph's
// batch counted as its calls.
TEST(GroupLoop, TheTimelineHoldsEveryBatchInOrder) {
  const char* device_env = std::getenv("OPCOST_TEST_DEVICE");
  const bool cuda = device_env && std::string(device_env) == "cuda";
  c10::InferenceMode guard;
  ReplayOptions o;
  o.device = cuda ? "cuda" : "cpu";
  auto mul = PreparedCall::prepare(parse_call("aten::mul.Tensor", {"self=f32[64,64]", "other=f32[64,64]"}), o);
  auto mm = PreparedCall::prepare(parse_call("aten::mm", {"self=f32[96,96]", "mat2=f32[96,96]"}), o);
  std::unique_ptr<GraphBatch> graph;
  if (cuda) {
    std::string why;
    graph = GraphBatch::capture(*mm, 7, why);
    ASSERT_NE(graph, nullptr) << why;
  }
  const double before_s = now_s();
  GroupLoop loop(cuda, 0, 2);
  const std::size_t batches = 3 * GroupLoop::kBatchesInFlight + 1;
  std::vector<GroupCompletion> expected;
  for (std::size_t k = 0; k < batches; ++k) {
    const std::size_t op = k % 3 == 2 ? 1 : 0, calls = 1 + k % 4;
    loop.issue_batch(op == 0 ? *mul : *mm, op, calls, op == 1 ? graph.get() : nullptr);
    expected.push_back({0, op, double(op == 1 && graph ? graph->calls() : calls)});
  }
  loop.finish();
  const double after_s = now_s();
  const auto& timeline = loop.timeline();
  ASSERT_EQ(timeline.size(), batches + 1);
  EXPECT_EQ(timeline[0].calls, 0);
  double calls[2] = {0, 0};
  for (std::size_t k = 1; k < timeline.size(); ++k) {
    EXPECT_EQ(timeline[k].op, expected[k - 1].op) << k;
    EXPECT_EQ(timeline[k].calls, expected[k - 1].calls) << k;
    EXPECT_GE(timeline[k].t_s, timeline[k - 1].t_s) << k;
    calls[timeline[k].op] += timeline[k].calls;
  }
  // Its clock is the host's: every completion lies within the loop's life.
  EXPECT_GE(timeline.front().t_s, before_s);
  EXPECT_LE(timeline.back().t_s, after_s);
  EXPECT_EQ(double(loop.issued(0)), calls[0]);
  EXPECT_EQ(double(loop.issued(1)), calls[1]);
  if (graph) graph->release();
}

// A duty-cycled shared loop's timeline (CUDA only: the CPU has no power cap to duty-cycle
// against): each burst opens with a completion of the gaps' operator without calls (the GPU idle
// while the host issued it), then the burst, then its gap with at least one addition.
TEST(GroupLoop, ADutyCycledLoopAlternatesBurstsAndGaps) {
  const char* device_env = std::getenv("OPCOST_TEST_DEVICE");
  if (!device_env || std::string(device_env) != "cuda") GTEST_SKIP() << "a duty-cycled loop runs on CUDA only";
  c10::InferenceMode guard;
  ReplayOptions o;
  o.device = "cuda";
  auto mul = PreparedCall::prepare(parse_call("aten::mul.Tensor", {"self=f32[64,64]", "other=f32[64,64]"}), o);
  const at::Tensor tiny = at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(at::kCUDA, 0));
  constexpr std::size_t kGap = 1;  // the gaps' operator, after the group's one
  GroupLoop loop(true, 0, 1);
  for (std::size_t k = 0; k < 5; ++k) {
    loop.issue_burst(*mul, 0, 20, nullptr, kGap);
    loop.gap(kGap, 0.5, tiny);
  }
  loop.finish();
  const auto& timeline = loop.timeline();
  ASSERT_EQ(timeline.size(), 1 + 5 * 3u);
  for (std::size_t k = 0; k < 5; ++k) {
    const auto& start = timeline[1 + 3 * k];
    const auto& burst = timeline[2 + 3 * k];
    const auto& gap = timeline[3 + 3 * k];
    EXPECT_EQ(start.op, kGap) << k;
    EXPECT_EQ(start.calls, 0) << k;
    EXPECT_EQ(burst.op, 0u) << k;
    EXPECT_EQ(burst.calls, 20) << k;
    EXPECT_EQ(gap.op, kGap) << k;
    EXPECT_GE(gap.calls, 1) << k;
  }
  for (std::size_t k = 1; k < timeline.size(); ++k) EXPECT_GE(timeline[k].t_s, timeline[k - 1].t_s) << k;
  EXPECT_EQ(loop.issued(0), 100u);
  // The split takes it: the gaps charged, one column for the operator.
  EXPECT_NO_THROW(own_paces(timeline, 2, 0));
}

TEST(SharedEnergyLoop, SplitsASlowCountersWindowsIntoEachCallsEnergyAtThePowerItDrew) {
  TwoCalls calls;
  // 25 ms: a slow counter for the split (RAPL's is ~1 ms), fast enough for the idle probe.
  MeasureConfig config = quick_config();
  config.energy_max_s = config.energy_max_capped_s = 1.0;
  // The second call is a part of a whole: its target follows its share.
  const std::vector<std::optional<MeasureConfig::Whole>> parts = {std::nullopt, MeasureConfig::Whole{1000, 2, 0.02}};
  // Every figure must be right, split or not. Whether the split is made depends on the machine:
  // on an oversubscribed one (CI's 2 cores under ctest -j2) the monitor thread sees counter
  // updates late, those windows are left out, and too few may remain; each call then rightly
  // gets its own loop. So the split must be made in one of three tries, and right in each.
  int shared_tries = 0;
  for (int attempt = 0; attempt < 3 && shared_tries == 0; ++attempt) {
    Runner runner("cpu", 0, config, std::make_unique<FakeEnergyProbe>(kWatts, 0.025));
    const auto results = runner.measure_group(calls.both(), parts);
    ASSERT_EQ(results.size(), 2u);
    bool all_shared = true;
    for (const auto& r : results) {
      ASSERT_FALSE(r.error);
      ASSERT_TRUE(r.measurement);
      const Measurement& m = *r.measurement;
      ASSERT_TRUE(m.energy.available) << m.energy.unavailable_reason << " / " << m.method;
      const bool shared = m.energy.source == "fake-energy-counter, shared windows";
      all_shared = all_shared && shared;
      if (shared) {
        EXPECT_NE(m.method.find("shared by 2 operators"), std::string::npos) << m.method;
        // more windows than the operators it fitted (one, where the other had no time in them) and the lag
        EXPECT_GE(m.energy.windows, 3u);
      } else {
        EXPECT_NE(m.method.find("could not tell it apart"), std::string::npos) << m.method;
      }
      EXPECT_EQ(m.energy.per_call_mJ.n, m.energy.windows);
      EXPECT_GT(m.time.per_call_us.n, 0u);  // timed first, as measure() times it
      // Constant power: energy per call = power × the call's time in the loop. Within twice the
      // 95% interval, or 10%: a 95% interval misses one figure in twenty by design, and a test
      // that asserts it for every figure of three tries fails by chance (CI did, at 2.5% of a 10%
      // miss). Whether the intervals cover 95% is shared_windows_test's, over 200 seeded traces;
      // here a split far outside its own interval (half the energy at a narrow interval, as the
      // fit on calls gave under load; a swapped operator) must not pass.
      const double expected_mJ = kWatts * m.energy.wall_us_per_call * 1e-3;
      const double slack = std::max(2 * m.energy.per_call_mJ.ci95_half_width(), 0.10 * expected_mJ);
      EXPECT_NEAR(m.energy.per_call_mJ.mean, expected_mJ, slack) << m.op << " / " << m.method;
      EXPECT_NEAR(m.energy.power_W, kWatts, kWatts * slack / expected_mJ) << m.op << " / " << m.method;
      EXPECT_LE(m.energy.per_call_mJ.ci95_low, m.energy.per_call_mJ.mean);
      EXPECT_GE(m.energy.per_call_mJ.ci95_high, m.energy.per_call_mJ.mean);
    }
    EXPECT_EQ(results[0].measurement->method.find("target"), std::string::npos);
    EXPECT_NE(results[1].measurement->method.find("% of the whole's time"), std::string::npos)
        << results[1].measurement->method;
    // The bigger product takes longer and costs more per call than the small elementwise one: a
    // split that credited one's time to the other would read them the other way round. (Its time
    // against the timing loop's is no check here: on a loaded machine they differ a hundredfold.)
    EXPECT_GT(results[1].measurement->energy.wall_us_per_call, results[0].measurement->energy.wall_us_per_call);
    EXPECT_GT(results[1].measurement->energy.per_call_mJ.mean, results[0].measurement->energy.per_call_mJ.mean);
    if (all_shared) ++shared_tries;
  }
  EXPECT_EQ(shared_tries, 1) << "three shared loops in a row could not split their windows";
}

namespace {

// The fake counter, whose read takes 8 ms whenever it sees every third update (an NVML read of
// up to 17 ms on the H100): both windows at such an edge are blurred by more than
// kMaxEdgeBlurShare of their 25 ms, and two windows in three are left out.
class SlowEdgesProbe : public FakeEnergyProbe {
 public:
  using FakeEnergyProbe::FakeEnergyProbe;
  std::optional<double> energy_mJ() override {
    const auto value = FakeEnergyProbe::energy_mJ();
    if (value && *value != last_) {
      last_ = *value;
      if (++updates_ % 3 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(8));
    }
    return value;
  }

 private:
  double last_ = 0;
  long updates_ = 0;
};

}  // namespace

TEST(SharedEnergyLoop, WindowsLeftOutAreMadeUpForByALongerLoop) {
  TwoCalls calls;
  MeasureConfig config = quick_config();
  // A budget of 0.3 s: twelve windows of 25 ms, of which about four are kept, and the split of
  // two operators at a searched lag stops with seven (kSharedMinResidualDof residuals). The loop
  // goes on for those left out, up to 0.64 s (the two loops of their own it saves: a 0.02 s
  // settle and 0.15 s each): ~25 windows, ~8 kept. (With 0.44 s, CI's loaded cores kept too few
  // in three tries.)
  config.energy_max_s = config.energy_max_capped_s = 0.15;
  // Up to six tries (~1 s each): under a full `ctest -j2` (the python and corpus suites beside it)
  // three in a row once fell back here (2026-11-27), where other full runs passed. A larger budget would let
  // the split finish inside it, and the test would no longer see the loop extended.
  int shared_tries = 0;
  for (int attempt = 0; attempt < 6 && shared_tries == 0; ++attempt) {
    Runner runner("cpu", 0, config, std::make_unique<SlowEdgesProbe>(kWatts, 0.025));
    const auto results = runner.measure_group(calls.both(), {std::nullopt, std::nullopt});
    ASSERT_EQ(results.size(), 2u);
    // A try where either operator fell back to a loop of its own (on a loaded machine: still too
    // few windows, or one operator had no calls inside those kept) is not this test's; their own
    // loops of 0.15 s may then give no figure at all.
    bool all_shared = true;
    for (const auto& r : results) {
      ASSERT_TRUE(r.measurement);
      const EnergyResult& e = r.measurement->energy;
      all_shared = all_shared && e.available && e.source == "fake-energy-counter, shared windows";
    }
    if (!all_shared) continue;
    ++shared_tries;
    for (const auto& r : results) {
      const Measurement& m = *r.measurement;
      EXPECT_NE(m.method.find("left out: the counter's update was seen late"), std::string::npos) << m.method;
      EXPECT_GE(m.energy.windows, 4u);  // more than two operators and the searched lag
      // The windows it used and left out span more than its budget's 12 counter periods.
      auto count = [&](const std::string& pattern) {
        std::smatch match;
        return std::regex_search(m.method, match, std::regex(pattern)) ? std::stoul(match[1]) : 0ul;
      };
      const auto used = count("energy from (\\d+) windows shared"),
                 blurred = count("(\\d+) window\\(s\\) left out: the counter's update was seen late"),
                 stalled = count("(\\d+) window\\(s\\) left out around a batch that stalled");
      EXPECT_EQ(used, m.energy.windows) << m.method;
      EXPECT_GT(used + blurred + stalled, 12u) << m.method;
    }
  }
  EXPECT_EQ(shared_tries, 1) << "six shared loops in a row could not make up for their windows left out";
}

namespace {

// The fake counter on a board with a 700 W limit (the fake reports the power-cap reason in
// every state).
class CappedBoardProbe : public FakeEnergyProbe {
 public:
  using FakeEnergyProbe::FakeEnergyProbe;
  DeviceState state(bool full) override {
    DeviceState s = FakeEnergyProbe::state(full);
    s.power_limit_W = 700;
    return s;
  }
};

}  // namespace

// A shared loop at the power cap measures its operators at the capped clocks; where the model's
// step runs well below the cap, each gets a loop of its own (where, on a GPU, one that reaches
// the cap alone is measured again at the step's duty cycle). A step near the cap keeps the split.
TEST(SharedEnergyLoop, ALoopAtThePowerCapUnlikeItsStepGivesEachItsOwnLoop) {
  TwoCalls calls;
  MeasureConfig config = quick_config();
  for (const double step_W : {200.0, 690.0}) {
    config.step_power = MeasureConfig::StepPower{step_W, 100.0, 1.0};
    Runner runner("cpu", 0, config, std::make_unique<CappedBoardProbe>(kWatts, 0.025));
    const auto results = runner.measure_group(calls.both(), {std::nullopt, std::nullopt});
    ASSERT_EQ(results.size(), 2u);
    for (const auto& r : results) {
      ASSERT_TRUE(r.measurement);
      const Measurement& m = *r.measurement;
      const bool own_loop_for_the_cap = m.method.find("shared loop ran at the power cap") != std::string::npos;
      EXPECT_EQ(own_loop_for_the_cap, step_W < 0.9 * 700) << step_W << ": " << m.method;
      if (own_loop_for_the_cap) EXPECT_NE(m.energy.source, "fake-energy-counter, shared windows") << m.method;
    }
  }
}

TEST(SharedEnergyLoop, AFastCounterGivesEachCallItsOwnLoop) {
  TwoCalls calls;
  // Its windows span 0.1 s of a 1 ms counter (runner.cpp): 0.4 s held as few as one window on a
  // loaded machine, so a second's budget, as above.
  MeasureConfig config = quick_config();
  config.energy_max_s = config.energy_max_capped_s = 1.0;
  Runner runner("cpu", 0, config, std::make_unique<FakeEnergyProbe>(kWatts, 0.001));
  const auto results = runner.measure_group(calls.both(), {std::nullopt, std::nullopt});
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) {
    ASSERT_TRUE(r.measurement);
    ASSERT_TRUE(r.measurement->energy.available) << r.measurement->energy.unavailable_reason;
    EXPECT_EQ(r.measurement->energy.source.find("shared"), std::string::npos) << r.measurement->energy.source;
    EXPECT_NE(r.measurement->method.find("aligned windows"), std::string::npos) << r.measurement->method;
  }
}

TEST(SharedEnergyLoop, WithoutEnergyEachCallIsTimedAndSaysWhy) {
  TwoCalls calls;
  Runner runner("cpu", 0, quick_config(), nullptr);
  const auto results = runner.measure_group(calls.both(), {std::nullopt, std::nullopt});
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) {
    ASSERT_TRUE(r.measurement);
    EXPECT_GT(r.measurement->time.per_call_us.n, 0u);
    EXPECT_FALSE(r.measurement->energy.available);
    EXPECT_FALSE(r.measurement->energy.unavailable_reason.empty());
  }
}

TEST(SharedEnergyLoop, PartsMustMatchTheCalls) {
  TwoCalls calls;
  Runner runner("cpu", 0, quick_config(), nullptr);
  EXPECT_THROW(runner.measure_group(calls.both(), {std::nullopt}), std::invalid_argument);
}

// Three elementwise calls of tiny shares (one signature, prepared thrice: the same kind and time)
// pool into one column beside a product of its own: each pooled call's energy is the column's
// power over its own time per call (at the fake's constant power, its true energy), its interval
// widened by kPooledMemberRelCi95, its method and flags say so, and the split has two columns.
TEST(SharedEnergyLoop, TinyCallsOfOneKindShareAPooledPower) {
  auto first = cpu_call("aten::mul.Tensor", {"self=f32[64,64]", "other=f32[64,64]"});
  auto second = cpu_call("aten::mul.Tensor", {"self=f32[64,64]", "other=f32[64,64]"});
  auto third = cpu_call("aten::mul.Tensor", {"self=f32[64,64]", "other=f32[64,64]"});
  auto mm = cpu_call("aten::mm", {"self=f32[96,96]", "mat2=f32[96,96]"});
  MeasureConfig config = quick_config();
  config.energy_max_s = config.energy_max_capped_s = 1.0;
  // A part of a very long whole: a share so small that its target is the widest (±100%).
  const MeasureConfig::Whole tiny{1e9, 3, 0.02};
  const std::vector<std::optional<MeasureConfig::Whole>> parts = {tiny, std::nullopt, tiny, tiny};
  const std::vector<PreparedCall*> group = {first.get(), mm.get(), second.get(), third.get()};
  int shared_tries = 0;
  for (int attempt = 0; attempt < 6 && shared_tries == 0; ++attempt) {
    Runner runner("cpu", 0, config, std::make_unique<FakeEnergyProbe>(kWatts, 0.025));
    const auto results = runner.measure_group(group, parts);
    ASSERT_EQ(results.size(), 4u);
    bool all_shared = true;
    for (const auto& r : results) {
      ASSERT_TRUE(r.measurement);
      all_shared = all_shared && r.measurement->energy.available &&
                   r.measurement->energy.source == "fake-energy-counter, shared windows";
    }
    // A loaded machine's fallback to loops of their own is not this test's; nor is a try whose
    // timing loops read the three identical calls' times over 2x apart (their own columns then).
    if (!all_shared ||
        results[0].measurement->method.find("shared by 4 operators in one loop, split by least squares into 2 "
                                            "columns") == std::string::npos)
      continue;
    ++shared_tries;
    for (std::size_t k = 0; k < results.size(); ++k) {
      const Measurement& m = *results[k].measurement;
      const bool pooled = k != 1;
      EXPECT_NE(m.method.find("into 2 columns"), std::string::npos) << m.method;
      EXPECT_EQ(m.method.find("its power pooled with 2 other aten::mul.Tensor call(s)") != std::string::npos, pooled)
          << m.method;
      EXPECT_EQ(std::count(m.flags.begin(), m.flags.end(), "energy_pooled:3"), pooled ? 1 : 0) << k;
      EXPECT_GE(m.energy.windows, 4u);  // two columns and the lag: the windows need only outnumber those
      // At the fake's constant power, each call's energy is that power over its time in the
      // loop, to the split's own interval: a pooled member's less the ±50% it was widened by.
      const double expected_mJ = kWatts * m.energy.wall_us_per_call * 1e-3;
      const double rel = m.energy.per_call_mJ.rel_ci95();
      const double split_rel =
          pooled ? std::sqrt(std::max(0.0, rel * rel - kPooledMemberRelCi95 * kPooledMemberRelCi95)) : rel;
      const double slack = std::max(2 * split_rel * m.energy.per_call_mJ.mean, 0.10 * expected_mJ);
      EXPECT_NEAR(m.energy.per_call_mJ.mean, expected_mJ, slack) << m.op << " / " << m.method;
      // The power to the same interval: on a loaded machine (ctest -j2 on 2 cores, 43 of 59
      // windows left out as stalled) the split of 16 windows read the product at 31 W ± its wide
      // interval, which a fixed ±15% failed while its energy passed.
      EXPECT_NEAR(m.energy.power_W, kWatts, std::max(2 * split_rel * m.energy.power_W, 0.15 * kWatts))
          << m.op << " / " << m.method;
      // A member's interval holds the spread of members' powers about their pool's.
      if (pooled) EXPECT_GE(m.energy.per_call_mJ.rel_ci95(), kPooledMemberRelCi95) << m.method;
      EXPECT_LE(m.energy.per_call_mJ.ci95_low, m.energy.per_call_mJ.mean);
      EXPECT_GE(m.energy.per_call_mJ.ci95_high, m.energy.per_call_mJ.mean);
    }
    // One power for the pool: its members' energies are in proportion to their own times.
    for (const std::size_t k : {2u, 3u}) {
      const EnergyResult &a = results[0].measurement->energy, &b = results[k].measurement->energy;
      EXPECT_DOUBLE_EQ(a.power_W, b.power_W);
      EXPECT_NEAR(b.per_call_mJ.mean / a.per_call_mJ.mean, b.wall_us_per_call / a.wall_us_per_call, 1e-9);
    }
  }
  EXPECT_EQ(shared_tries, 1) << "six shared loops in a row could not split their windows into a pool and a product";
}

namespace {

// An operator out of memory in its first call only, as one is beside its group's other inputs and
// graphs (they stay allocated while the group runs) and not once they are freed.
std::atomic<int> oom_once_calls{0};

at::Tensor oom_once(const at::Tensor& self) {
  TORCH_CHECK_WITH(OutOfMemoryError, oom_once_calls++ > 0, "simulated: out of memory beside the group's inputs");
  return self.clone();
}

}  // namespace

TORCH_LIBRARY(opcost_session_test, m) { m.def("oom_once(Tensor self) -> Tensor", &oom_once); }

// MeasuringSession::measure_group, which sweeps and validate share: a call out of memory beside
// the others is measured again alone (and said), the others kept; a call alone is not retried.
TEST(SessionGroup, ACallOutOfMemoryBesideItsGroupIsMeasuredAgainAlone) {
  std::vector<std::string> said;
  Notes notes;
  notes.note = [&](const std::string& t) { said.push_back(t); };
  SessionOptions options;
  options.config = quick_config();
  options.config.energy = false;
  MeasuringSession session(nullptr, options, notes);
  ReplayOptions replay;
  replay.device = "cpu";
  const std::vector<OpCall> calls{parse_call("opcost_session_test::oom_once", {"self=f32[8]"}),
                                  parse_call("aten::mul.Tensor", {"self=f32[8]", "other=f32[8]"})};
  oom_once_calls = 0;
  const std::vector<SessionOutcome> outs = session.measure_group(calls, replay, {std::nullopt, std::nullopt});
  ASSERT_EQ(outs.size(), 2u);
  ASSERT_TRUE(outs[0].measurement) << outs[0].error;
  EXPECT_GT(outs[0].measurement->time.per_call_us.n, 0u);
  ASSERT_TRUE(outs[1].measurement) << outs[1].error;
  const bool retried = std::any_of(said.begin(), said.end(), [](const std::string& t) {
    return t.find(
               "opcost_session_test::oom_once self=f32[8]: out of memory beside its group's other calls (2 in "
               "all); measuring it again alone") != std::string::npos;
  });
  EXPECT_TRUE(retried);

  oom_once_calls = 0;
  said.clear();
  const std::vector<SessionOutcome> alone = session.measure_group({calls[0]}, replay, {std::nullopt});
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_FALSE(alone[0].measurement);
  EXPECT_EQ(alone[0].error_kind, ReplayError::Kind::kOutOfMemory) << alone[0].error;
  EXPECT_TRUE(said.empty());
}
