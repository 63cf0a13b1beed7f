#include "core/report/report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/energy/nvml.h"
#include "core/measure/loop_plan.h"
#include "core/store/measurement_record.h"

namespace opcost {

using nlohmann::json;

// The document is written and read by the record's field table, so that what is stored and
// what reads it back cannot drift apart.
json to_json(const Measurement& m) { return document_of(m); }

Measurement from_json(const json& doc) { return measurement_of(doc); }

namespace {
// Picks a unit so that the number reads naturally: 14.6 ms rather than 1.46e+04 us.
struct Scaled {
  double factor;
  const char* unit;
};
Scaled scale_for(double v, const char* unit) {
  const double a = std::abs(v);
  if (std::string(unit) == "us") {
    if (a >= 1e6) return {1e-6, "s"};
    if (a >= 1e3) return {1e-3, "ms"};
    if (a < 1) return {1e3, "ns"};
    return {1, "µs"};
  }
  if (std::string(unit) == "mJ") {
    if (a >= 1e3) return {1e-3, "J"};
    if (a < 1) return {1e3, "µJ"};
  }
  return {1, unit};
}
}  // namespace

std::string human(double value, const char* unit) {
  const Scaled s = scale_for(value, unit);
  return fmt::format("{:.4g} {}", value * s.factor, s.unit);
}

std::string with_ci(double value, double low, double high, const char* unit) {
  const double half = (high - low) / 2;
  const double rel = value != 0 ? 100.0 * half / std::abs(value) : 0;
  const Scaled s = scale_for(value, unit);
  return fmt::format("{:.4g} {} ± {:.2g} (±{:.2f}%, 95% CI)", value * s.factor, s.unit, half * s.factor, rel);
}

std::string to_console(const Measurement& m) {
  std::string out;
  auto line = [&](const std::string& k, const std::string& v) { out += fmt::format("  {:<16}{}\n", k, v); };
  out += fmt::format("{} {}\n", m.display_name(), m.args);
  line("device", fmt::format("{} ({}), cache {}{}", m.env.device_name, m.env.device_kind, m.cache_mode,
                             m.autocast.empty() ? "" : ", autocast " + m.autocast));
  const auto& t = m.time.per_call_us;
  line("time/call", t.n >= 2 ? with_ci(t.mean, t.ci95_low, t.ci95_high, "us")
                             : fmt::format("{} (from {} sample: no interval)", human(t.mean, "us"), t.n));
  line("", fmt::format("median {}, 3σ-clipped mean {}, min {}, stdev {}", human(t.median, "us"),
                       human(t.clipped_mean, "us"), human(t.min, "us"), human(t.stdev, "us")));
  line("", fmt::format("{} samples × {} calls, stopped: {}", t.n, m.time.calls_per_sample, m.time.stop_reason));
  line("host/call", fmt::format("{} wall, {} CPU (dispatch + launch)", human(m.time.host_us_per_call, "us"),
                                human(m.time.host_cpu_us_per_call, "us")));
  // A call without device work on a GPU: the host time is the figure, with its interval.
  const auto& h = m.time.host_us;
  if (h.n >= 2) line("", "host wall " + with_ci(h.mean, h.ci95_low, h.ci95_high, "us"));
  if (!m.device_work.empty())
    line("device work", fmt::format("none: {}", device_work_reason(device_work_of(m.device_work))));
  const auto& e = m.energy;
  if (e.available) {
    line("energy/call", with_ci(e.per_call_mJ.mean, e.per_call_mJ.ci95_low, e.per_call_mJ.ci95_high, "mJ"));
    line("", fmt::format("{} above idle; {} counter windows over {:.2f} s ({:.1f} effective), {}",
                         human(e.above_idle_mJ, "mJ"), e.windows, e.seconds, e.effective_windows, e.source));
    line("power", fmt::format("{:.1f} W average, {} idle", e.power_W,
                              e.idle_power_W ? fmt::format("{:.1f} W", *e.idle_power_W) : "unknown"));
  } else {
    line("energy/call", "unavailable: " + e.unavailable_reason);
  }
  auto o = [](const std::optional<unsigned>& v, const char* unit) {
    return v ? fmt::format("{} {}", *v, unit) : std::string("n/a");
  };
  if (m.env.device_kind == "cuda") {
    line("clocks", fmt::format("SM {} (min {}, max {}), memory {}", o(m.after.sm_clock_MHz, "MHz"),
                               o(m.during.sm_clock_min_MHz, "MHz"), o(m.during.sm_clock_max_MHz, "MHz"),
                               o(m.after.mem_clock_MHz, "MHz")));
    line("temperature",
         fmt::format("{} before, {} after", o(m.before.temperature_C, "°C"), o(m.after.temperature_C, "°C")));
    line("throttle", throttle::describe(m.during.throttle_reasons_seen));
  }
  line("measured", fmt::format("{} calls in {:.2f} s", m.total_calls, m.total_seconds));
  // A timing loop that a budget stopped has a wider interval than asked for: shown beside the
  // stored flags (not stored as one: it is no fault of the run, and --resume must not redo it).
  std::vector<std::string> flags = m.flags;
  const Summary& timed = h.n >= 2 ? h : t;  // the host time where it is the figure
  if (timed.n >= 2 && (m.time.stop_reason == "time_budget" || m.time.stop_reason == "sample_budget"))
    flags.push_back(fmt::format("ci_target_missed:±{:.2f}% when the {} ran out", 100 * timed.rel_ci95(),
                                m.time.stop_reason == "time_budget" ? "time budget (--max-time)" : "sample budget"));
  line("flags", flags.empty() ? "none" : fmt::format("{}", fmt::join(flags, ", ")));
  if (m.db_id >= 0) line("stored", fmt::format("row {}", m.db_id));
  return out;
}

}  // namespace opcost
