#include "core/measurement.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/energy/nvml.h"

namespace opcost {

std::vector<std::string> hygiene_flags(const DeviceState& before, const DeviceState& after,
                                       const StateSummary& during) {
  std::vector<std::string> flags;
  const uint64_t seen = during.throttle_reasons_seen | after.throttle_reasons.value_or(0);
  if (seen & throttle::kSlowing) flags.push_back("throttled:" + throttle::describe(seen & throttle::kSlowing));
  // A clock change of more than 5% between any two samples (before, during, after).
  std::optional<unsigned> lo = during.sm_clock_min_MHz, hi = during.sm_clock_max_MHz;
  for (const auto& s : {before.sm_clock_MHz, after.sm_clock_MHz}) {
    if (!s) continue;
    lo = std::min(lo.value_or(*s), *s);
    hi = std::max(hi.value_or(*s), *s);
  }
  if (lo && hi && *hi > 0 && double(*hi - *lo) / *hi > 0.05)
    flags.push_back(fmt::format("clock_changed:{}-{}MHz", *lo, *hi));
  const unsigned others =
      std::max({during.other_processes_max, before.other_processes.value_or(0), after.other_processes.value_or(0)});
  if (others > 0) flags.push_back(fmt::format("other_processes:{}", others));
  return flags;
}

std::optional<double> implied_power_W(const Measurement& m, std::optional<double> gap_power_W) {
  const EnergyResult& e = m.energy;
  const double gpu_us = m.time.per_call_us.mean;
  // A call timed by wall clock (it waits for the device, or it is a whole step) has no GPU time
  // of its own to divide by.
  if (!e.available || m.waits_for_device || !(gpu_us > 0)) return std::nullopt;
  // The loop's own gaps (its wall time beyond the GPU's) are charged as the prediction charges
  // them, at the gap power; without it at idle power, the least a gap draws, so that the flag
  // errs towards firing.
  const double gap_W = gap_power_W ? *gap_power_W : e.idle_power_W.value_or(0);
  const double own_gap_us = std::max(0.0, e.wall_us_per_call - gpu_us);
  return (e.per_call_mJ.mean - gap_W * own_gap_us * 1e-3) / gpu_us * 1e3;  // mJ / µs = kW
}

std::vector<std::string> measurement_flags(const Measurement& m, std::optional<double> gap_power_W) {
  std::vector<std::string> flags;
  if (m.time.per_call_us.n < 2) flags.push_back(fmt::format("no_interval:{} sample", m.time.per_call_us.n));
  if (m.time.host_bound_samples > 0)
    flags.push_back(fmt::format("host_bound:{} of {} samples may include the GPU waiting for the host",
                                m.time.host_bound_samples, m.time.per_call_us.n));
  const std::optional<double> limit_W = m.before.power_limit_W;
  if (const auto implied = implied_power_W(m, gap_power_W); implied && limit_W && *limit_W > 0 && *implied > *limit_W)
    flags.push_back(fmt::format("energy_over_power_limit:{:.0f}W>{:.0f}W", *implied, *limit_W));
  // Its energy is not the capped loop's (the throttled flag is about that loop and the timing).
  if (m.energy.available && m.energy.duty_cycle_busy_share > 0)
    flags.push_back(fmt::format("energy_at_duty_cycle:{:.0f}%", 100 * m.energy.duty_cycle_busy_share));
  return flags;
}

std::string utc_timestamp() {
  const auto now = std::chrono::system_clock::now();
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}Z", std::chrono::floor<std::chrono::seconds>(now));
}

}  // namespace opcost
