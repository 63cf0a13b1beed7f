// The duty-cycled energy loop (issue 25): an operator whose own loop held the GPU at its power
// cap, measured again in bursts at the busy share of the model step it belongs to, so that it
// runs at the clocks the step runs it at. The decision and the fit are torch-free
// (core/energy/duty_cycle.h); this file runs the loop.
#include <ATen/DeviceAccelerator.h>
#include <ATen/ops/add.h>
#include <ATen/ops/zeros.h>
#include <c10/core/Event.h>
#include <fmt/format.h>

#include <algorithm>

#include "core/energy/duty_cycle.h"
#include "core/energy/monitor.h"
#include "core/energy/nvml.h"
#include "torch/runner.h"

namespace opcost {

namespace {

DutyCycleInputs duty_cycle_inputs(const Measurement& m, const std::optional<MeasureConfig::StepPower>& step) {
  DutyCycleInputs in;
  in.power_limit_W = m.before.power_limit_W;
  in.sw_power_cap_seen = (m.during.throttle_reasons_seen & throttle::kSwPowerCap) != 0;
  in.loop_power_W = m.energy.power_W;
  for (const EnergyWindow& w : m.energy.window_list)
    in.loop_max_window_power_W = std::max(in.loop_max_window_power_W, w.power_W());
  if (step) {
    in.step_power_W = step->step_W;
    in.gap_power_W = step->gap_W;
  }
  return in;
}

// The bursts' busy time and the windows over the loop so far.
struct DutyCycleLoopState {
  std::vector<CompletionPoint> timeline;
  double calls = 0;
  double busy_s = 0, busy_calls = 0;  // after the settle: the op's GPU time in the bursts
  std::size_t edges_seen = 0, stalled = 0;
  std::vector<EnergyWindow> windows;
  DutyCycleEstimate estimate;

