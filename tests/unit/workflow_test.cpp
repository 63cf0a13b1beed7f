// The workflows' measuring session and predict's stages, on the CPU without a device: each stage
// runs against FakeSession (made-up measurements, energies from FakeEnergyProbe's power), a fake
// database look-up and a fake model. The store policy runs against a real SQLite file.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <stdexcept>

#include "core/store/database.h"
#include "core/store/sql_connection.h"
#include "fake_energy_probe.h"
#include "workflow/options.h"
#include "workflow/predict_stages.h"
#include "workflow/session.h"

using namespace opcost;
using opcost::fakes::FakeEnergyProbe;

namespace {

// A measurement as a runner would return it: `time_us` per call (±1%), half of it host issue
// time, and with `watts`, the energy of that time at that power.
Measurement made_up(const std::string& op, const std::string& overload, const std::string& args, double time_us,
                    std::optional<double> watts) {
  Measurement m;
  m.op = op;
  m.overload = overload;
  m.args = args;
  m.time.per_call_us.n = 10;
  m.time.per_call_us.mean = m.time.per_call_us.median = time_us;
  m.time.per_call_us.ci95_low = time_us * 0.99;
  m.time.per_call_us.ci95_high = time_us * 1.01;
  m.time.host_us_per_call = time_us / 2;
  if (watts) {
    m.energy.available = true;
    m.energy.power_W = *watts;
    const double mJ = *watts * time_us * 1e-3;
    m.energy.per_call_mJ.mean = m.energy.per_call_mJ.median = mJ;
    m.energy.per_call_mJ.ci95_low = mJ * 0.98;
    m.energy.per_call_mJ.ci95_high = mJ * 1.02;
    m.energy.wall_us_per_call = time_us;
  } else {
    m.energy.unavailable_reason = "no energy counter";
  }
  return m;
}

// The session the stages measure in: each operator's time from `time_us_by_op` (by display
// name), its energy at the fake probe's power; signatures in `failing` fail with their error;
// the "database" takes `rows_before_full` rows, then refuses every one and stops the run.
class FakeSession final : public OperatorSession {
 public:
  explicit FakeSession(FakeEnergyProbe& probe) : probe_(probe) {}
  SessionOutcome measure(const OpCall& call, const ReplayOptions& replay) override {
    measured.push_back(call.display_name());
    replays.push_back(replay);
    SessionOutcome out;
    if (const auto f = failing.find(call.display_name()); f != failing.end()) {
      out.kind = SessionOutcome::Kind::kBadInput;
      out.from_arguments = true;
      out.error = f->second;
      if (const auto k = failing_kind.find(call.display_name()); k != failing_kind.end()) out.error_kind = k->second;
      return out;
    }
    const auto t = time_us_by_op.find(call.display_name());
    const double time_us = t == time_us_by_op.end() ? 1.0 : t->second;
    out.kind = SessionOutcome::Kind::kMeasured;
    out.measurement = made_up(call.op, call.overload, "", time_us, probe_.power_W());
    out.not_stored = store(*out.measurement, replay, config);
    if (!out.not_stored.empty()) out.kind = SessionOutcome::Kind::kFailed;
    return out;
  }
  // Each call as measure() would have it; the group, its parts and the loops it ran with are kept.
  std::vector<SessionOutcome> measure_group(const std::vector<OpCall>& calls, const ReplayOptions& replay,
                                            const std::vector<std::optional<MeasureConfig::Whole>>& parts) override {
    EXPECT_EQ(calls.size(), parts.size());
    std::vector<std::string> names;
    for (const auto& c : calls) names.push_back(c.display_name());
    groups.push_back(names);
    group_parts.push_back(parts);
    group_configs.push_back(config);
    std::vector<SessionOutcome> outs;
    for (const auto& c : calls) outs.push_back(measure(c, replay));
    return outs;
  }
  std::string store(Measurement& m, const ReplayOptions&, const MeasureConfig& ran_with) override {
    stored_with.push_back(ran_with);
    if (rows_taken >= rows_before_full) {
      stopped_ = "database or disk is full: fake.db";
      return stopped_;
    }
    m.db_id = int64_t(++rows_taken);
    return "";
  }
  void reconfigure(const MeasureConfig& c) override {
    config = c;
    ++reconfigured;
  }
  const std::string& stopped() const override { return stopped_; }

  std::map<std::string, double> time_us_by_op;
  std::map<std::string, std::string> failing;
  std::map<std::string, ReplayError::Kind> failing_kind;  // the replay's kind of each failure (default kOther)
  std::size_t rows_before_full = 1000;
  std::vector<std::string> measured;             // display names, in order
  std::vector<std::vector<std::string>> groups;  // the calls measured together, by display name
  std::vector<std::vector<std::optional<MeasureConfig::Whole>>> group_parts;
  std::vector<MeasureConfig> group_configs;
  std::vector<ReplayOptions> replays;
  std::vector<MeasureConfig> stored_with;
  MeasureConfig config;
  std::size_t rows_taken = 0, reconfigured = 0;

