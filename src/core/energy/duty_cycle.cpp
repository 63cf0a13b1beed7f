#include "core/energy/duty_cycle.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace opcost {

DutyCyclePlan plan_duty_cycle(const DutyCycleInputs& in) {
  DutyCyclePlan p;
  const bool window_at_cap = in.power_limit_W && in.loop_max_window_power_W >= kAtCapShare * *in.power_limit_W;
  p.at_cap = in.sw_power_cap_seen || window_at_cap;
  if (!p.at_cap) return p;
  if (!in.step_power_W) {
    p.why_not = "no model step to take a duty cycle from (the operator was measured on its own)";
  } else if (!in.power_limit_W) {
    p.why_not = "the board's power limit is unknown";
  } else if (!step_below_cap(in.step_power_W, in.power_limit_W)) {
    // The step itself runs near the limit: the capped loop is the regime it sees.
    p.why_not =
        fmt::format("the step runs at {:.0f} W, near the {:.0f} W limit itself", *in.step_power_W, *in.power_limit_W);
  } else if (!in.gap_power_W) {
    p.why_not = "no power between kernels to charge the gaps with (the gap probe has no energy figure)";
  } else if (!(in.loop_power_W > *in.gap_power_W)) {
    p.why_not =
        fmt::format("its loop's {:.0f} W is not above the gap power {:.0f} W", in.loop_power_W, *in.gap_power_W);
  } else {
    p.run = true;
    p.busy_share = busy_share_for(*in.step_power_W, *in.gap_power_W, in.loop_power_W);
  }
  return p;
}

double busy_share_for(double step_W, double gap_W, double loop_W) {
  const double d = loop_W > gap_W ? (step_W - gap_W) / (loop_W - gap_W) : kMaxBusyShare;
  return std::clamp(std::isfinite(d) ? d : kMaxBusyShare, kMinBusyShare, kMaxBusyShare);
}

std::size_t calls_per_burst(double per_call_s) {
  if (!(per_call_s > 0)) return 1;
  // Bounded: a mis-timed op of a few ns would otherwise ask for millions of calls per burst.
  return std::clamp<std::size_t>(std::size_t(std::lround(kBurstBusyS / per_call_s)), 1, 10000);
}

double gap_after_burst_s(double burst_busy_s, double busy_share) {
  const double d = std::clamp(busy_share, kMinBusyShare, kMaxBusyShare);
  return std::max(0.0, burst_busy_s) * (1 - d) / d;
}

DutyCycleEstimate estimate_duty_cycled(const std::vector<EnergyWindow>& windows, double busy_s_per_call,
                                       double gap_power_W, double gap_power_ci_W) {
  DutyCycleEstimate est;
  if (!(busy_s_per_call > 0)) {
    est.why_none = "no GPU time per call from the bursts";
    return est;
  }
  if (windows.size() < 2) {
    est.why_none = fmt::format("{} usable counter window(s); at least 2 are needed", windows.size());
    return est;
  }
  std::vector<double> per_call;
  double energy_mJ = 0, gap_mJ = 0, calls = 0, busy_s = 0, gap_s = 0;
  for (const EnergyWindow& w : windows) {
    if (!(w.calls > 0) || !(w.seconds() > 0)) continue;
    const double busy = w.calls * busy_s_per_call;
    // The host measured the windows and the GPU the bursts: a busy time a little over the
    // window is rounding between the two clocks, not a negative gap.
    const double gap = std::max(0.0, w.seconds() - busy);
    const double gap_energy_mJ = gap_power_W * gap * 1000.0;
    per_call.push_back((w.energy_mJ - gap_energy_mJ) / w.calls);
    energy_mJ += w.energy_mJ;
    gap_mJ += gap_energy_mJ;
    calls += w.calls;
    busy_s += busy;
    gap_s += gap;
    est.seconds += w.seconds();
  }
  if (per_call.size() < 2) {
    est.why_none = fmt::format("{} counter window(s) with calls in them; at least 2 are needed", per_call.size());
    return est;
  }
  est.windows = per_call.size();
  est.per_call_mJ = summarize(per_call);
  // As estimate_energy: correlated windows widen the interval, anti-correlated ones never narrow it.
  const double n = double(per_call.size());
  const double r = std::clamp(lag1_autocorrelation(per_call), 0.0, 0.95);
  est.effective_windows = std::max(2.0, n * (1 - r) / (1 + r));
  const double neff = std::min(est.effective_windows, n);
  const double random_half =
      student_t975(std::size_t(std::max(1.0, std::floor(neff - 1)))) * est.per_call_mJ.stdev / std::sqrt(neff);
  est.gap_s_per_call = gap_s / calls;
  // The gap power is one figure for every window: its error does not average out over them.
  est.systematic_ci_mJ = std::max(0.0, gap_power_ci_W) * est.gap_s_per_call * 1000.0;
  const double half = random_half + est.systematic_ci_mJ;
  est.per_call_mJ.ci95_low = est.per_call_mJ.mean - half;
  est.per_call_mJ.ci95_high = est.per_call_mJ.mean + half;
  est.power_W = energy_mJ / 1000.0 / est.seconds;
  est.busy_share = busy_s / est.seconds;
  est.gap_share_of_mJ = energy_mJ > 0 ? gap_mJ / energy_mJ : 0;
  return est;
}

}  // namespace opcost
