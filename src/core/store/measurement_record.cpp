#include "core/store/measurement_record.h"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <stdexcept>
#include <type_traits>

#include "core/energy/nvml.h"

namespace opcost {

using nlohmann::json;

const char* to_string(FieldType t) {
  switch (t) {
    case FieldType::kText:
      return "text";
    case FieldType::kInteger:
      return "integer";
    case FieldType::kReal:
      return "real";
    case FieldType::kBool:
      return "bool";
    case FieldType::kTextList:
      return "text list";
    case FieldType::kThrottleBits:
      return "throttle reasons";
    case FieldType::kSettings:
      return "settings";
  }
  return "?";
}

std::string RecordField::sql_type() const {
  const char* base = type == FieldType::kReal ? "REAL"
                     : type == FieldType::kInteger || type == FieldType::kBool || type == FieldType::kThrottleBits
                         ? "INTEGER"
                         : "TEXT";
  return sql_constraint.empty() ? base : fmt::format("{} {}", base, sql_constraint);
}

namespace {

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

template <class T>
constexpr FieldType type_of() {
  if constexpr (is_optional<T>::value)
    return type_of<typename T::value_type>();
  else if constexpr (std::is_same_v<T, std::string>)
    return FieldType::kText;
  else if constexpr (std::is_same_v<T, bool>)
    return FieldType::kBool;
  else if constexpr (std::is_integral_v<T>)
    return FieldType::kInteger;
  else if constexpr (std::is_floating_point_v<T>)
    return FieldType::kReal;
  else if constexpr (std::is_same_v<T, std::vector<std::string>>)
    return FieldType::kTextList;
  else {
    static_assert(std::is_same_v<T, Settings>, "a member type the record cannot store");
    return FieldType::kSettings;
  }
}

template <class T>
json encode(const T& v) {
  if constexpr (is_optional<T>::value) {
    return v ? encode(*v) : json(nullptr);
  } else if constexpr (std::is_same_v<T, Settings>) {
    json o = json::object();
    for (const auto& [name, value] : v) o[name] = value;
    return o;
  } else {
    return json(v);
  }
}

[[noreturn]] void wrong_type(const std::string& field, const char* expected, const json& found) {
  throw std::invalid_argument(
      fmt::format("the result document's {}: expected {}, found {} (a damaged row, or not an opcost result document)",
                  field, expected, found.type_name()));
}

// A null leaves the member as it is (its default): an older document wrote null for "none".
template <class T>
void decode(const json& v, T& out, const std::string& field) {
  if constexpr (is_optional<T>::value) {
    if (v.is_null()) {
      out.reset();
      return;
    }
    typename T::value_type x{};
    decode(v, x, field);
    out = x;
  } else {
    if (v.is_null()) return;
    if constexpr (std::is_same_v<T, std::string>) {
      if (!v.is_string()) wrong_type(field, "a text", v);
      out = v.get<std::string>();
    } else if constexpr (std::is_same_v<T, bool>) {
      if (!v.is_boolean()) wrong_type(field, "true or false", v);
      out = v.get<bool>();
    } else if constexpr (std::is_integral_v<T>) {
      if (!v.is_number_integer() ||
          (std::is_unsigned_v<T> && v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0))
        wrong_type(field, std::is_unsigned_v<T> ? "a whole number >= 0" : "a whole number", v);
      out = v.get<T>();
    } else if constexpr (std::is_floating_point_v<T>) {
      if (!v.is_number()) wrong_type(field, "a number", v);
      out = v.get<T>();
    } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      if (!v.is_array()) wrong_type(field, "a list of texts", v);
      out.clear();
      for (const auto& x : v) {
        if (!x.is_string()) wrong_type(field, "a list of texts", x);
        out.push_back(x.get<std::string>());
      }
    } else {
      if (!v.is_object()) wrong_type(field, "an object of name → text", v);
      out.clear();
      for (const auto& [name, x] : v.items()) {
        if (!x.is_string()) wrong_type(field + "." + name, "a text", x);
        out.emplace_back(name, x.template get<std::string>());
      }
    }
  }
}

// The NVML throttle bits back from throttle::describe's names, built from describe itself so
// that the names are written in one place. Unknown names (a newer opcost's) are ignored.
uint64_t throttle_bits_of(const json& v, const std::string& field) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (!v.is_string()) wrong_type(field, "the throttle reasons' names", v);
  static const std::map<std::string, uint64_t> bit_of = [] {
    std::map<std::string, uint64_t> m;
    for (int b = 0; b < 64; ++b) {
      const uint64_t bit = uint64_t(1) << b;
      const std::string name = throttle::describe(bit);
      if (name != "none" && name.find(',') == std::string::npos) m[name] = bit;
    }
    return m;
  }();
  uint64_t bits = 0;
  const std::string text = v.get<std::string>();
  for (std::size_t start = 0; start <= text.size();) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    if (const auto it = bit_of.find(text.substr(start, comma - start)); it != bit_of.end()) bits |= it->second;
    start = comma + 1;
  }
  return bits;
}

