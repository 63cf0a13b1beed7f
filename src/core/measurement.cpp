#include "core/measurement.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

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

std::vector<std::string> measurement_flags(const Measurement& m) {
  std::vector<std::string> flags;
  if (m.time.per_call_us.n < 2) flags.push_back(fmt::format("no_interval:{} sample", m.time.per_call_us.n));
  if (m.time.host_bound_samples > 0)
    flags.push_back(fmt::format("host_bound:{} of {} samples may include the GPU waiting for the host",
                                m.time.host_bound_samples, m.time.per_call_us.n));
  return flags;
}

std::string utc_timestamp() {
  const auto now = std::chrono::system_clock::now();
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}Z", std::chrono::floor<std::chrono::seconds>(now));
}

}  // namespace opcost