 private:
  FakeEnergyProbe& probe_;
  std::string stopped_;
};

// The database look-up: rows by display name and arguments; `near` answers the look-up
// ignoring floating-point scalars for a display name.
class FakeStoredCosts final : public StoredCosts {
 public:
  std::optional<Measurement> newest(const StoredCallKey& key) override {
    asked.push_back(key);
    const auto it = rows.find(name(key.op, key.overload) + " " + key.args);
    return it == rows.end() ? std::nullopt : std::optional(it->second);
  }
  std::optional<NearRow> ignoring_float_scalars(const InventoryEntry& e, const StoredCallKey&) override {
    const auto it = near.find(e.display_name());
    return it == near.end() ? std::nullopt : std::optional(it->second);
  }
  static std::string name(const std::string& op, const std::string& overload) {
    return overload.empty() ? op : op + "." + overload;
  }
  void add(const std::string& op, const std::string& overload, const std::string& args, Measurement m) {
    rows[name(op, overload) + " " + args] = std::move(m);
  }
  std::map<std::string, Measurement> rows;
  std::map<std::string, NearRow> near;
  std::vector<StoredCallKey> asked;
};

// A model whose step takes `step_us` and whose host rounds are the inventory's own calls
// (every `odd_round_other_calls`-th round another path through the model).
class FakeModelSteps final : public ModelSteps {
 public:
  explicit FakeModelSteps(Inventory inv) : inv_(std::move(inv)) {}
  Measurement measure_step(const MeasureConfig& c) override {
    step_configs.push_back(c);
    return made_up("model", "", "", step_us, std::nullopt);
  }
  HostRound time_host_round() override {
    HostRound r;
    r.observed = inv_;
    if (++rounds % 3 == 0) r.observed.sequence.pop_back();  // another path: not comparable
    r.plain_step_us = 100 + double(rounds % 4);
    r.plain_wall_us = step_us;
    return r;
  }
  TracedStep trace_step() override {
    if (!traced) throw std::logic_error("no trace on the CPU");
    return *traced;
  }
  std::vector<std::optional<std::vector<std::string>>> kernels_alone(const Inventory&) override {
    throw std::logic_error("no trace on the CPU");
  }
  std::optional<double> untraced_launch_latency_us(double) override { return std::nullopt; }

  double step_us = 40;
  std::optional<TracedStep> traced;  // what trace_step gives (none: it throws, as on the CPU)
  std::size_t rounds = 0;
  std::vector<MeasureConfig> step_configs;

 private:
  Inventory inv_;
};

// Three signatures: a large matrix product (1 call), a small add (2 calls), a relu (1 call).
Inventory tiny_inventory() {
  InventoryBuilder b;
  b.add("aten::add", "Tensor", "self=f32[4] other=f32[4]", "a", {});
  b.time_last(0, 0);
  b.add("aten::mm", "", "self=f32[512,512] mat2=f32[512,512]", "b", {});
  b.time_last(0, 0);
  b.add("aten::add", "Tensor", "self=f32[4] other=f32[4]", "c", {});
  b.time_last(0, 0);
  b.add("aten::relu", "", "self=f32[4]", "d", {});
  b.time_last(0, 0);
  Inventory inv = b.take();
  inv.model = "tiny";
  return inv;
}

struct Stages {
  PredictOptions options = PredictOptions::validate();
  Notes notes;
  std::vector<std::string> said, failed;
  Stages() {
    notes.note = [this](const std::string& t) { said.push_back(t); };
    notes.error = [this](const std::string& t) { failed.push_back(t); };
  }
  PredictContext cpu() { return PredictContext{options, false, "cpu", notes}; }
  PredictContext gpu() { return PredictContext{options, true, "cuda:0", notes}; }
};

}  // namespace

TEST(LookUpStage, ReportsExactlyTheMissingCalls) {
  const Inventory inv = tiny_inventory();
  FakeStoredCosts db;
  db.add("aten::add", "Tensor", "self=f32[4] other=f32[4]", made_up("aten::add", "Tensor", "", 3, 50.0));
  db.add("aten::relu", "", "self=f32[4]", made_up("aten::relu", "", "", 7, std::nullopt));
  const LookedUp found = look_up_costs(inv, db, "warm", /*on_gpu=*/false);
  ASSERT_EQ(inv.entries.size(), 3u);
  EXPECT_EQ(found.missing, (std::vector<std::size_t>{1}));  // aten::mm only
  ASSERT_EQ(found.costs.size(), 2u);
  EXPECT_DOUBLE_EQ(found.costs.at(0).cpu_us, 3);  // on the CPU a call's time is host time
  EXPECT_DOUBLE_EQ(found.costs.at(0).gpu_us, 0);
  EXPECT_DOUBLE_EQ(*found.costs.at(0).energy_mJ, 50 * 3 * 1e-3);
  EXPECT_FALSE(found.costs.at(2).energy_mJ);
  EXPECT_EQ(found.costs.at(2).energy_why, "no energy counter");
  for (const auto& k : db.asked) EXPECT_EQ(k.cache_mode, "warm");
}

TEST(LookUpStage, UsesARowDifferingOnlyInFloatScalarsAndSaysWhich) {
  const Inventory inv = tiny_inventory();
  FakeStoredCosts db;
  db.near["aten::mm"] = {made_up("aten::mm", "", "", 90, 300.0), "self=f32[512,512] mat2=f32[512,512] alpha=0.5"};
  const LookedUp found = look_up_costs(inv, db, "auto", true);
  EXPECT_EQ(found.missing, (std::vector<std::size_t>{0, 2}));
  ASSERT_EQ(found.costs.count(1), 1u);
  EXPECT_DOUBLE_EQ(found.costs.at(1).gpu_us, 90);
  EXPECT_EQ(found.costs.at(1).matched_args, "self=f32[512,512] mat2=f32[512,512] alpha=0.5");
}