// How a field is declared below: designated initializers name each part.
struct Spec {
  const char* unit = "";
  const char* column = "";
  const char* path = "";
  Presence presence = Presence::kAlways;
  bool identity = false;
  const char* constraint = "";
  std::optional<FieldType> type = std::nullopt;  // when the member's C++ type does not say it (kThrottleBits)
  bool empty_is_null = false;
};

RecordField declared(const Spec& s, FieldType type) {
  RecordField f;
  f.type = s.type.value_or(type);
  f.unit = s.unit;
  f.sql_column = s.column;
  f.sql_constraint = s.constraint;
  f.json_path = json::json_pointer(s.path);
  f.identity = s.identity;
  f.presence = s.presence;
  f.empty_is_null = s.empty_is_null;
  if (!f.sql_column.empty()) {
    f.name = f.sql_column;
  } else {
    f.name = std::string(s.path).substr(1);
    for (char& c : f.name)
      if (c == '/') c = '.';
  }
  return f;
}

// A member stored as it is: `at` returns a reference to it (const or not).
template <class At>
RecordField stored(const Spec& s, At at) {
  using T = std::remove_cvref_t<decltype(at(std::declval<Measurement&>()))>;
  RecordField f = declared(s, type_of<T>());
  f.value = [at](const Measurement& m) -> json { return encode(at(m)); };
  const Presence presence = s.presence;
  f.read = [at, presence, name = f.name, throttle = f.type == FieldType::kThrottleBits](Measurement& m, const json& v) {
    if constexpr (std::is_same_v<T, uint64_t> || std::is_same_v<T, std::optional<uint64_t>>) {
      if (throttle) {
        if (v.is_null())
          at(m) = T{};
        else
          at(m) = throttle_bits_of(v, name);
        return;
      }
    }
    decode(v, at(m), name);
    // A figure of the energy loop is there only when energy was measured.
    if (presence == Presence::kWithEnergy) m.energy.available = true;
  };
  return f;
}

// A value the document shows but that is worked out from other fields: never read back.
RecordField derived(const Spec& s, FieldType type, std::function<json(const Measurement&)> value) {
  RecordField f = declared(s, type);
  f.value = std::move(value);
  return f;
}

RecordField custom(const Spec& s, FieldType type, std::function<json(const Measurement&)> value,
                   std::function<void(Measurement&, const json&)> read) {
  RecordField f = declared(s, type);
  f.value = std::move(value);
  f.read = std::move(read);
  return f;
}

std::vector<RecordField> state_fields(const char* at_path, DeviceState Measurement::*state) {
  const std::string p = at_path;
  std::vector<RecordField> f;
  const std::string sm = p + "/sm_clock_MHz", mem = p + "/mem_clock_MHz", temp = p + "/temperature_C",
                    limit = p + "/power_limit_W", throttled = p + "/throttle_reasons", others = p + "/other_processes";
  f.push_back(stored(
      {.unit = "MHz", .path = sm.c_str()}, [state](auto& m) -> auto& { return (m.*state).sm_clock_MHz; }));
  f.push_back(stored(
      {.unit = "MHz", .path = mem.c_str()}, [state](auto& m) -> auto& { return (m.*state).mem_clock_MHz; }));
  f.push_back(stored(
      {.unit = "C", .path = temp.c_str()}, [state](auto& m) -> auto& { return (m.*state).temperature_C; }));
  f.push_back(stored(
      {.unit = "W", .path = limit.c_str()}, [state](auto& m) -> auto& { return (m.*state).power_limit_W; }));
  f.push_back(stored(
      {.path = throttled.c_str(), .type = FieldType::kThrottleBits}, [state](auto& m) -> auto& {
        return (m.*state).throttle_reasons;
      }));
  f.push_back(stored(
      {.path = others.c_str()}, [state](auto& m) -> auto& { return (m.*state).other_processes; }));
  return f;
}

