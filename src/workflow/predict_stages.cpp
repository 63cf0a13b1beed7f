// The stages of predict / validate / model (predict_stages.h).
#include "workflow/predict_stages.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "core/inventory/compiled_kernel_name.h"
#include "core/predict/op_weight.h"
#include "core/spec/spec_file.h"
#include "core/stats/summary.h"
#include "core/text/text.h"

namespace opcost {

namespace {

constexpr double kPairedSeconds = 1.0;
constexpr std::size_t kPairedMinRounds = 5, kPairedMaxRounds = 200;
// The most operators with kernels a group holds: Runner::measure_group runs them in loops of at
// most 16 split columns, where tiny operators of one kind share a column (pool_columns,
// core/energy/shared_windows.h): a group of 64 is one loop where they pool into 16 columns, four
// where none does. Each call's inputs stay allocated while its group runs: one out of memory
// beside the others is measured again alone (MeasuringSession::measure_group). A loop costs about a second however few
// its columns (a settle and 5 windows more than it has columns): on the H100, DenseNet-121's training step's groups of
// 32 took ~2 s of loops each.
constexpr std::size_t kSharedWindowOps = 64;
// `model` asks after each group whether the measured operators explain its target: there a
// group stays at 32, which measures fewer operators past it.
constexpr std::size_t kSharedWindowOpsToTarget = 32;
// Views (no energy loop) met while a group is gathered are measured apart, this many at a time:
// in the groups they left DenseNet's convolutions in loops of 4 to 26.
constexpr std::size_t kViewsTogether = 64;
// Operators are measured one by one, heaviest first, until the measured ones explain this share
// of the step's time (or, in a host-bound step whose GPU time never does, PredictOptions::own_loops
// were: --own-loops, 16 by default), and the rest (each a small share) share counter windows. A
// heavy operator keeps a loop of its own: alone it may reach the power cap, which its own loop
// sees and measures again at the step's duty cycle (MeasureConfig::step_power); a shared loop that
// reaches the cap while the step does not runs again duty-cycled (Runner::measure_group). Sharing
// after the 6 heaviest, when such a loop gave its operators loops of their own, made `model
// resnet50` 34.9 s against 40.0 s, and BERT's training step no longer answered within 80 s
// (bench/results/2026-11-27-h100-gpu-timed-shared-windows/, calls 7 and 8). With duty-cycled
// shared loops, --own-loops 4 made `model resnet50` 28.5 s against 29.6 s and validate's resnet50
// 34.5 s against 32.6 s (bench/results/2026-11-27-duty-cycled-shared-loops/): 16 stays the default.
// Ending the loops of their own at the first operator under 2% of the step saved DenseNet-121's
// training step (heaviest operator 1.1%) nothing on one H100: 67.7 s against 68.0 s, the shared
// loops running longer by what the 17 loops had cost, for their heavier operators' tighter
// targets; `model resnet50` at --own-loops 0 took 22.0 and 23.4 s against 23.0 and 23.3 s
// (bench/results/2026-11-27-h100-step-in-energy-loop/, calls d and e).
constexpr double kShareAfterExplained = 0.5;
// validate's first step measurement sizes the operators' shares and tells the power the step
// runs at; the one compared comes after the operators, with the full budget. A second of
// timing gives DenseNet-121's training step (55 ms) 18 samples, a median to a few percent.
constexpr double kStepBeforeOpsMaxS = 1.0;

// The share of the step's time that the measured operators' GPU time explains.
double explained_share(const Inventory& inv, const std::map<std::size_t, OpCost>& costs, const StepMeasurement& step) {
  double us = 0;
  for (const auto& [e, c] : costs) us += double(inv.entries[e].count) * c.gpu_us;
  return step.time_us > 0 ? us / step.time_us : 0;
}

// The op whose loop is almost all gaps between tiny kernels: its power is the GPU's power
// while it idles between kernels, which a model's gaps draw (not deep idle).
const char* kGapProbeOp = "aten::add";
const char* kGapProbeOverload = "Tensor";
const char* kGapProbeArgs = "self=f32[1] other=f32[1]";

// An error as one line: without LibTorch's C++ backtrace, nor the Python traceback ("\n\nAt:\n"
// and its frames) a Python kernel's exception carries, its other lines joined by "; ".
std::string one_line(const std::string& what) {
  std::string_view text = what;
  if (const auto at = text.find("\n\nAt:\n"); at != std::string_view::npos) text = text.substr(0, at);
  const std::string message = user_message(text);
  std::string out;
  bool newline = false;
  for (char c : message) {
    if (c == '\n') {
      newline = true;
      continue;
    }
    if (newline && !(c == ' ' || c == '\t')) {
      out += !out.empty() && out.back() == ':' ? " " : "; ";  // "rejected the arguments x:" then the reason
      newline = false;
    }
    if (!newline) out += c;
  }
  return printable_one_line(out, 1000);
}

// What the user can do about a call that failed when replayed alone, by the replay's kind of
// error. `rebuilding`: the error came from making its arguments (the argument language or the
// schema's binding), not from running the operator on them.
std::string fix_for(ReplayError::Kind kind, const std::string& signature, bool rebuilding) {
  if (kind == ReplayError::Kind::kUnknownOperator)
    return "register the operator in the process that runs opcost (import the package that defines it, or "
           "torch.ops.load_library its library) and run again";
  if (kind == ReplayError::Kind::kOutOfMemory)
    return "free memory on the device (other processes, a smaller batch) and run again";
  if (rebuilding && kind != ReplayError::Kind::kArgumentsRejected)
    return "opcost cannot rebuild this argument for a replay (opcost's limit, not the model's): report this line "
           "with the model's opcost and torch versions";
  return fmt::format(
      "the operator refused opcost's seeded random inputs; replay it alone to see the whole error (opcost.measure in "
      "Python, or `opcost measure {}`), giving an input that needs particular values a :range[low,high]",
      elide(signature, 300));
}

// The model, the layer and the call a failure belongs to, in one line with its fix.
std::string failure_line(const Inventory& inv, const InventoryEntry& e, const std::string& why,
                         const std::string& fix) {
  const std::string layer = e.layers.empty() || e.layers[0].empty() ? "(top)" : e.layers[0];
  const std::string more = e.layers.size() > 1 ? fmt::format(" (+{} more layers)", e.layers.size() - 1) : "";
  return fmt::format(
      "{}: layer {}{}: {}: {}; fix: {} (the rest of the model is measured and predicted, this call is listed as "
      "missing)",
      inv.model, layer, more, elide(e.signature(), 600), why, fix);
}

// One signature measured in the session; a signature that does not read back fails as the
// replay's refusals do (its arguments cannot be made).
SessionOutcome measure_signature(OperatorSession& session, const std::string& signature, const ReplayOptions& replay) {
  std::optional<OpCall> call;
  try {
    call = parse_call_line(signature, "inventory");
  } catch (const std::exception& e) {
    SessionOutcome out;
    out.kind = SessionOutcome::Kind::kBadInput;
    out.from_arguments = true;
    out.error = e.what();
    return out;
  }
  return session.measure(*call, replay);
}

// Several signatures measured together in the session (their energies sharing one loop's
// counter windows); one that does not read back fails alone, as in measure_signature.
std::vector<SessionOutcome> measure_signatures(OperatorSession& session, const std::vector<std::string>& signatures,
                                               const ReplayOptions& replay,
                                               const std::vector<std::optional<MeasureConfig::Whole>>& parts) {
  std::vector<SessionOutcome> outs(signatures.size());
  std::vector<OpCall> calls;
  std::vector<std::optional<MeasureConfig::Whole>> call_parts;
  std::vector<std::size_t> which;
  for (std::size_t i = 0; i < signatures.size(); ++i) {
    try {
      calls.push_back(parse_call_line(signatures[i], "inventory"));
    } catch (const std::exception& e) {
      outs[i].kind = SessionOutcome::Kind::kBadInput;
      outs[i].from_arguments = true;
      outs[i].error = e.what();
      continue;
    }
    call_parts.push_back(parts[i]);
    which.push_back(i);
  }
  if (calls.empty()) return outs;
  std::vector<SessionOutcome> measured = session.measure_group(calls, replay, call_parts);
  for (std::size_t k = 0; k < which.size() && k < measured.size(); ++k) outs[which[k]] = std::move(measured[k]);
  return outs;
}

ReplayOptions replay_for(const PredictContext& ctx, const std::string& autocast, const std::string& cache_mode) {
  ReplayOptions ro;
  ro.device = ctx.device;
  ro.autocast = autocast;
  ro.cache_mode = cache_mode;
  return ro;
}

// The measurement in hand, whether or not the database took it (one it refused is used, and
// counted as a failure); nullopt when the call failed.
std::optional<Measurement> kept(const SessionOutcome& out, const Notes& notes, std::size_t& failures) {
  if (!out.measurement) return std::nullopt;
  if (!out.not_stored.empty()) {
    ++failures;
    notes.failed(fmt::format("{} (the measurement is used, but not stored)", out.not_stored));
  }
  return out.measurement;
}

// A failed inventory entry said with its model, layer and fix; returns why; fix.
std::string entry_failure(const Inventory& inv, const InventoryEntry& en, const SessionOutcome& out,
                          const Notes& notes) {
  std::string why = one_line(out.error);
  // The replay's errors begin with the call (or its name) already: said once, by failure_line.
  for (const std::string& prefix : {en.signature() + ": ", en.display_name() + ": "})
    if (why.rfind(prefix, 0) == 0) {
      why.erase(0, prefix.size());
      break;
    }
  // A generated kernel that could not be replayed is still in the measured step and its trace;
  // one that ran out of memory gets that fix first.
  std::string fix = fix_for(out.error_kind, en.signature(), out.from_arguments);
  if (is_compiled_kernel_name(en.op))
    fix = out.error_kind == ReplayError::Kind::kOutOfMemory
              ? fmt::format("{}; or read its time and energy in the measured step", fix)
              : "read its time and energy in the measured step, or per layer with "
                "opcost.trace_model(model, x, energy=True)";
  notes.failed(failure_line(inv, en, why, fix));
  return fmt::format("{}; fix: {}", why, fix);
}

}  // namespace

std::string cache_mode_for(const InventoryEntry& e, const std::string& cache_option) {
  return cache_option == "auto" ? e.cache_mode() : cache_option;
}

bool explains(const Prediction& p, const StepMeasurement& step, double share) {
  // The model's own host code is in every prediction: at least one operator must be.
  const bool time_ok = p.measured_calls > 0 && p.time_us >= share * step.time_us;
  const bool energy_ok = !step.energy_mJ || (p.energy_mJ && *p.energy_mJ >= share * *step.energy_mJ);
  return time_ok && energy_ok;
}

LookedUp look_up_costs(const Inventory& inv, StoredCosts& stored, const std::string& cache_option, bool on_gpu) {
  LookedUp out;
  for (std::size_t i = 0; i < inv.entries.size(); ++i) {
    const auto& e = inv.entries[i];
    const StoredCallKey key{e.op, e.overload, e.args, inv.autocast, cache_mode_for(e, cache_option)};
    if (auto row = stored.newest(key)) {
      out.costs[i] = op_cost_from(*row, on_gpu);
    } else if (auto near = stored.ignoring_float_scalars(e, key)) {
      out.costs[i] = op_cost_from(near->measurement, on_gpu);
      out.costs[i].matched_args = near->stored_args;
    } else if (auto estimate = stored.estimated(e, key)) {
      out.costs[i] = op_cost_from(estimate->measurement, on_gpu);
      out.costs[i].estimated = true;
      out.costs[i].anchor_args = estimate->anchor_args;
    } else {
      out.missing.push_back(i);
    }
  }
  return out;
}

std::string gap_probe_signature() { return fmt::format("{}.{} {}", kGapProbeOp, kGapProbeOverload, kGapProbeArgs); }

GapProbe look_up_gap_probe(const PredictContext& ctx, StoredCosts& stored) {
  GapProbe out;
  if (ctx.on_gpu) out.measurement = stored.newest({kGapProbeOp, kGapProbeOverload, kGapProbeArgs, "", "warm"});
  return out;
}

GapProbe measure_gap_probe(const PredictContext& ctx, OperatorSession& session, const GapProbe& previous) {
  GapProbe out = previous;
  // Always a warm loop: it measures the GPU between kernels, not the op.
  const std::string signature = gap_probe_signature();
  const SessionOutcome o = measure_signature(session, signature, replay_for(ctx, "", "warm"));
  if (auto m = kept(o, ctx.notes, out.failures)) {
    out.measurement = std::move(m);
    return out;
  }
  ++out.failures;
  const std::string why = one_line(o.error);
  ctx.notes.failed(why.rfind(signature, 0) == 0 ? why : fmt::format("{}: {}", signature, why));
  return out;
}

void take_gap_power(PredictionInputs& pin, const GapProbe& probe) {
  if (!pin.on_gpu) return;
  const std::optional<Measurement>& m = probe.measurement;
  if (m && m->energy.available) {
    pin.gap_power_W = m->energy.power_W;
    // The average power comes from the same counter windows as the energy per call: the
    // same relative interval.
    const OpCost cost = op_cost_from(*m, true);
    if (cost.energy_mJ && *cost.energy_mJ > 0)
      pin.gap_power_ci_W = *pin.gap_power_W * cost.energy_ci_mJ.value_or(0) / *cost.energy_mJ;
  } else if (m) {  // measured, but without energy (a budget too short, NVML missing)
    pin.gap_power_why = fmt::format("the probe {} has no energy figure: {}", gap_probe_signature(),
                                    m->energy.unavailable_reason.empty() ? "unknown" : m->energy.unavailable_reason);
  } else {
    pin.gap_power_why =
        fmt::format("measure it with `opcost measure {}` or run `opcost validate`", gap_probe_signature());
  }
}

StepMeasured measure_whole_step(const PredictContext& ctx, const Inventory& inv, ModelSteps& model,
                                OperatorSession& session, bool before_ops) {
  ctx.notes.say(fmt::format("measuring the whole step of {} ({}){}", inv.model, inv.input,
                            before_ops ? ", for the operators' shares of it" : ""));
  MeasureConfig config = ctx.options.step_config;
  if (before_ops) config.time.max_seconds = std::min(config.time.max_seconds, kStepBeforeOpsMaxS);
  config.progress = ctx.notes.progress;
  Measurement m = model.measure_step(config);
  ctx.notes.done();
  StepMeasured out;
  const std::string not_stored = session.store(m, replay_for(ctx, inv.autocast, "warm"), config);
  out.stored = not_stored.empty();
  if (!out.stored) ctx.notes.failed(fmt::format("{} (the measurement is used, but not stored)", not_stored));
  out.step = step_measurement_of(m);
  return out;
}

namespace {

// The missing entries, heaviest first (core/predict/op_weight.h): `model` then needs fewer to
// reach its target.
std::vector<std::size_t> heaviest_first(const Inventory& inv, std::vector<std::size_t> todo) {
  std::vector<double> weight(inv.entries.size());
  for (std::size_t i : todo) {
    try {
      weight[i] = expected_weight(parse_call_line(inv.entries[i].signature(), "inventory"), inv.entries[i].count);
    } catch (const std::exception&) {
      weight[i] = 0;  // a signature that does not read back fails when measured, with its layer and fix
    }
  }
  std::stable_sort(todo.begin(), todo.end(), [&](auto a, auto b) { return weight[a] > weight[b]; });
  return todo;
}

// The loops the missing operators get: the full ones, then short ones once the measured
// operators explain `short_loops_after` of the step (PredictOptions::short_op_config).
class LoopChoice {
 public:
  LoopChoice(const PredictContext& ctx, OperatorSession& session) : ctx_(ctx), session_(session) {}
  bool may_switch() const { return !short_ && ctx_.options.short_loops_after < 1; }
  // Before each operator, with the prediction so far (`p`, when there is a step to judge by).
  void switch_if_explained(const Prediction& p, const std::optional<StepMeasurement>& step) {
    const PredictOptions& o = ctx_.options;
    // 0: short loops from the first operator (explains() needs one measured to say yes).
    if (!step || !may_switch() || (o.short_loops_after != 0 && !explains(p, *step, o.short_loops_after))) return;
    short_ = true;
    short_config_ = o.short_op_config();
    short_config_.step_power = step_power_;
    session_.reconfigure(short_config_);
    ctx_.notes.say(o.short_loops_after == 0
                       ? std::string("every operator gets short loops (--short-loops-after 0)")
                       : fmt::format("measured operators explain {:.0f}% of the step: the rest get short loops",
                                     100 * o.short_loops_after));
  }
  // With short loops, an operator's share of the step: its energy interval is what that share
  // allows (see ops_energy_rel_ci95). None otherwise.
  std::optional<MeasureConfig::Whole> part_for(const InventoryEntry& e,
                                               const std::optional<StepMeasurement>& step) const {
    if (!short_ || !step || ctx_.options.ops_energy_rel_ci95 <= 0) return std::nullopt;
    return MeasureConfig::Whole{step->time_us, double(e.count), ctx_.options.ops_energy_rel_ci95};
  }
  void for_entry(const InventoryEntry& e, const std::optional<StepMeasurement>& step) {
    const auto part = part_for(e, step);
    if (!part) return;
    MeasureConfig c = short_config_;
    c.part_of = part;
    c.energy_min_windows = std::min<std::size_t>(c.energy_min_windows, 2);
    session_.reconfigure(c);
  }
  // Whether the next operators share counter windows in groups (PredictOptions::shared_windows):
  // on a GPU, with short loops whose targets follow the operators' shares.
  bool groups(const std::optional<StepMeasurement>& step) const {
    const PredictOptions& o = ctx_.options;
    return short_ && step && ctx_.on_gpu && o.shared_windows && o.ops_energy_rel_ci95 > 0 && o.op_config.energy;
  }
  // A group's loops: the short ones from 2 counter periods on; each call's part goes with it.
  void for_group() {
    MeasureConfig c = short_config_;
    c.energy_min_windows = std::min<std::size_t>(c.energy_min_windows, 2);
    session_.reconfigure(c);
  }
  // The step's power and the gap power, for every operator's loops (full and short): an operator
  // that reaches the power cap alone while the step stays below it is measured again at the
  // step's duty cycle (MeasureConfig::step_power).
  void take_step_power(const PredictionInputs& pin, const std::optional<StepMeasurement>& step) {
    if (!ctx_.on_gpu || !ctx_.options.duty_cycle || !step || !step->energy_mJ || !step->energy_loop_time_us ||
        !(*step->energy_loop_time_us > 0))
      return;
    step_power_ = MeasureConfig::StepPower{*step->energy_mJ / *step->energy_loop_time_us * 1e3, pin.gap_power_W,
                                           pin.gap_power_ci_W};
    MeasureConfig c = ctx_.options.op_config;
    c.step_power = step_power_;
    session_.reconfigure(c);
  }