TEST(MeasureStage, MeasuresHeaviestFirstInTheModelsCacheMode) {
  Stages s;
  s.options.short_loops_after = 1;  // full loops throughout
  FakeEnergyProbe probe(200, 0.01);
  FakeSession session(probe);
  const Inventory inv = tiny_inventory();
  LookedUp looked_up;
  looked_up.missing = {0, 1, 2};
  const MissingMeasured m = measure_missing(s.cpu(), inv, looked_up, PredictionInputs{}, std::nullopt, session);
  ASSERT_EQ(session.measured.size(), 3u);
  EXPECT_EQ(session.measured[0], "aten::mm");  // 512×512 product outweighs 2 adds of 4 floats
  EXPECT_EQ(m.measured.front(), 1u);
  EXPECT_EQ(m.costs.size(), 3u);
  EXPECT_EQ(m.failures, 0u);
  EXPECT_TRUE(m.stopped.empty());
  for (const auto& r : session.replays) {
    EXPECT_EQ(r.device, "cpu");
    EXPECT_EQ(r.cache_mode, "warm");  // auto: as the model reads its inputs (all warm here)
  }
}

TEST(MeasureStage, StopsOnAFullDatabaseAndKeepsTheMeasurementInHand) {
  Stages s;
  s.options.short_loops_after = 1;
  FakeEnergyProbe probe(200, 0.01);
  FakeSession session(probe);
  session.rows_before_full = 1;
  session.time_us_by_op = {{"aten::mm", 80}, {"aten::add.Tensor", 2}, {"aten::relu", 3}};
  const Inventory inv = tiny_inventory();
  LookedUp looked_up;
  looked_up.missing = {0, 1, 2};
  const MissingMeasured m = measure_missing(s.cpu(), inv, looked_up, PredictionInputs{}, std::nullopt, session);
  // The first is stored; the second is measured, refused and still used; the third never runs.
  EXPECT_EQ(session.measured.size(), 2u);
  EXPECT_EQ(m.measured.size(), 2u);
  EXPECT_EQ(m.costs.size(), 2u);
  EXPECT_EQ(m.failures, 1u);
  EXPECT_EQ(m.stopped, "database or disk is full: fake.db");
  ASSERT_FALSE(s.failed.empty());
  EXPECT_NE(s.failed.back().find("the measurement is used, but not stored"), std::string::npos) << s.failed.back();
  ASSERT_FALSE(s.said.empty());
  EXPECT_EQ(s.said.back(), "stopped measuring: database or disk is full: fake.db");
}

TEST(MeasureStage, AFailedCallIsNamedWithItsLayerAndFixAndTheRestGoOn) {
  Stages s;
  FakeEnergyProbe probe(200, 0.01);
  FakeSession session(probe);
  session.failing["aten::relu"] = "aten::relu: rejected the arguments: boom";
  const Inventory inv = tiny_inventory();
  LookedUp looked_up;
  looked_up.missing = {1, 2};
  const MissingMeasured m = measure_missing(s.cpu(), inv, looked_up, PredictionInputs{}, std::nullopt, session);
  EXPECT_EQ(m.failures, 1u);
  ASSERT_EQ(m.failed.count(2), 1u);
  EXPECT_EQ(m.failed.at(2).rfind("rejected the arguments: boom; fix: ", 0), 0u) << m.failed.at(2);
  EXPECT_EQ(m.costs.count(1), 1u);
  ASSERT_EQ(s.failed.size(), 1u);
  EXPECT_NE(s.failed[0].find("tiny: layer d: aten::relu self=f32[4]"), std::string::npos) << s.failed[0];
}

TEST(MeasureStage, TheFixFollowsTheReplaysKindOfErrorNotItsText) {
  // The same words, three kinds: the fix is chosen by ReplayError::Kind alone.
  const std::pair<ReplayError::Kind, const char*> cases[] = {
      {ReplayError::Kind::kOutOfMemory, "free memory on the device"},
      {ReplayError::Kind::kUnknownOperator, "register the operator"},
      {ReplayError::Kind::kArgumentsRejected, "refused opcost's seeded random inputs"},
      {ReplayError::Kind::kOther, "cannot rebuild this argument"},
  };
  for (const auto& [kind, fix] : cases) {
    Stages s;
    FakeEnergyProbe probe(200, 0.01);
    FakeSession session(probe);
    session.failing["aten::relu"] = "aten::relu: unknown operator or out of memory, who knows";
    session.failing_kind["aten::relu"] = kind;
    LookedUp looked_up;
    looked_up.missing = {2};
    const MissingMeasured m =
        measure_missing(s.cpu(), tiny_inventory(), looked_up, PredictionInputs{}, std::nullopt, session);
    ASSERT_EQ(m.failed.count(2), 1u);
    EXPECT_NE(m.failed.at(2).find(fix), std::string::npos) << int(kind) << ": " << m.failed.at(2);
  }
}