// The columns, in the table's order (a new column goes at the end: migrations append): what
// the measurement is, and where.
std::vector<RecordField> identity_columns() {
  return {
      stored(
          {.column = "created_at", .path = "/created_at", .constraint = "NOT NULL"},
          [](auto& m) -> auto& { return m.created_at; }),
      stored(
          {.column = "opcost_version", .path = "/environment/opcost"},
          [](auto& m) -> auto& { return m.env.opcost_version; }),
      stored(
          {.column = "op", .path = "/op", .identity = true, .constraint = "NOT NULL"},
          [](auto& m) -> auto& { return m.op; }),
      stored(
          {.column = "overload", .path = "/overload", .identity = true, .constraint = "NOT NULL"},
          [](auto& m) -> auto& { return m.overload; }),
      // The canonical arguments (their shapes, dtypes and values): identified by their hash.
      stored(
          {.column = "args", .path = "/args", .constraint = "NOT NULL"}, [](auto& m) -> auto& { return m.args; }),
      stored(
          {.column = "args_hash", .path = "/args_hash", .identity = true, .constraint = "NOT NULL"},
          [](auto& m) -> auto& { return m.args_hash; }),
      // Part of the arguments already (and so of args_hash): not a key column of its own.
      stored(
          {.column = "dtype", .path = "/dtype"}, [](auto& m) -> auto& { return m.dtype; }),
      stored(
          {.column = "device_kind", .path = "/device_kind"}, [](auto& m) -> auto& { return m.env.device_kind; }),
      // The device model (its name), not the board: any board of the model serves.
      stored(
          {.column = "device_name", .path = "/device", .identity = true},
          [](auto& m) -> auto& { return m.env.device_name; }),
      stored(
          {.column = "device_uuid", .path = "/environment/gpu_uuid"},
          [](auto& m) -> auto& { return m.env.device_uuid; }),
      stored(
          {.column = "driver_version", .path = "/environment/driver"},
          [](auto& m) -> auto& { return m.env.driver_version; }),
      stored(
          {.column = "cuda_version", .path = "/environment/cuda"}, [](auto& m) -> auto& { return m.env.cuda_version; }),
      stored(
          {.column = "torch_version", .path = "/environment/torch"},
          [](auto& m) -> auto& { return m.env.torch_version; }),
      stored(
          {.column = "cache_mode", .path = "/cache_mode", .identity = true},
          [](auto& m) -> auto& { return m.cache_mode; }),
      stored(
          {.column = "method", .path = "/method"}, [](auto& m) -> auto& { return m.method; }),
      stored(
          {.column = "autocast", .path = "/autocast", .identity = true, .constraint = "NOT NULL DEFAULT ''"},
          [](auto& m) -> auto& { return m.autocast; }),
  };
}

