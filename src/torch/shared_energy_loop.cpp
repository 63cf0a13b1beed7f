// Runner::measure_group: several small operators' energies from ONE loop (issue 25). The NVML
// counter updates every ~100 ms, so an energy loop of its own costs each operator a settle, the
// wait for the counter's next update and a few periods. Here the group's operators run one after
// another in segments of a fraction of a period, back to back, after one settle; each counter
// window then holds a known mix of calls, and the least-squares split of the windows' energies
// (core/energy/shared_windows.h) gives each operator's energy per call with its interval. An
// operator the split cannot tell apart gets its own loop, as measure() would have run it.
#include <ATen/DeviceAccelerator.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/Event.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/Exception.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <stdexcept>

#include "core/energy/duty_cycle.h"
#include "core/energy/monitor.h"
#include "core/energy/nvml.h"
#include "core/energy/shared_windows.h"
#include "core/stats/stopping.h"
#include "torch/group_loop.h"
#include "torch/runner.h"

namespace opcost {

namespace {

// The shared loop's time after its settle: a base for the first windows and about 1.5 counter
// periods per column of the split (it needs more windows than unknowns, and the intervals narrow
// with the windows beyond that), with at most 16 columns to a loop: a larger group runs as
// several loops (pooled columns, core/energy/shared_windows.h, hold several operators each).
constexpr double kSharedBaseS = 0.2, kSharedPerOpS = 0.15;
constexpr std::size_t kSharedMaxColumns = 16;
// Calls that are no part of a whole (a sweep's items measured together, workflow/sweep.cpp) each
// keep their own energy target (±2% by default), not a share of a step's: their loop runs
// segments of 1 to 3 counter periods, so that most windows hold one operator alone, and up to
// kStandalonePerColumnS a column before it stops short of the targets. On the H100, the conv2d
// grid's 264 items in loops of a model's shape (0.15 s a column, segments under a period) took
// 0.34 GPU-s each, but their energy intervals' median was ±12% (±2% targets); with these, ±2.6%
// at 0.78 GPU-s (bench/results/2026-11-27-h100-sweep-groups/). On a synthetic trace of one
// length, segments 4 times as long narrowed every interval (shared_windows_test).
constexpr double kStandaloneSegmentPeriods = 4.0, kStandalonePerColumnS = 0.5;
// Windows left out of the split are made up for by a longer loop, up to this many times its
// budget (and never longer than the loops of their own it saves): at ~0.15 s per operator even
// three budgets cost less than a loop of its own for each (a settle and several counter periods:
// ~0.7 s an operator on the H100). On the H100 a third to half of a group's windows were left
// out (an NVML read of ~3 ms blurs edges; batches stall).
constexpr double kSharedMostBudgets = 3.0;
// The fewest residual degrees of freedom (windows beyond the operators and the lag) before the
// loop stops: its intervals rest on σ² from those residuals, and a loop that stops the first
// time every interval looks narrow enough picks a σ² read low by chance. On the H100, loops that
// stopped at 1-2 (residual "0.0%") gave intervals that 4 of 12 operators' own loops fell out of.
constexpr std::size_t kSharedMinResidualDof = 4;
// A counter that updates faster than this (RAPL: ~1 ms) gives every operator enough windows of
// its own within its settle: sharing them would only add the split's error.
constexpr double kSlowCounterS = 0.01;

// What the split left out, for a row's method ("" for nothing).
std::string left_out_text(const LeftOutWindows& left) {
  std::string s;
  if (left.blurred) s += fmt::format("; {} window(s) left out: the counter's update was seen late", left.blurred);
  if (left.stalled) s += fmt::format("; {} window(s) left out around a batch that stalled", left.stalled);
  return s;
}

// The energy interval call `m` aims at: its share of the whole's, or the configured target.
double target_rel_ci95(const MeasureConfig& cfg, const std::optional<MeasureConfig::Whole>& part,
                       const Measurement& m) {
  if (!is_part_of_whole(part)) return cfg.energy_target_rel_ci95;
  return part_rel_ci95(part->energy_rel_ci95, part->calls * m.time.per_call_us.median / part->time_us);
}

std::string target_text(const MeasureConfig& cfg, const std::optional<MeasureConfig::Whole>& part,
                        const Measurement& m) {
  if (!is_part_of_whole(part)) return "";
  return fmt::format(" to a ±{:.1f}% target ({:.2f}% of the whole's time)", 100 * target_rel_ci95(cfg, part, m),
                     100 * part->calls * m.time.per_call_us.median / part->time_us);
}

void add_missing(std::vector<std::string>& flags, std::vector<std::string> more) {
  for (auto& f : more)
    if (std::find(flags.begin(), flags.end(), f) == flags.end()) flags.push_back(std::move(f));
}

// The device's state around the energy loop decides the hygiene flags: the timing loop's flags
// stay, the energy loop's are added.
// `gap_W`: the GPU's power between kernels, at which the row's own loop gaps are charged.
void flag_after_energy(Measurement& m, std::optional<double> gap_W) {
  add_missing(m.flags, hygiene_flags(m.before, m.after, m.during));
  add_missing(m.flags, measurement_flags(m, gap_W));
}

// As Runner::measure reports it: one line, typed, so that the caller says what to do about it.
ReplayError out_of_memory(const PreparedCall& call, const c10::OutOfMemoryError& e) {
  const std::string what = e.what_without_backtrace();
  return ReplayError(fmt::format("{}{}: {}", call.op(), call.overload().empty() ? "" : "." + call.overload(),
                                 what.substr(0, what.find('\n'))),
                     ReplayError::Kind::kOutOfMemory);
}

// A pooled member's energy per call: its column's scaled by `factor` (to the member's own time
// per call), its interval widened by the spread of members' powers about their pool's
// (kPooledMemberRelCi95, in quadrature).
Summary pooled_member(Summary s, double factor) {
  for (double* v : {&s.mean, &s.median, &s.min, &s.max, &s.clipped_mean, &s.stdev, &s.ci95_low, &s.ci95_high})
    *v *= factor;
  const double column_rel = s.mean > 0 ? s.ci95_half_width() / s.mean : 0.0;
  return with_ci95_half_width(s, s.mean * std::hypot(column_rel, kPooledMemberRelCi95));
}

// A pooled member's method: whose power its energy is.
std::string pooled_text(std::size_t members, const Measurement& m) {
  return fmt::format(
      "; its power pooled with {} other {} call(s) of tiny shares (targets of ±{:.0f}% or wider) and times "
      "within 2x, run in the step's mix: that power over its own time per call, not its own power, its "
      "interval widened by ±{:.0f}% for the difference",
      members - 1, m.display_name(), 100 * kPoolTargetRelCi95, 100 * kPooledMemberRelCi95);
}

// The shared calls (indices into `ms`) pooled and packed into loops of at most
// kSharedMaxColumns split columns: calls of one operator and dtype pool (pool_columns' rule on
// their timing loops' GPU times: a member far from the others in size draws another power).
std::vector<ColumnLoop> shared_loops(const std::vector<std::size_t>& shared, const std::vector<Measurement*>& ms,
                                     const std::vector<double>& targets) {
  std::vector<std::string> keys;
  std::vector<double> times_s;
  for (std::size_t i : shared) {
    keys.push_back(ms[i]->display_name() + " " + ms[i]->dtype);
    times_s.push_back(std::max(ms[i]->time.per_call_us.median, 0.1) * 1e-6);
  }
  std::vector<ColumnLoop> loops = pack_columns(pool_columns(keys, targets, times_s), kSharedMaxColumns);
  for (auto& loop : loops)
    for (auto& k : loop.ops) k = shared[k];
  return loops;
}

// The loop's split so far and each operator's own pace in it (a pooled member's time per call),
// made together beside the loop.
struct LoopFit {
  LaggedSplit lagged;
  std::vector<OwnPace> paces;
};
// `gap`: a duty-cycled loop's, whose gaps are one more operator of the timeline.
LoopFit fit_loop(const std::vector<CounterEdge>& edges, const std::vector<GroupCompletion>& timeline,
                 const SplitColumns& columns, double settle_end_s, double period_s, const GapCharge* gap) {
  const std::size_t ops = columns.of_op.size();
  LoopFit fit{split_with_counter_lag(edges, timeline, columns, settle_end_s, period_s, kCounterLagStepS, gap),
              own_paces(timeline, ops + (gap ? 1 : 0), settle_end_s)};
  fit.paces.resize(ops);
  return fit;
}

// An exception's message without LibTorch's backtrace, for a row's method.
std::string first_line(const std::exception& e) {
  const auto* torch_error = dynamic_cast<const c10::Error*>(&e);
  const std::string what = torch_error ? torch_error->what_without_backtrace() : e.what();
  return what.substr(0, what.find('\n'));
}

}  // namespace

bool Runner::shares_counter_windows() {
  // The idle-power probe reads the counter's period (and is what every energy figure needs).
  return probe_ && idle_power() && counter_period_s_ && *counter_period_s_ >= kSlowCounterS;
}

std::vector<Runner::GroupResult> Runner::measure_group(const std::vector<PreparedCall*>& calls,
                                                       const std::vector<std::optional<MeasureConfig::Whole>>& parts) {
  if (parts.size() != calls.size())
    throw std::invalid_argument(
        fmt::format("Runner::measure_group: {} calls but {} parts", calls.size(), parts.size()));
  c10::InferenceMode inference;
  const c10::DeviceGuard device_guard(device_.is_cuda() ? c10::Device(c10::kCUDA, c10::DeviceIndex(index_))
                                                        : c10::Device(c10::kCPU));
  // The group's settings are put back however it ends.
  struct Restore {
    Runner& r;
    std::optional<MeasureConfig::Whole> part_of;
    ~Restore() {
      r.cfg_.part_of = part_of;
      r.energy_deferred_ = false;
      r.watch_ = nullptr;
    }
  } restore{*this, cfg_.part_of};
  std::vector<GroupResult> out(calls.size());
  const bool share = calls.size() >= 2 && !cfg_.synchronous_calls && shares_counter_windows();
  // Each call timed (and, when the counter is fast, measured whole) as measure() does.
  energy_deferred_ = share;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    cfg_.part_of = parts[i];
    try {
      out[i].measurement = measure(*calls[i]);
    } catch (...) {
      out[i].error = std::current_exception();
    }
  }
  energy_deferred_ = false;
  if (!share) return out;
  // Those whose energy loop was deferred: no figure yet and no reason for none (a call without
  // device work, or energy switched off, has one or the other).
  std::vector<std::size_t> shared, alone;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const auto& m = out[i].measurement;
    if (!m || m->energy.available || !m->energy.unavailable_reason.empty()) continue;
    // A call that waits for the device cannot run back to back with the others.
    (m->waits_for_device ? alone : shared).push_back(i);
  }
  // Groups larger than a loop's columns allow run as several loops.
  std::vector<Measurement*> ms;
  std::vector<double> targets;
  for (auto& r : out) ms.push_back(r.measurement ? &*r.measurement : nullptr);
  // Calls of no whole (a sweep's items) are never pooled: each is a row of its own figure, not a
  // tiny share of a step (a pooled member's energy is its column's power over its time). A
  // target of 0 is strict: pool_columns gives it a column of its own.
  for (std::size_t i : shared)
    targets.push_back(is_part_of_whole(parts[i]) ? target_rel_ci95(cfg_, parts[i], *ms[i]) : 0.0);
  for (const ColumnLoop& packed : shared_loops(shared, ms, targets)) {
    const std::vector<std::size_t>& loop = packed.ops;
    if (loop.size() < 2) {
      alone.insert(alone.end(), loop.begin(), loop.end());
      continue;
    }
    std::vector<PreparedCall*> group_calls;
    std::vector<Measurement*> group_ms;
    std::vector<std::optional<MeasureConfig::Whole>> group_parts;
    for (std::size_t i : loop) {
      group_calls.push_back(calls[i]);
      group_ms.push_back(ms[i]);
      group_parts.push_back(parts[i]);
    }
    try {
      for (std::size_t k : measure_energy_shared(group_calls, group_ms, group_parts, packed.columns))
        alone.push_back(loop[k]);
    } catch (const std::exception& e) {
      // The shared loop failed as a whole (out of memory, abandoned): each gets its own loop,
      // where a failure is that call's alone.
      watch_ = nullptr;
      for (std::size_t i : loop) {
        out[i].measurement->method += fmt::format("; the shared energy loop failed ({})", first_line(e));
        alone.push_back(i);
      }
    }
  }
  std::sort(alone.begin(), alone.end());
  for (std::size_t i : alone) {
    Measurement& m = *out[i].measurement;
    cfg_.part_of = parts[i];
    Watchdog watch(fmt::format("{} {}", m.display_name(), m.args), watchdog_options(), cfg_.progress);
    watch_ = &watch;
    const double t0 = now_s();
    try {
      try {
        measure_energy(*calls[i], m, std::max(m.time.per_call_us.median, m.time.host_us_per_call) * 1e-6, nullptr);
        // At the power cap alone while the step is not: again at the step's duty cycle.
        measure_energy_duty_cycled(*calls[i], m);
      } catch (const c10::OutOfMemoryError& e) {
        throw out_of_memory(*calls[i], e);
      }
    } catch (...) {
      out[i].measurement.reset();
      out[i].error = std::current_exception();
      watch_ = nullptr;
      continue;
    }
    watch_ = nullptr;
    m.after = probe_->state(true);
    if (m.energy.available)
      m.method += fmt::format("; energy from {} over {} aligned windows{}", m.energy.source, m.energy.windows,
                              target_text(cfg_, parts[i], m));
    flag_after_energy(m, cfg_.step_power ? cfg_.step_power->gap_W : std::nullopt);
    m.total_seconds += now_s() - t0;
  }
  return out;
}