TEST(MeasureStage, ModelStopsOnceTheMeasuredOperatorsExplainTheTarget) {
  Stages s;
  s.options = PredictOptions::model_to(0.5);
  FakeEnergyProbe probe(200, 0.01);
  FakeSession session(probe);
  session.time_us_by_op = {{"aten::mm", 80}, {"aten::add.Tensor", 2}, {"aten::relu", 3}};
  const Inventory inv = tiny_inventory();
  LookedUp looked_up;
  looked_up.missing = {0, 1, 2};
  StepMeasurement step;
  step.time_us = 100;  // the product alone explains 80%
  PredictionInputs pin;
  pin.on_gpu = false;
  const MissingMeasured m = measure_missing(s.cpu(), inv, looked_up, pin, step, session);
  EXPECT_EQ(session.measured, (std::vector<std::string>{"aten::mm"}));
  EXPECT_TRUE(m.stopped_at_target);
  // Short loops from the first operator (model's preset), each as its share of the step allows.
  ASSERT_FALSE(session.stored_with.empty());
  EXPECT_LT(session.stored_with[0].time.max_seconds, s.options.op_config.time.max_seconds);
  EXPECT_TRUE(session.stored_with[0].part_of.has_value());
}

// validate's defaults on a GPU with a step: short loops from the first operator, shared windows.
MissingMeasured measure_on_gpu(Stages& s, FakeSession& session, const std::vector<std::size_t>& missing) {
  LookedUp looked_up;
  looked_up.missing = missing;
  StepMeasurement step;
  step.time_us = 1000;
  PredictionInputs pin;
  pin.on_gpu = true;
  return measure_missing(s.gpu(), tiny_inventory(), looked_up, pin, step, session);
}

TEST(MeasureStage, OnAGpuShortLoopsShareCounterWindowsInOneGroupWithEachCallsShare) {
  Stages s;
  s.options.short_loops_after = 0;
  s.options.cache = "warm";
  FakeEnergyProbe probe(200, 0.01);
  FakeSession session(probe);
  session.time_us_by_op = {{"aten::mm", 600}};  // 60% of the 1000 µs step
  const MissingMeasured m = measure_on_gpu(s, session, {0, 1, 2});
  // The heaviest alone (its own loop sees the power cap), then, half the step explained, the rest together.
  ASSERT_EQ(session.measured.size(), 3u);
  EXPECT_EQ(session.measured[0], "aten::mm");
  ASSERT_EQ(session.groups.size(), 1u);
  EXPECT_EQ(session.groups[0], (std::vector<std::string>{"aten::add.Tensor", "aten::relu"}));
  EXPECT_EQ(m.measured, (std::vector<std::size_t>{1, 0, 2}));  // heaviest first, every one measured
  EXPECT_EQ(m.costs.size(), 3u);
  EXPECT_EQ(m.failures, 0u);
  // Each call's part of the step goes with it: its count, the step's time, the operators' interval.
  const auto& parts = session.group_parts[0];
  ASSERT_EQ(parts.size(), 2u);
  for (const auto& part : parts) {
    ASSERT_TRUE(part.has_value());
    EXPECT_DOUBLE_EQ(part->time_us, 1000);
    EXPECT_DOUBLE_EQ(part->energy_rel_ci95, s.options.ops_energy_rel_ci95);
  }
  EXPECT_DOUBLE_EQ(parts[0]->calls, 2);  // aten::add runs twice in the step
  EXPECT_DOUBLE_EQ(parts[1]->calls, 1);
  // The group's loops are the short ones, with no single call's part in them.
  EXPECT_LT(session.group_configs[0].time.max_seconds, s.options.op_config.time.max_seconds);
  EXPECT_FALSE(session.group_configs[0].part_of.has_value());
  for (const auto& r : session.replays) EXPECT_EQ(r.cache_mode, "warm");
}

TEST(MeasureStage, EachOperatorGetsItsOwnLoopWhenSharingIsOffOrNotPossible) {
  auto run = [](auto change, bool on_gpu) {
    Stages s;
    s.options.short_loops_after = 0;
    s.options.cache = "warm";
    change(s.options);
    FakeEnergyProbe probe(200, 0.01);
    FakeSession session(probe);
    session.time_us_by_op = {{"aten::mm", 600}};
    if (on_gpu) {
      measure_on_gpu(s, session, {0, 1, 2});
    } else {
      LookedUp looked_up;
      looked_up.missing = {0, 1, 2};
      StepMeasurement step;
      step.time_us = 1000;
      measure_missing(s.cpu(), tiny_inventory(), looked_up, PredictionInputs{}, step, session);
    }
    EXPECT_EQ(session.measured.size(), 3u);
    return session.groups.size();
  };
  EXPECT_EQ(run([](PredictOptions&) {}, true), 1u);  // the defaults share
  EXPECT_EQ(run([](PredictOptions& o) { o.shared_windows = false; }, true), 0u);
  EXPECT_EQ(run([](PredictOptions& o) { o.ops_energy_rel_ci95 = 0; }, true), 0u);  // a fixed target each
  EXPECT_EQ(run([](PredictOptions& o) { o.short_loops_after = 1; }, true), 0u);    // full loops throughout
  EXPECT_EQ(run([](PredictOptions& o) { o.op_config.energy = false; }, true), 0u);
  EXPECT_EQ(run([](PredictOptions&) {}, false), 0u);  // the CPU's counter is fast: nothing to share
}