// The time loop's figures and the energy loop's.
std::vector<RecordField> time_columns() {
  constexpr auto kEnergy = Presence::kWithEnergy;
  return {
      stored(
          {.unit = "us", .column = "time_median_us", .path = "/time_us/median"},
          [](auto& m) -> auto& { return m.time.per_call_us.median; }),
      stored(
          {.unit = "us", .column = "time_mean_us", .path = "/time_us/mean"},
          [](auto& m) -> auto& { return m.time.per_call_us.mean; }),
      stored(
          {.unit = "us", .column = "time_clipped_mean_us", .path = "/time_us/clipped_mean"},
          [](auto& m) -> auto& { return m.time.per_call_us.clipped_mean; }),
      stored(
          {.unit = "us", .column = "time_min_us", .path = "/time_us/min"},
          [](auto& m) -> auto& { return m.time.per_call_us.min; }),
      stored(
          {.unit = "us", .column = "time_stdev_us", .path = "/time_us/stdev"},
          [](auto& m) -> auto& { return m.time.per_call_us.stdev; }),
      stored(
          {.unit = "us", .column = "time_ci95_low_us", .path = "/time_us/ci95_low"},
          [](auto& m) -> auto& { return m.time.per_call_us.ci95_low; }),
      stored(
          {.unit = "us", .column = "time_ci95_high_us", .path = "/time_us/ci95_high"},
          [](auto& m) -> auto& { return m.time.per_call_us.ci95_high; }),
      stored(
          {.column = "time_samples", .path = "/time_us/samples"},
          [](auto& m) -> auto& { return m.time.per_call_us.n; }),
      stored(
          {.column = "stop_reason", .path = "/time_us/stop_reason"},
          [](auto& m) -> auto& { return m.time.stop_reason; }),
      stored(
          {.unit = "us", .column = "host_us_per_call", .path = "/host_us_per_call/wall"},
          [](auto& m) -> auto& { return m.time.host_us_per_call; }),
      stored(
          {.unit = "us", .column = "host_cpu_us_per_call", .path = "/host_us_per_call/cpu"},
          [](auto& m) -> auto& { return m.time.host_cpu_us_per_call; }),
      stored(
          {.unit = "mJ", .column = "energy_per_call_mJ", .path = "/energy_mJ/per_call", .presence = kEnergy},
          [](auto& m) -> auto& { return m.energy.per_call_mJ.mean; }),
      stored(
          {.unit = "mJ", .column = "energy_above_idle_mJ", .path = "/energy_mJ/above_idle", .presence = kEnergy},
          [](auto& m) -> auto& { return m.energy.above_idle_mJ; }),
      stored(
          {.unit = "mJ", .column = "energy_ci95_low_mJ", .path = "/energy_mJ/ci95_low", .presence = kEnergy},
          [](auto& m) -> auto& { return m.energy.per_call_mJ.ci95_low; }),
      stored(
          {.unit = "mJ", .column = "energy_ci95_high_mJ", .path = "/energy_mJ/ci95_high", .presence = kEnergy},
          [](auto& m) -> auto& { return m.energy.per_call_mJ.ci95_high; }),
      stored(
          {.column = "energy_unavailable", .path = "/energy_unavailable", .presence = Presence::kWithoutEnergy},
          [](auto& m) -> auto& { return m.energy.unavailable_reason; }),
      // Average power over the energy windows; null (not absent) when energy was not measured.
      custom(
          {.unit = "W", .column = "power_W", .path = "/power_W/average"}, FieldType::kReal,
          // None either for a call without device work: no loop ran (energy_mJ.windows is 0).
          [](const Measurement& m) {
            return m.energy.available && m.energy.windows > 0 ? json(m.energy.power_W) : json(nullptr);
          },
          [](Measurement& m, const json& v) { decode(v, m.energy.power_W, "power_W"); }),
      stored(
          {.unit = "W", .column = "idle_power_W", .path = "/power_W/idle"},
          [](auto& m) -> auto& { return m.energy.idle_power_W; }),
      stored(
          {.unit = "us",
           .column = "loop_wall_us_per_call",
           .path = "/energy_mJ/loop_wall_us_per_call",
           .presence = kEnergy},
          [](auto& m) -> auto& { return m.energy.wall_us_per_call; }),
  };
}

// A figure of the host time's own summary: null where the host time has none (TimeResult::host_us).
json host_figure(const Measurement& m, double value) { return m.time.host_us.n > 0 ? json(value) : json(nullptr); }

// The device's state after the loops, the flags, the totals and the schema 4 and 5 fields.
std::vector<RecordField> state_columns() {
  return {
      stored(
          {.unit = "MHz", .column = "sm_clock_MHz", .path = "/clocks_MHz/sm"},
          [](auto& m) -> auto& { return m.after.sm_clock_MHz; }),
      stored(
          {.unit = "MHz", .column = "mem_clock_MHz", .path = "/clocks_MHz/mem"},
          [](auto& m) -> auto& { return m.after.mem_clock_MHz; }),
      stored(
          {.unit = "C", .column = "temperature_C", .path = "/temperature_C/after"},
          [](auto& m) -> auto& { return m.after.temperature_C; }),
      stored(
          {.column = "throttle_reasons", .path = "/throttle_reasons", .type = FieldType::kThrottleBits},
          [](auto& m) -> auto& { return m.during.throttle_reasons_seen; }),
      stored(
          {.column = "flags", .path = "/flags"}, [](auto& m) -> auto& { return m.flags; }),
      stored(
          {.column = "calls", .path = "/measured/calls"}, [](auto& m) -> auto& { return m.total_calls; }),
      stored(
          {.unit = "s", .column = "seconds", .path = "/measured/seconds"},
          [](auto& m) -> auto& { return m.total_seconds; }),
      // Schema 4. NULL in a row stored before: the migration reads the method's note once.
      stored(
          {.column = "waits_for_device", .path = "/waits_for_device"},
          [](auto& m) -> auto& { return m.waits_for_device; }),
      stored(
          {.column = "settings", .path = "/settings", .empty_is_null = true},
          [](auto& m) -> auto& { return m.settings; }),
      // NULL for a row stored before settings were recorded: it matches any key (Database::Key).
      stored(
          {.column = "settings_key", .path = "/settings_key", .identity = true, .empty_is_null = true},
          [](auto& m) -> auto& { return m.settings_key; }),
      // Schema 5. NULL in a row stored before, which reads as "" (it did work, or nobody checked).
      stored(
          {.column = "device_work", .path = "/device_work", .empty_is_null = true},
          [](auto& m) -> auto& { return m.device_work; }),
      // The host time's interval where it is the figure (a call without device work on a GPU).
      custom(
          {.unit = "us", .column = "host_ci95_low_us", .path = "/host_us_per_call/ci95_low"}, FieldType::kReal,
          [](const Measurement& m) { return host_figure(m, m.time.host_us.ci95_low); },
          [](Measurement& m, const json& v) { decode(v, m.time.host_us.ci95_low, "host_ci95_low_us"); }),
      custom(
          {.unit = "us", .column = "host_ci95_high_us", .path = "/host_us_per_call/ci95_high"}, FieldType::kReal,
          [](const Measurement& m) { return host_figure(m, m.time.host_us.ci95_high); },
          [](Measurement& m, const json& v) { decode(v, m.time.host_us.ci95_high, "host_ci95_high_us"); }),
  };
}