 private:
  const PredictContext& ctx_;
  OperatorSession& session_;
  bool short_ = false;
  MeasureConfig short_config_;
  std::optional<MeasureConfig::StepPower> step_power_;
};

}  // namespace

MissingMeasured measure_missing(const PredictContext& ctx, const Inventory& inv, const LookedUp& looked_up,
                                const PredictionInputs& pin, const std::optional<StepMeasurement>& step,
                                OperatorSession& session) {
  const PredictOptions& o = ctx.options;
  MissingMeasured out;
  out.costs = looked_up.costs;
  std::vector<std::size_t> remaining = heaviest_first(inv, looked_up.missing);
  const std::size_t total = remaining.size();
  LoopChoice loops(ctx, session);
  loops.take_step_power(pin, step);
  std::size_t done = 0;
  auto take = [&](std::size_t i, const SessionOutcome& m) {
    if (auto kept_m = kept(m, ctx.notes, out.failures)) {
      out.costs[i] = op_cost_from(*kept_m, ctx.on_gpu);
      out.measured.push_back(i);
    } else {
      ++out.failures;
      out.failed[i] = entry_failure(inv, inv.entries[i], m, ctx.notes);
    }
  };
  // Several entries measured together (their energies in shared counter windows, a view its host
  // time alone); the session measures one out of memory beside the others again alone.
  auto measure_together = [&](const std::vector<std::size_t>& group, const ReplayOptions& replay) {
    loops.for_group();
    std::vector<std::string> signatures;
    std::vector<std::optional<MeasureConfig::Whole>> parts;
    for (std::size_t i : group) {
      const InventoryEntry& e = inv.entries[i];
      ctx.notes.say(
          fmt::format("[{}/{}] {} ×{} ({})", ++done, total, e.signature(), e.count,
                      e.returns_views ? "returns views: its host time only" : "energy in shared counter windows"));
      signatures.push_back(e.signature());
      parts.push_back(loops.part_for(e, step));
    }
    const std::vector<SessionOutcome> outcomes = measure_signatures(session, signatures, replay, parts);
    for (std::size_t k = 0; k < group.size(); ++k) take(group[k], outcomes[k]);
  };
  while (!remaining.empty()) {
    if (!session.stopped().empty()) {
      out.stopped = session.stopped();
      ctx.notes.say("stopped measuring: " + out.stopped);
      break;
    }
    const bool predicting = step && (loops.may_switch() || o.target > 0);
    const Prediction p = predicting ? predict(inv, out.costs, pin) : Prediction{};
    loops.switch_if_explained(p, step);
    if (o.target > 0 && step && explains(p, *step, o.target)) {  // `model`: the measured ones explain enough
      ctx.notes.say(fmt::format("measured operators explain {:.1f}% of the step's time (target {:.0f}%); stopping",
                                100 * p.time_us / step->time_us, 100 * o.target));
      out.stopped_at_target = true;
      break;
    }
    // The next operators: one, or with shared counter windows the next (heaviest first) of the
    // same cache mode, so that they share replay options.
    const std::string mode = cache_mode_for(inv.entries[remaining.front()], o.cache);
    std::vector<std::size_t> group;
    const bool sharing = loops.groups(step) && (out.measured.size() >= o.own_loops ||
                                                explained_share(inv, out.costs, *step) >= kShareAfterExplained);
    // A view takes no place in a shared loop (it has no energy loop): those met on the way are
    // measured apart, so that DenseNet's hundreds of narrows do not split its convolutions over
    // more shared loops.
    const std::size_t most = !sharing ? 1 : o.target > 0 ? kSharedWindowOpsToTarget : kSharedWindowOps;
    const ReplayOptions replay = replay_for(ctx, inv.autocast, mode);
    std::vector<std::size_t> views;
    auto measure_views = [&] {
      measure_together(views, replay);
      views.clear();
    };
    for (auto it = remaining.begin(); it != remaining.end() && group.size() < most;) {
      if (cache_mode_for(inv.entries[*it], o.cache) != mode) {
        ++it;
        continue;
      }
      (sharing && inv.entries[*it].returns_views ? views : group).push_back(*it);
      it = remaining.erase(it);
      if (views.size() < kViewsTogether) continue;
      measure_views();
      // A stopped database ends the gathering (the loop's top says so); `model` asks about its
      // target again after at most these views and the operators gathered so far.
      if (!session.stopped().empty() || o.target > 0) break;
    }
    if (!views.empty() && session.stopped().empty()) measure_views();
    if (!session.stopped().empty()) continue;
    if (group.size() == 1) {
      const InventoryEntry& e = inv.entries[group[0]];
      loops.for_entry(e, step);
      ctx.notes.say(fmt::format("[{}/{}] {} ×{}", ++done, total, e.signature(), e.count));
      take(group[0], measure_signature(session, e.signature(), replay));
    } else if (!group.empty()) {
      measure_together(group, replay);
    }
  }
  if (out.stopped.empty()) out.stopped = session.stopped();
  return out;
}

PairedRounds paired_rounds(ModelSteps& model, Inventory& inv, std::vector<HostRound>& compared, const Notes& notes) {
  notes.say("timing the step and the host times of its calls in interleaved rounds");
  PairedRounds out;
  std::vector<HostRound> rounds;
  std::vector<double> plain_host;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed_s = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  while (rounds.size() < kPairedMinRounds || (elapsed_s() < kPairedSeconds && rounds.size() < kPairedMaxRounds)) {
    rounds.push_back(model.time_host_round());
    const HostRound& r = rounds.back();
    plain_host.push_back(r.plain_step_us);
    if (!same_calls(inv, r.observed)) continue;
    compared.push_back(r);
    out.measured_us.push_back(r.plain_wall_us);
  }
  out.seconds = elapsed_s();
  // The 10th to 90th percentile: one step held up by something else (a page fault, a
  // collection) is not the host's speed.
  std::sort(plain_host.begin(), plain_host.end());
  const std::size_t n = plain_host.size();
  out.host_drift = (plain_host[std::min(n - 1, 9 * n / 10)] - plain_host[n / 10]) / median_of(plain_host);
  take_host_times(inv, rounds);  // the prediction's host times: these rounds', next to the step
  return out;
}

Traced trace_launches_and_kernels(const PredictContext& ctx, const Inventory& inv, ModelSteps& model, double sync_us) {
  const PredictOptions& o = ctx.options;
  Traced out;
  out.kernels_why = !ctx.on_gpu ? "kernels are traced on a GPU only" : o.check_kernels ? "" : "not asked for";
  out.launches_why = !ctx.on_gpu ? "launches are traced on a GPU only" : o.trace_launches ? "" : "not asked for";
  if (!ctx.on_gpu || (!o.check_kernels && !o.trace_launches)) return out;
  std::optional<std::vector<CallKernels>> traced;
  try {
    ctx.notes.say("tracing the kernels of one step of the model");
    TracedStep step = model.trace_step();
    out.coverage.untied_device_us = step.untied_device_us;
    out.coverage.traced_device_us = step.untied_device_us;
    for (const auto& c : step.calls) out.coverage.traced_device_us += double(c.device_ns) * 1e-3;
    traced = std::move(step.calls);
  } catch (const std::exception& e) {
    out.kernels_why = out.launches_why = e.what();
    return out;
  }
  if (o.check_kernels) {
    try {
      ctx.notes.say("tracing the kernels of each operator replayed alone");
      out.kernels = compare_kernels(inv, *traced, model.kernels_alone(inv));
    } catch (const std::exception& e) {
      out.kernels_why = e.what();
    }
  }
  if (o.trace_launches) {
    try {
      out.launches = launch_profiles(inv, *traced);
      out.launches->untraced_latency_us = model.untraced_launch_latency_us(sync_us);
    } catch (const std::exception& e) {
      out.launches.reset();
      out.launches_why = e.what();
    }
  }
  return out;
}

namespace {

// Each compared round predicted with the host times of its own round (and, with traced
// launches, as if every call launched as it returned), once the prediction's inputs are final.
void predict_rounds(PairedRounds& paired, const Inventory& inv, const std::vector<HostRound>& compared,
                    const std::map<std::size_t, OpCost>& costs, const PredictionInputs& pin) {
  for (const HostRound& r : compared) {
    Inventory own = inv;
    take_host_times(own, {r});
    const Prediction p = predict(own, costs, pin);
    paired.predicted_us.push_back(p.time_us);
    if (p.time_us_launched_at_return) paired.predicted_at_return_us.push_back(*p.time_us_launched_at_return);
  }
}

void pair_energy(PredictReport& r) {
  const StepMeasurement& step = *r.step;
  if (!step.energy_mJ || !step.energy_loop_time_us || !r.prediction.energy_mJ) {
    r.paired_energy_why = "no energy figure on one side";
    return;
  }
  const auto scale = host_scale_matching(r.inventory, r.costs, r.inputs, *step.energy_loop_time_us);
  if (!scale) {
    r.paired_energy_why = fmt::format(
        "no host speed within 1/4 to 4 times this one makes the predicted time {:.0f} µs, the step's in its energy "
        "loop (a GPU-bound step's time hardly depends on the host)",
        *step.energy_loop_time_us);
    return;
  }
  PredictionInputs at = r.inputs;
  at.host_scale = *scale;
  const Prediction p = predict(r.inventory, r.costs, at);
  r.paired_energy =
      PairedEnergy{*step.energy_loop_time_us,    *scale, *p.energy_mJ, *step.energy_mJ, p.energy_ci_mJ.value_or(0),
                   step.energy_ci_mJ.value_or(0)};
}

// The host can change speed within seconds: the same step timed elsewhere shows whether the
// prediction's inputs saw the host the step saw.
void flag_drift(StepMeasurement& step, double other_us, const char* when) {
  const double change = step.time_us / other_us - 1;
  if (std::abs(change) > kStepDriftFlag)
    step.flags.push_back(fmt::format("drift: the step took {:.0f} µs {} and {:.0f} µs as measured ({:+.1f}%)", other_us,
                                     when, step.time_us, 100 * change));
}

void flag_drifts(StepMeasurement& step, const std::optional<PairedRounds>& paired, std::optional<double> before_ops) {
  if (paired && paired->rounds() > 0) flag_drift(step, median_of(paired->measured_us), "in the paired rounds");
  if (before_ops) {
    step.before_ops_time_us = before_ops;
    flag_drift(step, *before_ops, "before the operator loops");
  }
  // The step's time and its energy come from one loop where energy is measured, but the time's
  // samples start with the loop and the energy's windows after its settle (without energy, a
  // timing loop of its own): the host can change speed between them, and the energy then
  // belongs to another step time (see pair_energy).
  if (step.energy_loop_time_us) flag_drift(step, *step.energy_loop_time_us, "in its energy loop");
}

void take_step(PredictReport& r, const StepMeasured& s) {
  r.failures += s.stored ? 0 : 1;
  r.step = s.step;
}

}  // namespace

void predict_from_stages(PredictReport& r, const std::vector<HostRound>& compared, const MissingMeasured& measured) {
  if (r.paired) predict_rounds(*r.paired, r.inventory, compared, r.costs, r.inputs);
  r.prediction = predict(r.inventory, r.costs, r.inputs);
  r.prediction.coverage = r.coverage;
  r.prediction.failed = measured.failed;
  r.prediction.unmeasured_by_choice = measured.stopped_at_target;
  // Judged on the final prediction too: the last operator measured may be the one that meets it.
  r.target_met = r.target > 0 && r.step && explains(r.prediction, *r.step, r.target);
  if (r.step && r.target == 0) pair_energy(r);
}

void run_predict_stages(const PredictContext& ctx, PredictReport& r, StoredCosts& stored, OperatorSession& session,
                        ModelSteps& model) {
  const PredictOptions& o = ctx.options;
  const LookedUp looked_up = look_up_costs(r.inventory, stored, o.cache, ctx.on_gpu);
  r.costs = looked_up.costs;
  GapProbe probe = look_up_gap_probe(ctx, stored);
  const bool has_power = probe.measurement && probe.measurement->energy.available;
  if (ctx.on_gpu && !has_power && o.measure) {
    ctx.notes.say(fmt::format("measuring the GPU's power between kernels ({})", gap_probe_signature()));
    probe = measure_gap_probe(ctx, session, GapProbe{});
  }
  take_gap_power(r.inputs, probe);
  // `model` measures the step first (it decides when enough operators are measured);
  // `validate` measures it before and after the operator loops, and reports the drift.
  if (o.measure && (o.target > 0 || !looked_up.missing.empty()))
    take_step(r, measure_whole_step(ctx, r.inventory, model, session, o.target == 0));
  const std::optional<double> before_ops = o.target > 0 || !r.step ? std::nullopt : std::optional(r.step->time_us);
  r.target = o.target;
  MissingMeasured measured;
  measured.costs = r.costs;
  if (o.measure) measured = measure_missing(ctx, r.inventory, looked_up, r.inputs, r.step, session);
  r.costs = measured.costs;
  r.failures += probe.failures + measured.failures;
  // validate: the prediction's host times and the step in the same rounds, just before the
  // final step measurement, so that the prediction sees the host as the step does.
  std::vector<HostRound> compared;
  if (o.measure && o.target == 0 && !r.costs.empty()) {
    // The GPU's power between kernels moves with its temperature and clocks: measured again.
    if (ctx.on_gpu) {
      session.reconfigure(o.op_config);  // the probe's loop is never a short one
      ctx.notes.say("measuring the GPU's power between kernels again, beside the step");
      const GapProbe again = measure_gap_probe(ctx, session, probe);
      r.failures += again.failures - probe.failures;
      take_gap_power(r.inputs, again);
    }
    r.paired = paired_rounds(model, r.inventory, compared, ctx.notes);
  }
  if (o.measure && (!r.step || before_ops)) take_step(r, measure_whole_step(ctx, r.inventory, model, session));
  if (r.step) flag_drifts(*r.step, r.paired, before_ops);
  Traced traced = trace_launches_and_kernels(ctx, r.inventory, model, r.inputs.sync_us);
  r.kernels = std::move(traced.kernels);
  r.kernels_why = traced.kernels_why;
  r.coverage = traced.coverage;
  if (r.kernels)  // the runner found no device work in the call alone; the model's call had some
    for (std::size_t e : kernel_less_entries_with_kernels(*r.kernels, r.costs))
      ctx.notes.say(
          fmt::format("{}: measured as a call without device work ({}), but it launched kernels in the "
                      "traced step: the prediction charges it host time only",
                      r.inventory.entries[e].signature(), r.costs.at(e).device_work));
  r.launches = std::move(traced.launches);
  r.launches_why = traced.launches_why;
  if (r.launches) {
    r.inputs.launches_by_entry = r.launches->by_entry;
    r.inputs.launch_latency_us = r.launches->timeline_latency_us();
  }
  predict_from_stages(r, compared, measured);
}

}  // namespace opcost