TEST(MeasureStage, EveryOperatorsLoopsKnowTheStepsPowerAndTheGapPowerForTheDutyCycle) {
  // A step of 450 mJ over its 1000 µs energy loop: 450 W; the gap probe's 180 ± 6 W.
  auto run = [](auto change, bool on_gpu) {
    Stages s;
    s.options.cache = "warm";
    s.options.short_loops_after = 1;  // full loops throughout: one by one
    change(s.options);
    FakeEnergyProbe probe(200, 0.01);
    FakeSession session(probe);
    LookedUp looked_up;
    looked_up.missing = {0, 1, 2};
    StepMeasurement step;
    step.time_us = 1000;
    step.energy_mJ = 450;
    step.energy_loop_time_us = 1000;
    PredictionInputs pin;
    pin.on_gpu = on_gpu;
    pin.gap_power_W = 180;
    pin.gap_power_ci_W = 6;
    measure_missing(on_gpu ? s.gpu() : s.cpu(), tiny_inventory(), looked_up, pin, step, session);
    EXPECT_EQ(session.measured.size(), 3u);
    std::vector<std::optional<MeasureConfig::StepPower>> seen;
    for (const auto& c : session.stored_with) seen.push_back(c.step_power);
    return seen;
  };
  for (const auto& p : run([](PredictOptions&) {}, true)) {
    ASSERT_TRUE(p.has_value());
    EXPECT_DOUBLE_EQ(p->step_W, 450);
    EXPECT_EQ(p->gap_W, std::optional<double>(180));
    EXPECT_DOUBLE_EQ(p->gap_ci_W, 6);
  }
  // Short loops keep it too.
  auto short_one_by_one = [](PredictOptions& o) {
    o.short_loops_after = 0;
    o.shared_windows = false;
  };
  for (const auto& p : run(short_one_by_one, true)) EXPECT_TRUE(p.has_value());
  for (const auto& p : run([](PredictOptions& o) { o.duty_cycle = false; }, true)) EXPECT_FALSE(p.has_value());
  for (const auto& p : run([](PredictOptions&) {}, false)) EXPECT_FALSE(p.has_value());  // the CPU has no cap
}

TEST(MeasureStage, AFailedCallInAGroupIsNamedWithItsLayerAndTheOthersAreUsed) {
  Stages s;
  s.options.short_loops_after = 0;
  s.options.cache = "warm";
  FakeEnergyProbe probe(200, 0.01);
  FakeSession session(probe);
  session.failing["aten::relu"] = "aten::relu: rejected the arguments: boom";
  session.time_us_by_op = {{"aten::mm", 600}};
  const MissingMeasured m = measure_on_gpu(s, session, {0, 1, 2});
  ASSERT_EQ(session.groups.size(), 1u);
  EXPECT_EQ(m.failures, 1u);
  ASSERT_EQ(m.failed.count(2), 1u);
  EXPECT_EQ(m.failed.at(2).rfind("rejected the arguments: boom; fix: ", 0), 0u) << m.failed.at(2);
  EXPECT_EQ(m.costs.count(0), 1u);
  EXPECT_EQ(m.costs.count(1), 1u);
  ASSERT_EQ(s.failed.size(), 1u);
  EXPECT_NE(s.failed[0].find("tiny: layer d: aten::relu self=f32[4]"), std::string::npos) << s.failed[0];
}

namespace {

// Every entry of `inv` missing, measured on a GPU whose step takes `step_us`, short loops from
// the first operator, warm inputs.
MissingMeasured measure_all_on_gpu(const Inventory& inv, double step_us, FakeSession& session,
                                   std::optional<std::size_t> own_loops = std::nullopt,
                                   std::vector<std::string>* said = nullptr) {
  Stages s;
  if (own_loops) s.options.own_loops = *own_loops;
  s.options.short_loops_after = 0;
  s.options.cache = "warm";
  LookedUp looked_up;
  for (std::size_t i = 0; i < inv.entries.size(); ++i) looked_up.missing.push_back(i);
  StepMeasurement step;
  step.time_us = step_us;
  PredictionInputs pin;
  pin.on_gpu = true;
  MissingMeasured m = measure_missing(s.gpu(), inv, looked_up, pin, step, session);
  if (said) *said = s.said;
  return m;
}

}  // namespace

namespace {

// 20 adds of 1 µs in a 1000 µs step, measured on a GPU with `own_loops` (the default where unset):
// their GPU time never explains half of it, so how many are measured alone is own_loops' choice.
struct HostBoundStep {
  FakeEnergyProbe probe{200, 0.01};
  FakeSession session{probe};
  MissingMeasured measured;
  explicit HostBoundStep(std::optional<std::size_t> own_loops = std::nullopt) {
    InventoryBuilder b;
    for (int i = 0; i < 20; ++i) {
      b.add("aten::add", "Tensor", fmt::format("self=f32[{}] other=f32[{}]", 100 + i, 100 + i), "l", {});
      b.time_last(0, 0);
    }
    measured = measure_all_on_gpu(b.take(), 1000, session, own_loops);
  }
};

}  // namespace

TEST(MeasureStage, AHostBoundStepSharesWindowsAfterSixteenOperatorsAlone) {
  const HostBoundStep step;
  ASSERT_EQ(step.session.groups.size(), 1u);
  EXPECT_EQ(step.session.groups[0].size(), 4u);
  EXPECT_EQ(step.measured.measured.size(), 20u);
}

TEST(MeasureStage, OwnLoopsSetsHowManyOperatorsAreMeasuredAloneBeforeTheRestShare) {
  // --own-loops 4 leaves 16 to share, 0 shares every one.
  for (const std::size_t own : {std::size_t(4), std::size_t(0)}) {
    const HostBoundStep step(own);
    ASSERT_EQ(step.session.groups.size(), 1u) << own;
    EXPECT_EQ(step.session.groups[0].size(), 20u - own) << own;
    EXPECT_EQ(step.measured.measured.size(), 20u) << own;
  }
}