// Only in the document.
std::vector<RecordField> document_only_fields() {
  constexpr auto kEnergy = Presence::kWithEnergy;
  return {
      stored(
          {.path = "/time_us/calls_per_sample"}, [](auto& m) -> auto& { return m.time.calls_per_sample; }),
      stored(
          {.path = "/time_us/host_bound_samples"}, [](auto& m) -> auto& { return m.time.host_bound_samples; }),
      custom(
          {.path = "/host_us_per_call/samples"}, FieldType::kInteger,
          [](const Measurement& m) { return m.time.host_us.n > 0 ? json(m.time.host_us.n) : json(nullptr); },
          [](Measurement& m, const json& v) { decode(v, m.time.host_us.n, "host_us_per_call.samples"); }),
      derived({.path = "/time_us/rel_ci95"}, FieldType::kReal,
              [](const Measurement& m) {
                const auto& t = m.time.per_call_us;
                return t.n >= 2 ? json(t.rel_ci95()) : json(nullptr);
              }),
      stored(
          {.unit = "MHz", .path = "/clocks_MHz/sm_min"}, [](auto& m) -> auto& { return m.during.sm_clock_min_MHz; }),
      stored(
          {.unit = "MHz", .path = "/clocks_MHz/sm_max"}, [](auto& m) -> auto& { return m.during.sm_clock_max_MHz; }),
      stored(
          {.unit = "C", .path = "/temperature_C/before"}, [](auto& m) -> auto& { return m.before.temperature_C; }),
      stored(
          {.unit = "C", .path = "/temperature_C/max"}, [](auto& m) -> auto& { return m.during.temperature_max_C; }),
      stored(
          {.path = "/environment/host"}, [](auto& m) -> auto& { return m.env.host; }),
      custom(
          {.path = "/db_id"}, FieldType::kInteger,
          [](const Measurement& m) { return m.db_id >= 0 ? json(m.db_id) : json(nullptr); },
          [](Measurement& m, const json& v) { decode(v, m.db_id, "db_id"); }),
      derived({.path = "/energy_mJ/rel_ci95", .presence = kEnergy}, FieldType::kReal,
              [](const Measurement& m) {
                const auto& e = m.energy.per_call_mJ;
                return e.n >= 2 ? json(e.rel_ci95()) : json(nullptr);
              }),
      // The per-call energy is summarized over the windows (core/energy/windows.cpp): their
      // count is its sample count too.
      custom(
          {.path = "/energy_mJ/windows", .presence = kEnergy}, FieldType::kInteger,
          [](const Measurement& m) { return json(m.energy.windows); },
          [](Measurement& m, const json& v) {
            decode(v, m.energy.windows, "energy_mJ.windows");
            m.energy.per_call_mJ.n = m.energy.windows;
            m.energy.available = true;
          }),
      stored(
          {.path = "/energy_mJ/effective_windows", .presence = kEnergy},
          [](auto& m) -> auto& { return m.energy.effective_windows; }),
      stored(
          {.path = "/energy_mJ/stalled_windows_dropped", .presence = kEnergy},
          [](auto& m) -> auto& { return m.energy.stalled_windows; }),
      stored(
          {.unit = "s", .path = "/energy_mJ/window_seconds", .presence = kEnergy},
          [](auto& m) -> auto& { return m.energy.seconds; }),
      stored(
          {.unit = "s", .path = "/energy_mJ/counter_period_s", .presence = kEnergy},
          [](auto& m) -> auto& { return m.energy.counter_period_s; }),
      stored(
          {.path = "/energy_mJ/source", .presence = kEnergy}, [](auto& m) -> auto& { return m.energy.source; }),
      // The windows themselves are for a reader of the report: not read back.
      derived({.path = "/energy_mJ/window_columns", .presence = kEnergy}, FieldType::kTextList,
              [](const Measurement&) {
                return json{"start_s", "seconds", "per_call_mJ", "W"};
              }),
      derived({.path = "/energy_mJ/window_list", .presence = kEnergy}, FieldType::kReal,
              [](const Measurement& m) {
                const auto& e = m.energy;
                json w = json::array();
                for (const auto& x : e.window_list)
                  w.push_back({x.t0_s - e.loop_start_s, x.seconds(), x.per_call_mJ(), x.power_W()});
                return w;
              }),
  };
}