  double busy_s_per_call() const { return busy_calls > 0 ? busy_s / busy_calls : 0; }
  void update(const std::vector<CounterEdge>& edges, double settle_end, double gap_W, double gap_ci_W) {
    edges_seen = edges.size();
    windows = make_windows(edges, timeline, settle_end);
    // A host stall leaves the GPU without even the gaps' small kernels: below the gap power.
    stalled = drop_stalled_windows(windows);
    estimate = estimate_duty_cycled(windows, busy_s_per_call(), gap_W, gap_ci_W);
  }
};

}  // namespace

bool Runner::may_duty_cycle(const Measurement& m) const {
  // A call that waits for the device (or one of a synchronous run) issues no bursts ahead of the
  // GPU: its plain loop's figure stands.
  return device_.is_cuda() && probe_ && !m.waits_for_device && !cfg_.synchronous_calls;
}

bool Runner::duty_cycle_will_run(const Measurement& m, double loop_power_W) const {
  if (!may_duty_cycle(m)) return false;
  DutyCycleInputs in = duty_cycle_inputs(m, cfg_.step_power);
  in.sw_power_cap_seen = true;
  in.loop_power_W = loop_power_W;
  return plan_duty_cycle(in).run;
}

void Runner::measure_energy_duty_cycled(PreparedCall& call, Measurement& m) {
  if (!may_duty_cycle(m) || !m.energy.available) return;
  const DutyCyclePlan plan = plan_duty_cycle(duty_cycle_inputs(m, cfg_.step_power));
  if (!plan.at_cap) return;
  if (!plan.run) {
    m.method += fmt::format(
        "; its energy loop ran at the power cap, and its energy was not measured again at a "
        "model's duty cycle: {}",
        plan.why_not);
    return;
  }
  const MeasureConfig::StepPower& step = *cfg_.step_power;
  const double gap_W = *step.gap_W;
  const double per_call_s = m.time.per_call_us.median * 1e-6;
  const std::size_t burst = calls_per_burst(per_call_s);
  const auto device = c10::DeviceIndex(index_);
  const c10::Stream stream = at::accelerator::getCurrentStream(device);
  c10::Event start(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);
  c10::Event end(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);
  // The gaps run what the gap probe runs (a launch-bound aten::add of f32[1]), so the power
  // they are charged at is the power they draw, as far as the probe is the GPU between kernels.
  const at::Tensor tiny = at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(at::kCUDA, device));
  const double target_rel_ci95 = energy_target_rel_ci95(m.time.per_call_us.median);
  at::accelerator::synchronizeDevice(device);
  EnergyMonitor monitor(*probe_);
  monitor.start();
  const double begin = now_s();
  const double settle_end = begin + cfg_.energy_settle_s;
  DutyCycleLoopState s;
  while (true) {
    // Nothing of the burst has run before it is issued: the timeline stays flat over the gap.
    const double issued_at = now_s();
    s.timeline.push_back({issued_at, s.calls});
    start.record(stream);
    for (std::size_t i = 0; i < burst; ++i) call.call();
    end.record(stream);
    end.synchronize();
    const double done_at = now_s();
    s.calls += double(burst);
    s.timeline.push_back({done_at, s.calls});
    const double burst_s = double(start.elapsedTime(end)) * 1e-3;
    if (issued_at >= settle_end) {
      s.busy_s += burst_s;
      s.busy_calls += double(burst);
    }
    const double gap_end = done_at + gap_after_burst_s(burst_s, plan.busy_share);
    while (now_s() < gap_end) (void)at::add(tiny, tiny);
    watch_->check("measuring energy at the step's duty cycle", s.windows.size(), "windows");
    const double t = now_s();
    if (t < settle_end + 0.1) continue;
    const bool over_budget = t - begin > cfg_.energy_max_s;
    if (monitor.edge_count() == s.edges_seen && !over_budget) continue;
    s.update(monitor.edges(), settle_end, gap_W, step.gap_ci_W);
    // The gap power's share of the interval does not shrink with windows: the rule is on the rest.
    const DutyCycleEstimate& est = s.estimate;
    const double random_rel =
        est.windows > 0 ? (est.per_call_mJ.ci95_half_width() - est.systematic_ci_mJ) / std::abs(est.per_call_mJ.mean)
                        : 1e9;
    if ((est.windows >= cfg_.energy_min_windows && random_rel <= target_rel_ci95) || over_budget) break;
  }
  at::accelerator::synchronizeDevice(device);
  s.timeline.push_back({now_s(), s.calls});
  monitor.stop();
  m.total_calls += std::size_t(s.calls);
  s.update(monitor.edges(), settle_end, gap_W, step.gap_ci_W);
  EnergyResult& e = m.energy;
  const DutyCycleEstimate& est = s.estimate;
  if (!est.why_none.empty()) {
    m.method += fmt::format(
        "; its energy loop ran at the power cap; measured again at a {:.0f}% busy share, it gave "
        "no figure ({}): the capped loop's stands (its {} window(s))",
        100 * plan.busy_share, est.why_none, m.energy.windows);
    return;
  }
  const bool still_capped = monitor.state_summary().throttle_reasons_seen & throttle::kSwPowerCap;
  m.method += fmt::format(
      "; its energy loop ran at the power cap ({:.1f} ± {:.1f} mJ per call at {:.0f} W), the step at {:.0f} W: energy "
      "measured again duty-cycled, bursts of {} call(s) each followed by the gap probe's aten::add f32[1] for a "
      "{:.0f}% "
      "busy share ({:.0f}% achieved, {:.0f} W{}), energy per call = (window energy − {:.0f} W × gap time) / calls "
      "({:.0f}% "
      "of the energy taken off as gaps)",
      e.per_call_mJ.mean, e.per_call_mJ.ci95_half_width(), e.power_W, step.step_W, burst, 100 * plan.busy_share,
      100 * est.busy_share, est.power_W, still_capped ? ", still reaching the power cap" : "", gap_W,
      100 * est.gap_share_of_mJ);
  e.source += ", duty-cycled";
  e.per_call_mJ = est.per_call_mJ;
  e.power_W = est.power_W;
  // The gaps are charged already: the loop's time per call is the op's busy time, so the
  // prediction takes no gap of its own off (active_energy_mJ).
  e.wall_us_per_call = s.busy_s_per_call() * 1e6;
  e.above_idle_mJ = est.per_call_mJ.mean - e.idle_power_W.value_or(0) * s.busy_s_per_call() * 1e3;
  e.windows = est.windows;
  e.effective_windows = est.effective_windows;
  e.stalled_windows = s.stalled;
  e.seconds = est.seconds;
  e.window_list = s.windows;
  e.loop_start_s = begin;
  e.duty_cycle_busy_share = est.busy_share;
}

}  // namespace opcost