TEST(MeasureStage, ViewsAreMeasuredApartFromTheGroupsWithKernels) {
  // DenseNet's pattern: a narrow beside every add. The first (heaviest) add alone explains the
  // step; then 39 adds share windows in one group, and the 40 narrows (no energy loop) are
  // measured together apart from it, so that they never split the adds over more shared loops.
  InventoryBuilder b;
  for (int i = 0; i < 40; ++i) {
    b.add("aten::add", "Tensor", fmt::format("self=f32[{}] other=f32[{}]", 1000000 + i, 1000000 + i), "l", {});
    b.time_last(0, 0);
    b.add("aten::narrow", "", fmt::format("self=f32[{}] dim=0 start=0 length=1", 100 + i), "l", {}, "forward", {},
          /*returns_views=*/true);
    b.time_last(0, 0);
  }
  FakeEnergyProbe probe(200, 0.01);
  FakeSession session(probe);
  session.time_us_by_op = {{"aten::add.Tensor", 100.0}, {"aten::narrow", 3.0}};
  std::vector<std::string> said;
  const MissingMeasured m = measure_all_on_gpu(b.take(), 150, session, std::nullopt, &said);
  EXPECT_EQ(m.measured.size(), 80u);
  // Their progress lines say which get an energy loop: no narrow does.
  std::size_t views = 0, shared = 0;
  for (const std::string& line : said) {
    if (line.find("aten::narrow") != std::string::npos) {
      views += line.find("(returns views: its host time only)") != std::string::npos ? 1 : 0;
      EXPECT_EQ(line.find("energy in shared"), std::string::npos) << line;
    } else if (line.find("(energy in shared counter windows)") != std::string::npos) {
      ++shared;
    }
  }
  EXPECT_EQ(views, 40u);
  EXPECT_EQ(shared, 39u);
  EXPECT_EQ(session.measured.front(), "aten::add.Tensor");
  ASSERT_EQ(session.groups.size(), 2u);
  const auto count_of = [](const std::vector<std::string>& g, const char* name) {
    return std::size_t(std::count(g.begin(), g.end(), name));
  };
  EXPECT_EQ(count_of(session.groups[0], "aten::narrow"), 40u);  // gathered on the way, measured first
  EXPECT_EQ(session.groups[0].size(), 40u);
  EXPECT_EQ(count_of(session.groups[1], "aten::add.Tensor"), 39u);
  EXPECT_EQ(session.groups[1].size(), 39u);
}

TEST(MeasureStage, ValidatesGroupsHoldSixtyFourWithKernelsAndViewsGoSixtyFourAtATime) {
  // 81 adds, heaviest first, and 80 narrows behind them: the first add alone, then 64 adds, then
  // the last 16 with the narrows met on the way, measured 64 and then 16 at a time before them.
  InventoryBuilder b;
  for (int i = 0; i < 81; ++i) {
    b.add("aten::add", "Tensor", fmt::format("self=f32[{}] other=f32[{}]", 1000000 - i, 1000000 - i), "l", {});
    b.time_last(0, 0);
  }
  for (int i = 0; i < 80; ++i) {
    b.add("aten::narrow", "", fmt::format("self=f32[{}] dim=0 start=0 length=1", 100 + i), "l", {}, "forward", {},
          /*returns_views=*/true);
    b.time_last(0, 0);
  }
  FakeEnergyProbe probe(200, 0.01);
  FakeSession session(probe);
  session.time_us_by_op = {{"aten::add.Tensor", 100.0}, {"aten::narrow", 3.0}};
  const MissingMeasured m = measure_all_on_gpu(b.take(), 150, session);
  EXPECT_EQ(m.measured.size(), 161u);
  EXPECT_EQ(m.failures, 0u);
  std::vector<std::pair<std::string, std::size_t>> groups;
  for (const auto& g : session.groups) {
    ASSERT_FALSE(g.empty());
    EXPECT_EQ(std::size_t(std::count(g.begin(), g.end(), g.front())), g.size()) << "one kind a group";
    groups.emplace_back(g.front(), g.size());
  }
  const std::vector<std::pair<std::string, std::size_t>> expected{
      {"aten::add.Tensor", 64}, {"aten::narrow", 64}, {"aten::narrow", 16}, {"aten::add.Tensor", 16}};
  EXPECT_EQ(groups, expected);
}

TEST(MeasureStage, ADatabaseThatStopsDuringAViewsFlushEndsTheGathering) {
  // 100 narrows of large tensors (heavier than the adds behind them), every operator sharing:
  // the first 64 narrows are measured together while the group is gathered, and the database
  // stops within them. Nothing more is measured: neither the other narrows nor the adds.
  InventoryBuilder b;
  for (int i = 0; i < 100; ++i) {
    b.add("aten::narrow", "", fmt::format("self=f32[{}] dim=0 start=0 length=1", 10000000 + i), "l", {}, "forward", {},
          /*returns_views=*/true);
    b.time_last(0, 0);
  }
  for (int i = 0; i < 10; ++i) {
    b.add("aten::add", "Tensor", fmt::format("self=f32[{}] other=f32[{}]", 10 + i, 10 + i), "l", {});
    b.time_last(0, 0);
  }
  FakeEnergyProbe probe(200, 0.01);
  FakeSession session(probe);
  session.rows_before_full = 10;
  session.time_us_by_op = {{"aten::add.Tensor", 1.0}, {"aten::narrow", 3.0}};
  std::vector<std::string> said;
  const MissingMeasured m = measure_all_on_gpu(b.take(), 1000, session, std::size_t(0), &said);
  ASSERT_EQ(session.groups.size(), 1u);
  EXPECT_EQ(session.groups[0].size(), 64u);
  EXPECT_EQ(std::count(session.measured.begin(), session.measured.end(), "aten::add.Tensor"), 0);
  EXPECT_EQ(m.measured.size(), 64u);  // those in hand are used (10 stored), as one call alone would be
  EXPECT_EQ(m.stopped, "database or disk is full: fake.db");
  ASSERT_FALSE(said.empty());
  EXPECT_EQ(said.back(), "stopped measuring: database or disk is full: fake.db");
}