std::vector<std::size_t> Runner::measure_energy_shared(const std::vector<PreparedCall*>& calls,
                                                       const std::vector<Measurement*>& ms,
                                                       const std::vector<std::optional<MeasureConfig::Whole>>& parts,
                                                       const SplitColumns& columns) {
  const std::size_t ops = calls.size();
  const double period_s = *counter_period_s_;
  const double idle_W = *idle_power();
  if (columns.of_op.size() != ops)
    throw std::invalid_argument(
        fmt::format("Runner::measure_energy_shared: {} calls but columns for {}", ops, columns.of_op.size()));
  std::vector<double> per_call_s(ops), target(ops), weight(ops);
  std::vector<std::size_t> batch(ops);
  // A host-bound operator's calls replay from a CUDA graph, as in a loop of its own
  // (Runner::energy_graph): issued one by one they leave the GPU idle between its kernels, and
  // its share of the windows then holds that idle time's energy too (on the H100, a bf16 bmm of
  // 3.8 µs issued every 11 µs read 3.4× its own loop's energy per call). Declared before the
  // loop: its batches in flight are drained before the graphs are destroyed.
  std::vector<std::unique_ptr<GraphBatch>> graphs(ops);
  for (std::size_t i = 0; i < ops; ++i) {
    double gpu_us = 0;
    const double capture_start_s = now_s();
    graphs[i] = energy_graph(*calls[i], *ms[i], nullptr, gpu_us);
    ms[i]->total_seconds += now_s() - capture_start_s;  // its row's seconds hold its capture too
    // Its pace in a loop: its GPU time, or (issued call by call) its host issue time when that
    // is longer.
    per_call_s[i] =
        std::max({ms[i]->time.per_call_us.median, graphs[i] ? 0.0 : ms[i]->time.host_us_per_call, 0.1}) * 1e-6;
    target[i] = target_rel_ci95(cfg_, parts[i], *ms[i]);
    batch[i] =
        graphs[i] ? graphs[i]->calls()
                  : std::clamp<std::size_t>(std::size_t(0.002 / per_call_s[i]), 1, 2000);  // ~2 ms, as measure_energy's
    // Its time in the step (one call where it is no part of one): a pooled column's mix.
    weight[i] = per_call_s[i] * (parts[i] && parts[i]->calls > 0 ? parts[i]->calls : 1.0);
  }
  const std::size_t cols = columns.columns();
  std::vector<double> column_target(cols, 1.0);
  for (std::size_t c = 0; c < cols; ++c)
    for (std::size_t i : columns.members[c]) column_target[c] = std::min(column_target[c], target[i]);
  const bool standalone = std::none_of(parts.begin(), parts.end(), is_part_of_whole);
  const double segment_periods = standalone ? kStandaloneSegmentPeriods : 1.0;
  const double budget_s = std::min(kSharedBaseS + (standalone ? kStandalonePerColumnS : kSharedPerOpS) * double(cols),
                                   cfg_.energy_max_s * double(cols));
  // The most the loop runs on for windows it left out: kSharedMostBudgets budgets, and no more
  // than the operators' own loops would take after it (each a settle and its energy budget).
  const double extended_budget_s =
      std::min(kSharedMostBudgets * budget_s, budget_s + double(ops) * (cfg_.energy_settle_s + cfg_.energy_max_s));
  const double capped_factor = cfg_.energy_max_s > 0 ? std::max(1.0, cfg_.energy_max_capped_s / cfg_.energy_max_s) : 1;
  const DeviceState before = probe_->state(false);
  // A loop that reaches the power cap while the model's step runs below it measures its
  // operators at the capped clocks (on the H100, resnet50's heavier convolutions split in such a
  // loop read 710-790 W, over the 700 W limit). It stops as soon as it sees the cap, and runs
  // again duty-cycled (GapCharge in core/energy/shared_windows.h): about 1 ms of each batch, then
  // the gap probe's work for a gap that brings the loop to the step's power, as one operator's
  // loop at the cap is measured again (measure_energy_duty_cycled). Where no duty cycle can be
  // had, each operator gets a loop of its own. Before, each got one: resnet50 b32's 15 shared
  // convolutions took 12 s in loops of their own (9 of them duty-cycled) after 0.3 s shared.
  const bool below_cap = cfg_.step_power && step_below_cap(cfg_.step_power->step_W, before.power_limit_W);
  const std::string source = probe_->name() + "-energy-counter";

  // One run of the loop: plain, or duty-cycled at `busy_share` with `gap` charging its gaps.
  struct LoopRun {
    LoopFit fit;
    StateSummary during;
    std::vector<CounterEdge> edges;
    std::vector<PowerSample> power_trace, sm_clock_trace;  // kept where cfg_.keep_power_trace
    double start_s = 0, looped_s = 0;
    bool capped_unlike_step = false;  // a plain run that saw the cap (no split was made)
  };
  auto run_loop = [&](SegmentBatches batches, const GapCharge* gap, double busy_share) {
    const bool duty = gap != nullptr;
    // A duty-cycled loop's windows hold `busy_share` of their time in the operators' calls: it
    // runs longer for as many of their seconds, up to twice.
    const double stretch = duty ? std::min(2.0, 1 / busy_share) : 1.0;
    const double loop_budget_s = budget_s * stretch, loop_extended_s = extended_budget_s * stretch;
    // Enough segments for the longest loop (each 0.25 to 0.75 of a period, times segment_periods,
    // gaps included); the loop wraps around them if the counter runs slow.
    std::vector<double> segment_per_call_s = batches.column_per_call_s();
    if (duty)
      for (double& t : segment_per_call_s) t /= busy_share;
    const auto cycles = std::size_t(std::ceil((cfg_.energy_settle_s + loop_extended_s * (duty ? 1.0 : capped_factor)) /
                                              (0.5 * period_s * segment_periods * double(cols)))) +
                        1;
    const std::vector<Segment> segments = plan_segments(segment_per_call_s, period_s, cycles, segment_periods);
    Watchdog::Options wo;
    wo.budget_s = 2.0 + cfg_.energy_settle_s + loop_extended_s * (duty ? 1.0 : capped_factor);
    wo.abandon_factor = cfg_.abandon_factor;
    Watchdog watch(fmt::format("{} operators in shared counter windows{}", ops, duty ? ", duty-cycled" : ""), wo,
                   cfg_.progress);
    watch_ = &watch;
    // The gaps do what the gap probe does: a launch-bound aten::add of f32[1].
    const at::Tensor tiny =
        duty ? at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(at::kCUDA, c10::DeviceIndex(index_)))
             : at::Tensor();
    GroupLoop loop(device_.is_cuda(), c10::DeviceIndex(index_), ops);
    // Abandoned by a throw (the watchdog, a call, the split), the loop's batches still in flight
    // are waited for: the loops of their own that follow must not settle beside them.
    struct DrainOnThrow {
      GroupLoop& loop;
      bool finished = false;
      ~DrainOnThrow() {
        if (finished) return;
        try {
          loop.finish();
        } catch (...) {  // a device already failing: its own error is the one reported
        }
      }
    } drain{loop};
    LoopRun run;
    EnergyMonitor monitor(*probe_);
    auto saw_cap = [&] { return (monitor.state_summary().throttle_reasons_seen & throttle::kSwPowerCap) != 0; };
    monitor.start();
    run.start_s = now_s();
    const double settle_end = run.start_s + cfg_.energy_settle_s;
    std::size_t edges_seen = 0, windows_seen = 0, lost_windows = 0;
    bool stop = false;
    std::future<LoopFit> pending;  // the split of the loop so far, computed beside it
    // Every pooled member has batches enough for its own time per call (a member short of them
    // would get a loop of its own after this one).
    auto members_paced = [&](const std::vector<OwnPace>& paces) {
      for (std::size_t i = 0; i < ops; ++i)
        if (columns.pooled(columns.of_op[i]) && paces[i].batches < kMinPooledMemberBatches) return false;
      return true;
    };
    auto identified_to_target = [&](const SharedSplit& split) {
      for (std::size_t c = 0; c < cols; ++c)
        if (split.per_call_mJ[c].n == 0 || split.per_call_mJ[c].rel_ci95() > column_target[c]) return false;
      return true;
    };
    for (std::size_t s = 0; !stop; ++s) {
      // The segment's calls of its column: one operator's, or its pooled members' in turn.
      batches.start(segments[s % segments.size()]);
      while (!stop) {
        const std::optional<Segment> next = batches.next();
        if (!next) break;
        const std::size_t op = next->op;
        if (duty) {
          loop.issue_burst(*calls[op], op, next->calls, graphs[op].get(), ops);
          loop.gap(ops, busy_share, tiny);
        } else {
          loop.issue_batch(*calls[op], op, next->calls, graphs[op].get());
        }
        batches.ran(op, double(graphs[op] ? graphs[op]->calls() : next->calls));
        watch.check("measuring energy in shared windows", windows_seen, "windows");
        const double t = now_s();
        if (t < settle_end + period_s) continue;
        bool enough = false;
        if (pending.valid() && pending.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
          const LoopFit loop_fit = pending.get();
          const LaggedSplit& fit = loop_fit.lagged;
          windows_seen = fit.windows.size();
          lost_windows = fit.left_out.blurred + fit.left_out.stalled;
          // Identified means more windows than unknowns (split_shared_energy's rule); enough,
          // kSharedMinResidualDof more.
          enough = fit.windows.size() >= std::max(cfg_.energy_min_windows, cols + 1 + kSharedMinResidualDof) &&
                   identified_to_target(fit.split) && members_paced(loop_fit.paces);
          // Asked once a counter period, as the split comes in: the loop itself stays lean. A
          // duty-cycled loop that still touches the cap runs on (the row's flags carry what its
          // monitor saw).
          run.capped_unlike_step = !duty && below_cap && saw_cap();
        }
        // Each window left out (an edge seen late, a stall) is made up for, within what the
        // loops of their own it saves would take (loop_extended_s). Past it, the monitor is
        // asked whether the loop ran at the power cap (its budget then stretches; not a duty-cycled
        // one's: the GPU is often still capped from the plain run as it starts, and its stretch is
        // in loop_s already).
        const double loop_s = std::min(loop_extended_s, loop_budget_s + double(lost_windows) * period_s);
        stop = enough || run.capped_unlike_step ||
               (t - settle_end > loop_s && (duty || t - settle_end > loop_s * capped_factor || !saw_cap()));
        // Split again when the counter has moved, beside the loop: between two of its batches
        // the split (21 lags) held the host while the GPU ran out of work (on the H100, 11-12 of
        // a 12-operator group's ~20 windows were left out as stalled; 5 with the split beside it).
        if (const std::size_t edges = stop || pending.valid() ? edges_seen : monitor.edge_count();
            edges != edges_seen) {
          edges_seen = edges;
          pending = std::async(std::launch::async,
                               [edges = monitor.edges(), timeline = loop.timeline(), &columns, settle_end, period_s,
                                gap] { return fit_loop(edges, timeline, columns, settle_end, period_s, gap); });
        }
      }
    }
    if (pending.valid()) pending.wait();  // its copies are its own; only its thread is waited for
    loop.finish();
    drain.finished = true;
    monitor.stop();
    watch_ = nullptr;
    run.looped_s = now_s() - run.start_s;
    run.during = monitor.state_summary();
    run.edges = monitor.edges();
    if (cfg_.keep_power_trace) {
      run.power_trace = monitor.power_trace();
      run.sm_clock_trace = monitor.sm_clock_trace();
    }
    if (!duty) run.capped_unlike_step = below_cap && (run.during.throttle_reasons_seen & throttle::kSwPowerCap);
    for (std::size_t i = 0; i < ops; ++i) {
      ms[i]->total_calls += loop.issued(i);
      ms[i]->total_seconds += run.looped_s / double(ops);  // the loop's time, shared as the loop is
    }
    // At the cap, no split is used: none is made.
    if (!run.capped_unlike_step) run.fit = fit_loop(run.edges, loop.timeline(), columns, settle_end, period_s, gap);
    return run;
  };

  LoopRun run = run_loop(SegmentBatches(columns, per_call_s, weight, batch), nullptr, 0);
  // At the cap while the step is not: again duty-cycled, each batch about kBurstBusyS.
  std::optional<GapCharge> gap;
  std::string duty_text;
  if (run.capped_unlike_step && may_duty_cycle(*ms.front())) {
    DutyCycleInputs in;
    in.power_limit_W = before.power_limit_W;
    in.sw_power_cap_seen = true;
    // At the cap the loop drew the limit at least (its edges may hold the settle's ramp from idle,
    // or a burst over it): too low a busy power would leave the duty-cycled loop at the cap.
    in.loop_power_W = std::max(average_power_W(run.edges).value_or(0), before.power_limit_W.value_or(0));
    in.step_power_W = cfg_.step_power->step_W;
    in.gap_power_W = cfg_.step_power->gap_W;
    const DutyCyclePlan plan = plan_duty_cycle(in);
    if (plan.run) {
      std::vector<std::size_t> bursts(ops);
      for (std::size_t i = 0; i < ops; ++i) bursts[i] = graphs[i] ? graphs[i]->calls() : calls_per_burst(per_call_s[i]);
      gap = GapCharge{*cfg_.step_power->gap_W, cfg_.step_power->gap_ci_W};
      run = run_loop(SegmentBatches(columns, per_call_s, weight, bursts), &*gap, plan.busy_share);
      const LaggedSplit& l = run.fit.lagged;
      const double window_mJ = [&] {
        double e = 0;
        for (const auto& w : l.windows) e += w.energy_mJ;
        return e + l.gap_mJ;
      }();
      // Whether it still touched the cap is not said: its monitor sees the cap the plain run left
      // as it starts (every such loop on the H100 read "still reaching the power cap", the one at
      // 20% busy and 197 W too), and the row's flags carry what the monitor saw.
      duty_text = fmt::format(
          "; the {} operators' shared loop ran at the power cap ({:.0f} W), the model's step at {:.0f} W: measured "
          "again in one duty-cycled loop, each batch of about {:.0f} ms followed by the gap probe's aten::add f32[1] "
          "for a {:.0f}% busy share ({:.0f}% achieved), each window's energy less {:.0f} W × its gap time ({:.0f}% "
          "of the energy taken off as gaps) before the split",
          ops, in.loop_power_W, in.step_power_W.value_or(0), 1e3 * kBurstBusyS, 100 * plan.busy_share,
          100 * l.busy_share(), gap->power_W, window_mJ > 0 ? 100 * l.gap_mJ / window_mJ : 0.0);
    }  // else each operator's own loop that reaches the cap says why it was not duty-cycled
  }
  for (std::size_t i = 0; i < ops; ++i)
    if (graphs[i]) {
      graphs[i]->release();  // its memory pool back to the allocator (one eager call)
      ms[i]->total_calls += 1;
    }
  const LaggedSplit& lagged = run.fit.lagged;
  // A pooled member's own time per call in the loop (its column's power over it is its energy).
  const std::vector<OwnPace>& own = run.fit.paces;
  const auto& windows = lagged.windows;
  const SharedSplit& split = lagged.split;
  double window_s = 0;
  for (const auto& w : windows) window_s += w.seconds();
  const DeviceState after = probe_->state(true);

  std::vector<std::size_t> unidentified;
  for (std::size_t i = 0; i < ops; ++i) {
    Measurement& m = *ms[i];
    m.during = run.during;
    if (cfg_.keep_power_trace) {
      m.power_trace = run.power_trace;
      m.sm_clock_trace = run.sm_clock_trace;
    }
    // The group's device state: its loop ran after every call's timing.
    if (!m.before.sm_clock_MHz) m.before = before;
    m.after = after;
    if (run.capped_unlike_step) {  // a plain run, no duty cycle to be had (a duty-cycled run never is)
      m.method += fmt::format(
          "; the {} operators' shared loop ran at the power cap, the model's step below it: its own loop", ops);
      unidentified.push_back(i);
      continue;
    }
    m.method += duty_text;
    const std::size_t c = columns.of_op[i];
    const bool pooled = columns.pooled(c);
    const Summary& fit = split.per_call_mJ[c];
    if (fit.n > 0 && pooled && own[i].batches < kMinPooledMemberBatches) {
      m.method += fmt::format(
          "; pooled in the {} operators' shared loop, it ran {} batch(es) outside the settle and its stalls (its "
          "own time per call needs {}): its own loop",
          ops, own[i].batches, kMinPooledMemberBatches);
      unidentified.push_back(i);
      continue;
    }
    if (fit.n == 0) {
      // The split numbers its columns, which are the operators unless some pooled.
      m.method += fmt::format(
          "; the {} operators' shared counter windows could not tell it apart ({}{}{}): its own loop", ops,
          cols < ops ? fmt::format("its {} columns numbered: ", cols) : "", split.why, left_out_text(lagged.left_out));
      unidentified.push_back(i);
      continue;
    }
    EnergyResult& e = m.energy;
    // The split's own time per call: its windows' spans of this operator's batches (its
    // column's). A pooled member's is its own in the loop, its energy the column's power over it.
    const double column_wall_s = split.busy_s[c] / split.calls[c];
    const double wall_s = pooled ? own[i].s_per_call : column_wall_s;
    e.available = true;
    e.unavailable_reason.clear();
    e.source = source + ", shared windows" + (gap ? ", duty-cycled" : "");
    e.per_call_mJ = pooled ? pooled_member(fit, wall_s / column_wall_s) : fit;
    // A duty-cycled loop's gap power is one figure for every window: its error, in full.
    if (gap) e.per_call_mJ = with_systematic(e.per_call_mJ, lagged.gap_systematic_mJ[c] * wall_s / column_wall_s);
    e.idle_power_W = idle_W;
    // A duty-cycled loop's spans are its batches' alone (the gaps are completions of their own):
    // the gaps are charged, and the prediction's timeline charges the model's own.
    e.wall_us_per_call = wall_s * 1e6;
    e.above_idle_mJ = e.per_call_mJ.mean - idle_W * wall_s * 1000.0;
    e.power_W = split.power_W[c];
    e.counter_period_s = period_s;
    e.windows = split.windows;
    e.effective_windows = double(split.windows);
    e.seconds = window_s;
    e.loop_start_s = run.start_s;
    if (gap) e.duty_cycle_busy_share = lagged.busy_share();
    m.method += fmt::format(
        "; energy from {} windows shared by {} operators in one loop, split by least squares{} at a counter lag "
        "of {:.0f} ms (residual {:.1f}% of a window's energy){}{}{}",
        split.windows, ops, cols < ops ? fmt::format(" into {} columns", cols) : "", 1e3 * lagged.lag_s,
        100 * split.residual_rel, left_out_text(lagged.left_out),
        pooled ? pooled_text(columns.members[c].size(), m) : target_text(cfg_, parts[i], m),
        m.energy.loop_note.empty() ? "" : " (" + m.energy.loop_note + ")");
    if (pooled) m.flags.push_back(fmt::format("{}{}", kPooledEnergyFlag, columns.members[c].size()));
    flag_after_energy(m, cfg_.step_power ? cfg_.step_power->gap_W : std::nullopt);
  }
  return unidentified;
}

}  // namespace opcost