std::vector<RecordField> make_fields() {
  std::vector<RecordField> f;
  for (auto part : {identity_columns, time_columns, state_columns, document_only_fields}) {
    auto more = part();
    f.insert(f.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  }
  for (DeviceState Measurement::*state : {&Measurement::before, &Measurement::after}) {
    auto more = state_fields(state == &Measurement::before ? "/state_before" : "/state_after", state);
    f.insert(f.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  }
  return f;
}

bool present_in(const RecordField& f, const Measurement& m) {
  switch (f.presence) {
    case Presence::kAlways:
      return true;
    case Presence::kWithEnergy:
      return m.energy.available;
    case Presence::kWithoutEnergy:
      return !m.energy.available;
  }
  return true;
}

}  // namespace

const std::vector<RecordField>& measurement_fields() {
  static const std::vector<RecordField> fields = make_fields();
  return fields;
}

const std::vector<RecordColumn>& measurement_columns() {
  static const std::vector<RecordColumn> columns = [] {
    std::vector<RecordColumn> c;
    for (const auto& f : measurement_fields())
      if (!f.sql_column.empty()) c.push_back({f.sql_column, f.sql_type()});
    c.push_back({kDocumentColumn, "TEXT NOT NULL"});
    return c;
  }();
  return columns;
}

json document_of(const Measurement& m) {
  json doc = json::object();
  for (const auto& f : measurement_fields()) {
    if (!f.in_document() || !present_in(f, m)) continue;
    json v = f.value(m);
    if (f.type == FieldType::kThrottleBits && !v.is_null()) v = throttle::describe(v.get<uint64_t>());
    doc[f.json_path] = std::move(v);
  }
  return doc;
}

Measurement measurement_of(const json& document) {
  if (!document.is_object())
    throw std::invalid_argument(
        fmt::format("a result document must be a JSON object, not {} (a damaged row?)", document.type_name()));
  Measurement m;
  for (const auto& f : measurement_fields()) {
    if (f.derived() || !f.in_document() || !document.contains(f.json_path)) continue;
    f.read(m, document.at(f.json_path));
  }
  return m;
}

json column_values(const Measurement& m) {
  json row = json::object();
  for (const auto& f : measurement_fields()) {
    if (f.sql_column.empty()) continue;
    json v = present_in(f, m) ? f.value(m) : json(nullptr);
    if (f.type == FieldType::kTextList && v.is_array()) {
      std::string joined;
      for (const auto& x : v) joined += (joined.empty() ? "" : ",") + x.get<std::string>();
      v = joined;
    } else if (f.type == FieldType::kSettings) {
      v = v.empty() ? json(nullptr) : json(v.dump());
    } else if (f.type == FieldType::kBool && v.is_boolean()) {
      v = v.get<bool>() ? 1 : 0;  // an INTEGER column on both engines
    }
    if (f.empty_is_null && (v.is_null() || (v.is_string() && v.get<std::string>().empty()))) v = nullptr;
    row[f.sql_column] = std::move(v);
  }
  return row;
}

bool upgrade_document(json& document) {
  if (!document.is_object() || document.contains("waits_for_device")) return false;
  const auto method = document.find("method");
  document["waits_for_device"] = method != document.end() && method->is_string() &&
                                 method->get<std::string>().find(kWaitsForDeviceNote) != std::string::npos;
  return true;
}

}  // namespace opcost