TEST(MeasureStage, ModelChecksItsTargetBeforeEachGroupAndAGroupHasAtMost32WithKernels) {
  // A product of 60% of the step, alone, then 40 signatures of similar weight: one group of 32,
  // then 8, unless the target is met between.
  InventoryBuilder b;
  b.add("aten::mm", "", "self=f32[512,512] mat2=f32[512,512]", "m", {});
  b.time_last(0, 0);
  for (int i = 0; i < 40; ++i) {
    b.add("aten::add", "Tensor", fmt::format("self=f32[{}] other=f32[{}]", 100 + i, 100 + i), "l", {});
    b.time_last(0, 0);
  }
  Inventory inv = b.take();
  inv.model = "many";
  for (const bool target_met_after_first : {false, true}) {
    Stages s;
    s.options = PredictOptions::model_to(0.9);
    s.options.cache = "warm";
    FakeEnergyProbe probe(200, 0.01);
    FakeSession session(probe);
    session.time_us_by_op = {{"aten::mm", 60.0}, {"aten::add.Tensor", target_met_after_first ? 1.0 : 0.5}};
    LookedUp looked_up;
    for (std::size_t i = 0; i < 41; ++i) looked_up.missing.push_back(i);
    StepMeasurement step;
    step.time_us = 100;  // with the product's 60%, 32 adds of 1 µs explain 92%; of 0.5 µs, 76%
    PredictionInputs pin;
    pin.on_gpu = true;
    const MissingMeasured m = measure_missing(s.gpu(), inv, looked_up, pin, step, session);
    EXPECT_EQ(session.measured.front(), "aten::mm");
    ASSERT_EQ(session.groups.size(), target_met_after_first ? 1u : 2u);
    EXPECT_EQ(session.groups[0].size(), 32u);
    if (!target_met_after_first) EXPECT_EQ(session.groups[1].size(), 8u);
    EXPECT_EQ(m.stopped_at_target, target_met_after_first);
  }
}

TEST(GapPower, TakenFromTheProbesPowerOrSaysWhyNot) {
  FakeEnergyProbe probe(73, 0.01);
  PredictionInputs pin;
  pin.on_gpu = true;
  GapProbe gap;
  gap.measurement = made_up("aten::add", "Tensor", "", 5, probe.power_W());
  take_gap_power(pin, gap);
  ASSERT_TRUE(pin.gap_power_W);
  EXPECT_DOUBLE_EQ(*pin.gap_power_W, 73);
  EXPECT_NEAR(pin.gap_power_ci_W, 73 * 0.02, 1e-9);  // the energy's relative interval

  PredictionInputs none;
  none.on_gpu = true;
  gap.measurement = made_up("aten::add", "Tensor", "", 5, std::nullopt);
  take_gap_power(none, gap);
  EXPECT_FALSE(none.gap_power_W);
  EXPECT_NE(none.gap_power_why.find("has no energy figure: no energy counter"), std::string::npos);
}

TEST(PairedRoundsStage, ComparesOnlyRoundsOnTheModelsPath) {
  Stages s;
  Inventory inv = tiny_inventory();
  FakeModelSteps model(inv);
  std::vector<HostRound> compared;
  const PairedRounds p = paired_rounds(model, inv, compared, s.notes);
  ASSERT_GE(model.rounds, 5u);
  EXPECT_EQ(compared.size(), model.rounds - model.rounds / 3);  // every third took another path
  EXPECT_EQ(p.measured_us.size(), compared.size());
  EXPECT_DOUBLE_EQ(p.measured_us.front(), model.step_us);
  EXPECT_GT(p.host_drift, 0);  // plain steps of 100–103 µs
  EXPECT_LT(p.host_drift, 0.05);
}

TEST(TraceStage, OnTheCpuSaysWhyAndTracesNothing) {
  Stages s;
  const Inventory inv = tiny_inventory();
  FakeModelSteps model(inv);  // would throw if traced
  const Traced t = trace_launches_and_kernels(s.cpu(), inv, model, 0);
  EXPECT_FALSE(t.kernels);
  EXPECT_FALSE(t.launches);
  EXPECT_EQ(t.kernels_why, "kernels are traced on a GPU only");
  EXPECT_EQ(t.launches_why, "launches are traced on a GPU only");
}

TEST(TraceStage, OnAGpuCountsTheStepsDeviceTimeAndWhatNoCallLaunched) {
  Stages s;
  s.options.trace_launches = false;
  const Inventory inv = tiny_inventory();
  FakeModelSteps model(inv);
  CallKernels mm;
  mm.op = "aten::mm";
  mm.kernels = {"gemm"};
  mm.device_ns = 100'000;
  model.traced = TracedStep{{mm}, 900.0};
  const Traced t = trace_launches_and_kernels(s.gpu(), inv, model, 0);
  EXPECT_DOUBLE_EQ(t.coverage.traced_device_us, 1000);
  EXPECT_DOUBLE_EQ(t.coverage.untied_device_us, 900);
  EXPECT_TRUE(t.coverage.uncovered());
}

