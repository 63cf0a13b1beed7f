#include "core/report/report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/energy/nvml.h"

namespace opcost {

using nlohmann::json;

namespace {
template <typename T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

json state_json(const DeviceState& s) {
  return {{"sm_clock_MHz", opt(s.sm_clock_MHz)},
          {"mem_clock_MHz", opt(s.mem_clock_MHz)},
          {"temperature_C", opt(s.temperature_C)},
          {"power_limit_W", opt(s.power_limit_W)},
          {"throttle_reasons", s.throttle_reasons ? json(throttle::describe(*s.throttle_reasons)) : json(nullptr)},
          {"other_processes", opt(s.other_processes)}};
}
}  // namespace

json to_json(const Measurement& m) {
  const auto& t = m.time.per_call_us;
  json j = {
      {"op", m.op},
      {"overload", m.overload},
      {"args", m.args},
      {"args_hash", m.args_hash},
      {"dtype", m.dtype},
      {"device", m.env.device_name},
      {"device_kind", m.env.device_kind},
      {"cache_mode", m.cache_mode},
      {"autocast", m.autocast},
      {"method", m.method},
      {"time_us",
       {{"median", t.median},
        {"mean", t.mean},
        {"clipped_mean", t.clipped_mean},
        {"min", t.min},
        {"stdev", t.stdev},
        {"ci95_low", t.ci95_low},
        {"ci95_high", t.ci95_high},
        {"rel_ci95", t.n >= 2 ? json(t.rel_ci95()) : json(nullptr)},
        {"samples", t.n},
        {"calls_per_sample", m.time.calls_per_sample},
        {"host_bound_samples", m.time.host_bound_samples},
        {"stop_reason", m.time.stop_reason}}},
      {"host_us_per_call", {{"wall", m.time.host_us_per_call}, {"cpu", m.time.host_cpu_us_per_call}}},
      {"clocks_MHz",
       {{"sm", opt(m.after.sm_clock_MHz)},
        {"mem", opt(m.after.mem_clock_MHz)},
        {"sm_min", opt(m.during.sm_clock_min_MHz)},
        {"sm_max", opt(m.during.sm_clock_max_MHz)}}},
      {"temperature_C",
       {{"before", opt(m.before.temperature_C)},
        {"after", opt(m.after.temperature_C)},
        {"max", opt(m.during.temperature_max_C)}}},
      {"throttle_reasons", throttle::describe(m.during.throttle_reasons_seen)},
      {"state_before", state_json(m.before)},
      {"state_after", state_json(m.after)},
      {"flags", m.flags},
      {"measured", {{"calls", m.total_calls}, {"seconds", m.total_seconds}}},
      {"environment",
       {{"gpu_uuid", m.env.device_uuid},
        {"driver", m.env.driver_version},
        {"cuda", m.env.cuda_version},
        {"torch", m.env.torch_version},
        {"opcost", m.env.opcost_version},
        {"host", m.env.host}}},
      {"created_at", m.created_at},
      {"db_id", m.db_id >= 0 ? json(m.db_id) : json(nullptr)},
  };
  const auto& e = m.energy;
  if (e.available) {
    j["energy_mJ"] = {{"per_call", e.per_call_mJ.mean},
                      {"above_idle", e.above_idle_mJ},
                      {"ci95_low", e.per_call_mJ.ci95_low},
                      {"ci95_high", e.per_call_mJ.ci95_high},
                      {"rel_ci95", e.per_call_mJ.n >= 2 ? json(e.per_call_mJ.rel_ci95()) : json(nullptr)},
                      {"windows", e.windows},
                      {"effective_windows", e.effective_windows},
                      {"stalled_windows_dropped", e.stalled_windows},
                      {"window_seconds", e.seconds},
                      {"counter_period_s", e.counter_period_s},
                      {"loop_wall_us_per_call", e.wall_us_per_call},
                      {"source", e.source},
                      {"window_columns", {"start_s", "seconds", "per_call_mJ", "W"}},
                      {"window_list", [&] {
                         json w = json::array();
                         for (const auto& x : e.window_list)
                           w.push_back({x.t0_s - e.loop_start_s, x.seconds(), x.per_call_mJ(), x.power_W()});
                         return w;
                       }()}};
  } else {
    j["energy_unavailable"] = e.unavailable_reason;
  }
  j["power_W"] = {{"average", e.available ? json(e.power_W) : json(nullptr)}, {"idle", opt(e.idle_power_W)}};
  return j;
}

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
  if (t.n >= 2 && (m.time.stop_reason == "time_budget" || m.time.stop_reason == "sample_budget"))
    flags.push_back(fmt::format("ci_target_missed:±{:.2f}% when the {} ran out", 100 * t.rel_ci95(),
                                m.time.stop_reason == "time_budget" ? "time budget (--max-time)" : "sample budget"));
  line("flags", flags.empty() ? "none" : fmt::format("{}", fmt::join(flags, ", ")));
  if (m.db_id >= 0) line("stored", fmt::format("row {}", m.db_id));
  return out;
}

}  // namespace opcost