TEST(PredictStage, TotalsAreCountsTimesCostsOnATinyTimeline) {
  PredictReport r;
  r.inventory = tiny_inventory();  // no host time of its own around the calls
  r.inputs.on_gpu = false;
  OpCost add, mm, relu;
  add.cpu_us = 2, add.energy_mJ = 0.5;
  mm.cpu_us = 80, mm.energy_mJ = 16;
  relu.cpu_us = 3, relu.energy_mJ = 0.25;
  r.costs = {{0, add}, {1, mm}, {2, relu}};
  MissingMeasured measured;
  measured.failed[2] = "x; fix: y";
  predict_from_stages(r, {}, measured);
  EXPECT_DOUBLE_EQ(r.prediction.time_us, 2 * 2 + 80 + 3);
  ASSERT_TRUE(r.prediction.energy_mJ) << r.prediction.energy_why;
  EXPECT_DOUBLE_EQ(*r.prediction.energy_mJ, 2 * 0.5 + 16 + 0.25);
  EXPECT_EQ(r.prediction.calls, 4u);
  EXPECT_EQ(r.prediction.failed, measured.failed);
  EXPECT_FALSE(r.target_met);
}

TEST(PredictStages, ValidateOnFakesMeasuresWhatIsMissingAndTheStepTwice) {
  Stages s;
  FakeEnergyProbe probe(150, 0.01);
  FakeSession session(probe);
  FakeStoredCosts db;
  db.add("aten::relu", "", "self=f32[4]", made_up("aten::relu", "", "", 3, 150.0));
  PredictReport r;
  r.inventory = tiny_inventory();
  r.inputs.on_gpu = false;
  FakeModelSteps model(r.inventory);
  model.step_us = 90;
  run_predict_stages(s.cpu(), r, db, session, model);
  EXPECT_EQ(session.measured.size(), 2u);  // mm and add; relu was stored; no gap probe on the CPU
  EXPECT_TRUE(r.prediction.complete());
  ASSERT_TRUE(r.step);
  EXPECT_DOUBLE_EQ(r.step->time_us, 90);
  ASSERT_EQ(model.step_configs.size(), 2u);  // before the operator loops and after the paired rounds
  EXPECT_TRUE(model.step_configs[0].synchronous_calls);
  // The first sizes the operators' shares on a second of timing; the compared one gets the full budget.
  const double full_s = PredictOptions::validate().step_config.time.max_seconds;
  ASSERT_GT(full_s, 1.0);
  EXPECT_DOUBLE_EQ(model.step_configs[0].time.max_seconds, 1.0);
  EXPECT_DOUBLE_EQ(model.step_configs[1].time.max_seconds, full_s);
  EXPECT_TRUE(std::any_of(s.said.begin(), s.said.end(), [](const std::string& t) {
    return t.find("measuring the whole step of") == 0 && t.find("for the operators' shares of it") != std::string::npos;
  }));
  ASSERT_TRUE(r.paired);
  EXPECT_EQ(r.paired->predicted_us.size(), r.paired->measured_us.size());
  EXPECT_EQ(r.failures, 0u);
}

TEST(StorePolicy, StampsSettingsAndStopsOnAFullDatabaseKeepingTheMeasurement) {
  // POSIX, not std::filesystem: libtorch.so exports a remove_all that crashes.
  char tmpl[] = "/tmp/opcost_workflow_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, file = dir + "/store.db";
  {
    Database db(file);
    MeasurementStore store(&db);
    ReplayOptions replay;
    replay.device = "cpu";
    replay.seed = 7;
    const SettingsStamp stamp = settings_stamp(replay, MeasureConfig{});
    ASSERT_FALSE(stamp.settings.empty());
    ASSERT_FALSE(stamp.key.empty());
    ReplayOptions other = replay;
    other.seed = 8;
    EXPECT_NE(settings_stamp(other, MeasureConfig{}).key, stamp.key);  // the seed is part of the identity

    Measurement m = made_up("aten::relu", "", "self=f32[4]", 3, std::nullopt);
    m.env.device_name = "cpu";
    EXPECT_EQ(store.store(m, stamp), "");
    ASSERT_GE(m.db_id, 0);
    EXPECT_EQ(m.settings, stamp.settings);
    const auto back = db.get(m.db_id);
    ASSERT_TRUE(back);
    EXPECT_EQ(back->settings_key, stamp.key);

    // Full: SQLite may not grow the file past its current pages.
    db.connection().exec("PRAGMA max_page_count = 1");
    std::string refused;
    Measurement in_hand;
    for (int i = 0; i < 200 && refused.empty(); ++i) {
      in_hand = made_up("aten::relu", "", "self=f32[" + std::to_string(i + 5) + "]", 4, std::nullopt);
      in_hand.env.device_name = "cpu";
      in_hand.flags.assign(50, std::string(200, 'x'));  // rows large enough to need new pages
      refused = store.store(in_hand, stamp);
    }
    ASSERT_FALSE(refused.empty());
    EXPECT_EQ(store.stopped(), refused);
    EXPECT_EQ(in_hand.db_id, -1);
    EXPECT_DOUBLE_EQ(in_hand.time.per_call_us.mean, 4);  // the measurement in hand is intact
  }
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::remove((file + suffix).c_str());
  ::rmdir(dir.c_str());
}
