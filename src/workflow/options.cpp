// The options registry's tables, and the checks and conversions every face shares.
#include "workflow/options.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>

#include "core/spec/arg_value.h"
#include "core/spec/cache_mode.h"
#include "core/spec/device_spec.h"
#include "core/spec/signature.h"  // stable_hash
#include "core/text/text.h"
#include "torch/graph_batch.h"  // kEnergyGraphsAuto, kEnergyGraphsOff

namespace opcost {

namespace {

constexpr double kMaxWhole = double(std::numeric_limits<std::int64_t>::max());
// A byte count past a tebibyte is a typing mistake on any machine opcost runs on (and a cold
// footprint that large would be memory the replay tries to fill).
constexpr double kMaxBytes = double(std::int64_t(1) << 40);

// A user's text as a message echoes it: short and printable.
std::string echoed(std::string_view text) { return printable(elide(std::string(text), 40), false); }

std::string canonical_device(std::string_view text) { return to_string(parse_device_spec(text)); }
std::string canonical_cache_mode(std::string_view text) { return to_string(parse_cache_mode(text)); }
std::string canonical_predict_cache(std::string_view text) {
  if (text == "auto" || text == "warm" || text == "cold") return std::string(text);
  throw std::invalid_argument(fmt::format("unknown cache '{}' (use auto, warm or cold)", echoed(text)));
}
// --cost-model: a file that is there ("" : the newest model stored in the database). Read and
// checked as a model when the prediction starts (workflow/predict_estimates.h).
std::string canonical_cost_model_path(std::string_view text) {
  std::error_code ec;
  if (text.empty() || std::filesystem::is_regular_file(std::string(text), ec)) return std::string(text);
  throw std::invalid_argument(
      fmt::format("no cost model file '{}' (give the file `opcost fit -o FILE` wrote, or leave it out for the "
                  "newest model stored in the database)",
                  echoed(text)));
}
std::string canonical_energy_graphs(std::string_view text) {
  if (text == kEnergyGraphsAuto || text == kEnergyGraphsOff) return std::string(text);
  throw std::invalid_argument(fmt::format("unknown energy graphs mode '{}' (use auto or off)", echoed(text)));
}
std::string canonical_autocast(std::string_view text) {
  if (text.empty()) return "";
  const auto code = canonical_dtype(text);
  if (!code || (*code != "bf16" && *code != "f16"))
    throw std::invalid_argument(
        fmt::format("autocast dtype '{}' is not supported (use bf16 or fp16, or none)", echoed(text)));
  return *code;
}

OptionInfo info(std::string_view name, std::string_view flag, OptionType type, std::string_view unit,
                std::string_view help, OptionRange range, bool identity, unsigned commands) {
  OptionInfo o;
  o.name = name;
  o.flag = flag;
  o.type = type;
  o.unit = unit;
  o.help = help;
  o.range = range;
  o.identity = identity;
  o.commands = commands;
  return o;
}
OptionInfo text_info(std::string_view name, std::string_view flag, std::string_view help,
                     std::vector<std::string_view> choices, std::string (*check)(std::string_view), unsigned commands) {
  OptionInfo o = info(name, flag, OptionType::kText, "", help, {}, false, commands);
  o.choices = std::move(choices);
  o.check_text = check;
  return o;
}

double number_of(const OptionValue& v) { return std::get<double>(v); }
std::int64_t whole_of(const OptionValue& v) { return std::get<std::int64_t>(v); }
bool flag_of(const OptionValue& v) { return std::get<bool>(v); }
const std::string& text_of(const OptionValue& v) { return std::get<std::string>(v); }

// An option of MeasureConfig: declared once, bound to MeasureOptions::config (measure, sweep)
// and to PredictOptions::op_config (validate, model).
struct ConfigOption {
  OptionInfo info;
  std::function<OptionValue(const MeasureConfig&)> get;
  std::function<void(MeasureConfig&, const OptionValue&)> set;
};

constexpr unsigned kMeasuring = kMeasureCommand | kSweepCommand;
constexpr unsigned kPredictMeasuring = kValidateCommand | kModelCommand;
constexpr unsigned kAllMeasuring = kMeasuring | kPredictMeasuring;

// Part of the identity key: a loop replayed from a CUDA graph runs at another pace than one
// issued call by call, and its energy per call differs (torch/graph_batch.h).
OptionInfo energy_graphs_info() {
  OptionInfo i = text_info("energy_graphs", "--energy-graphs",
                           "auto: on CUDA, an op the GPU waits for (host issue time above its GPU time) has its energy "
                           "loop replay a CUDA graph of its calls, at the GPU's pace; off: calls issued one by one",
                           {kEnergyGraphsAuto, kEnergyGraphsOff}, &canonical_energy_graphs, kAllMeasuring);
  i.identity = true;
  return i;
}

const std::vector<ConfigOption>& config_options() {
  using T = OptionType;
  static const std::vector<ConfigOption> options = {
      {info("max_time", "--max-time", T::kNumber, "s", "timing budget per operator, seconds",
            {0, false, kMaxBudgetSeconds}, true, kAllMeasuring),
       [](const MeasureConfig& c) { return OptionValue(c.time.max_seconds); },
       [](MeasureConfig& c, const OptionValue& v) { c.time.max_seconds = number_of(v); }},
      {info("target_ci", "--target-ci", T::kNumber, "",
            "stop timing when the 95% CI half-width is this fraction of the mean", {0, false, 1}, true, kAllMeasuring),
       [](const MeasureConfig& c) { return OptionValue(c.time.target_rel_ci95); },
       [](MeasureConfig& c, const OptionValue& v) { c.time.target_rel_ci95 = number_of(v); }},
      {info("energy", "--no-energy", T::kFlag, "", "skip the energy loop", {}, true, kAllMeasuring),
       [](const MeasureConfig& c) { return OptionValue(c.energy); },
       [](MeasureConfig& c, const OptionValue& v) { c.energy = flag_of(v); }},
      {info("energy_max_time", "--energy-max-time", T::kNumber, "s", "energy loop budget per operator, seconds",
            {0, false, kMaxBudgetSeconds}, true, kAllMeasuring),
       [](const MeasureConfig& c) { return OptionValue(c.energy_max_s); },
       [](MeasureConfig& c, const OptionValue& v) { c.energy_max_s = number_of(v); }},
      {info("energy_max_time_capped", "--energy-max-time-capped", T::kNumber, "s",
            "energy loop budget per operator when the GPU sits at its power cap, seconds",
            {0, false, kMaxBudgetSeconds}, true, kAllMeasuring),
       [](const MeasureConfig& c) { return OptionValue(c.energy_max_capped_s); },
       [](MeasureConfig& c, const OptionValue& v) { c.energy_max_capped_s = number_of(v); }},
      {info("energy_settle", "--energy-settle", T::kNumber, "s",
            "seconds an energy loop runs before its windows count (short loops: at most 0.15)",
            {0, true, kMaxBudgetSeconds}, true, kAllMeasuring),
       [](const MeasureConfig& c) { return OptionValue(c.energy_settle_s); },
       [](MeasureConfig& c, const OptionValue& v) { c.energy_settle_s = number_of(v); }},
      {info("energy_target_ci", "--energy-target-ci", T::kNumber, "", "stop the energy loop at this relative 95% CI",
            {0, false, 1}, true, kAllMeasuring),
       [](const MeasureConfig& c) { return OptionValue(c.energy_target_rel_ci95); },
       [](MeasureConfig& c, const OptionValue& v) { c.energy_target_rel_ci95 = number_of(v); }},
      {info("energy_min_windows", "--energy-min-windows", T::kWhole, "",
            "counter periods an energy loop spans at least (short loops: at most 3)", {2, true, 100}, true,
            kAllMeasuring),
       [](const MeasureConfig& c) { return OptionValue(std::int64_t(c.energy_min_windows)); },
       [](MeasureConfig& c, const OptionValue& v) { c.energy_min_windows = std::size_t(whole_of(v)); }},
      {energy_graphs_info(), [](const MeasureConfig& c) { return OptionValue(c.energy_graphs); },
       [](MeasureConfig& c, const OptionValue& v) { c.energy_graphs = text_of(v); }},
  };
  return options;
}

// An option's spec, bound to its struct by `get` and `set`, appended to `specs`: one shape for
// every registry.
template <typename Options>
void add_spec(std::vector<OptionSpec<Options>>& specs, OptionInfo info, std::function<OptionValue(const Options&)> get,
              std::function<void(Options&, const OptionValue&)> set) {
  OptionSpec<Options> s;
  static_cast<OptionInfo&>(s) = std::move(info);
  s.get = std::move(get);
  s.set = std::move(set);
  specs.push_back(std::move(s));
}

std::vector<MeasureOptionSpec> make_measure_specs() {
  std::vector<MeasureOptionSpec> out;
  auto add = [&out](OptionInfo i, std::function<OptionValue(const MeasureOptions&)> get,
                    std::function<void(MeasureOptions&, const OptionValue&)> set) {
    add_spec(out, std::move(i), std::move(get), std::move(set));
  };
  add(
      text_info("device", "--device", "auto (CUDA when present), cpu, cuda, cuda:N", {}, &canonical_device, kMeasuring),
      [](const MeasureOptions& o) { return OptionValue(o.replay.device); },
      [](MeasureOptions& o, const OptionValue& v) { o.replay.device = text_of(v); });
  add(
      text_info("cache", "--cache",
                "warm: reuse inputs; cold: rotate inputs over the cold footprint; cold:ARG,...: rotate those "
                "arguments only (an inventory spec's entries rotate the inputs the model reads from memory, unless "
                "cold)",
                {}, &canonical_cache_mode, kMeasuring),
      [](const MeasureOptions& o) { return OptionValue(o.replay.cache_mode); },
      [](MeasureOptions& o, const OptionValue& v) { o.replay.cache_mode = text_of(v); });
  add(
      info("seed", "--seed", OptionType::kWhole, "", "seed of the random input data", {0, true, kMaxWhole}, true,
           kMeasuring),
      [](const MeasureOptions& o) { return OptionValue(std::int64_t(o.replay.seed)); },
      [](MeasureOptions& o, const OptionValue& v) { o.replay.seed = std::uint64_t(whole_of(v)); });
  add(
      text_info("autocast", "--autocast", "replay under autocast to this dtype (bf16, fp16), as an autocast model runs",
                {}, &canonical_autocast, kMeasuring),
      [](const MeasureOptions& o) { return OptionValue(o.replay.autocast); },
      [](MeasureOptions& o, const OptionValue& v) { o.replay.autocast = text_of(v); });
  add(
      info("cold_footprint", "--cold-footprint", OptionType::kBytes, "bytes",
           "cold caches: the input sets rotated over span at least this much, as 256MiB or bytes", {1, true, kMaxBytes},
           true, kMeasuring),
      [](const MeasureOptions& o) { return OptionValue(std::int64_t(o.replay.cold_footprint_bytes)); },
      [](MeasureOptions& o, const OptionValue& v) { o.replay.cold_footprint_bytes = std::size_t(whole_of(v)); });
  // Not part of an item's key: measured together or alone, each row is the same call's figure,
  // its method saying how its energy was had.
  add(
      info("energy_group", "--energy-group", OptionType::kWhole, "",
           "items measured together: each timed alone, their energies split from one loop's shared counter "
           "windows; 0: 16 where the energy counter is slow (NVML's), else 1 (each its own energy loop)",
           {0, true, double(kMaxSweepEnergyGroup)}, false, kSweepCommand),
      [](const MeasureOptions& o) { return OptionValue(std::int64_t(o.energy_group)); },
      [](MeasureOptions& o, const OptionValue& v) { o.energy_group = std::size_t(whole_of(v)); });
  for (const ConfigOption& c : config_options()) {
    auto i = c.info;
    i.commands &= kMeasuring;
    add(
        i, [get = c.get](const MeasureOptions& o) { return get(o.config); },
        [set = c.set](MeasureOptions& o, const OptionValue& v) { set(o.config, v); });
  }
  return out;
}

std::vector<PredictOptionSpec> make_predict_specs() {
  std::vector<PredictOptionSpec> out;
  auto add = [&out](OptionInfo i, std::function<OptionValue(const PredictOptions&)> get,
                    std::function<void(PredictOptions&, const OptionValue&)> set) {
    add_spec(out, std::move(i), std::move(get), std::move(set));
  };
  constexpr unsigned kPredicting = kPredictCommand | kPredictMeasuring;
  add(
      text_info("cache", "--cache",
                "operator inputs as the model reads them: auto (a weight read once a step from memory, an activation "
                "just written from L2; by the GPU's L2 size), warm (all reused), cold (all rotated over 256 MiB)",
                {"auto", "warm", "cold"}, &canonical_predict_cache, kPredicting),
      [](const PredictOptions& o) { return OptionValue(o.cache); },
      [](PredictOptions& o, const OptionValue& v) { o.cache = text_of(v); });
  add(
      info("cache_bytes", "--cache-bytes", OptionType::kBytes, "bytes",
           "cache auto: the cache the inputs are classed against, as 50MiB or bytes (0: the GPU's L2; on the CPU, "
           "none: all warm)",
           {0, true, kMaxBytes}, false, kPredicting),
      [](const PredictOptions& o) { return OptionValue(std::int64_t(o.cache_bytes)); },
      [](PredictOptions& o, const OptionValue& v) { o.cache_bytes = std::uint64_t(whole_of(v)); });
  for (const ConfigOption& c : config_options()) {
    auto i = c.info;
    i.commands &= kPredictMeasuring;
    i.identity = false;  // a prediction has no identity key; its measurements' settings do
    if (i.name == "energy") {
      i.help = "skip the energy loops (operators and the step)";
      add(
          i, [](const PredictOptions& o) { return OptionValue(o.op_config.energy); },
          [](PredictOptions& o, const OptionValue& v) { o.op_config.energy = o.step_config.energy = flag_of(v); });
      continue;
    }
    add(
        i, [get = c.get](const PredictOptions& o) { return get(o.op_config); },
        [set = c.set](PredictOptions& o, const OptionValue& v) { set(o.op_config, v); });
  }
  add(
      info("step_max_time", "--step-max-time", OptionType::kNumber, "s",
           "timing budget for the whole step, seconds (validate's first measurement, before the operators, "
           "takes at most 1)",
           {0, false, kMaxBudgetSeconds}, false, kPredictMeasuring),
      [](const PredictOptions& o) { return OptionValue(o.step_config.time.max_seconds); },
      [](PredictOptions& o, const OptionValue& v) { o.step_config.time.max_seconds = number_of(v); });
  add(
      info("short_loops_after", "--short-loops-after", OptionType::kNumber, "",
           "once the measured operators explain this share of the step, measure the rest with short loops "
           "(0: from the first, 1: never)",
           {0, true, 1}, false, kPredictMeasuring),
      [](const PredictOptions& o) { return OptionValue(o.short_loops_after); },
      [](PredictOptions& o, const OptionValue& v) { o.short_loops_after = number_of(v); });
  add(
      info("ops_energy_ci", "--ops-energy-ci", OptionType::kNumber, "",
           "with short loops, the relative 95% interval the operators' energies may add to the step's (each stops "
           "at its share's: a 1% operator at 10 times it; 0: each at 5%)",
           {0, true, 1}, false, kPredictMeasuring),
      [](const PredictOptions& o) { return OptionValue(o.ops_energy_rel_ci95); },
      [](PredictOptions& o, const OptionValue& v) { o.ops_energy_rel_ci95 = number_of(v); });
  add(
      info("shared_windows", "--no-shared-windows", OptionType::kFlag, "",
           "with short loops on a GPU, give each operator an energy loop of its own instead of sharing one loop's "
           "counter windows with other operators (up to 16 columns a loop)",
           {}, false, kPredictMeasuring),
      [](const PredictOptions& o) { return OptionValue(o.shared_windows); },
      [](PredictOptions& o, const OptionValue& v) { o.shared_windows = flag_of(v); });
  add(
      info("own_loops", "--own-loops", OptionType::kWhole, "",
           "with shared windows, the heaviest operators get energy loops of their own until this many have one or "
           "they explain half the step, and the rest share (fewer: more share loops, each heavy operator's "
           "interval from a shared split; 0: all share)",
           {0, true, 100000}, false, kPredictMeasuring),
      [](const PredictOptions& o) { return OptionValue(std::int64_t(o.own_loops)); },
      [](PredictOptions& o, const OptionValue& v) { o.own_loops = std::size_t(whole_of(v)); });
  add(
      info("duty_cycle", "--no-duty-cycle", OptionType::kFlag, "",
           "on a GPU, keep the energy of an operator that reaches the power cap in its own loop as that loop "
           "measured it, instead of measuring it again at the step's duty cycle when the step stays below the cap",
           {}, false, kPredictMeasuring),
      [](const PredictOptions& o) { return OptionValue(o.duty_cycle); },
      [](PredictOptions& o, const OptionValue& v) { o.duty_cycle = flag_of(v); });
  OptionInfo estimate = info("estimate", "--estimate", OptionType::kFlag, "",
                             "where the database has no row of a call, estimate its cost from the fitted cost model "
                             "(opcost fit; docs/estimate.md): marked estimated, never stored",
                             {}, false, kPredicting);
  estimate.flag_sets = true;
  add(
      estimate, [](const PredictOptions& o) { return OptionValue(o.estimate); },
      [](PredictOptions& o, const OptionValue& v) { o.estimate = flag_of(v); });
  add(
      text_info("cost_model", "--cost-model",
                "with --estimate: a cost model file (opcost fit -o FILE); default: the newest stored in the database",
                {}, &canonical_cost_model_path, kPredicting),
      [](const PredictOptions& o) { return OptionValue(o.cost_model); },
      [](PredictOptions& o, const OptionValue& v) { o.cost_model = text_of(v); });
  add(
      info("target", "--target", OptionType::kNumber, "", "share of the step's time and energy to explain",
           {0.01, true, 1, true}, false, kModelCommand),
      [](const PredictOptions& o) { return OptionValue(o.target); },
      [](PredictOptions& o, const OptionValue& v) { o.target = number_of(v); });
  return out;
}

std::string unit_suffix(const OptionInfo& o) {
  if (o.unit == "s") return " seconds";
  if (o.unit == "bytes") return " bytes";
  return "";
}

// "above 0 and at most 86400 seconds", "from 2 to 100", "0 or from 0.01 to 1".
std::string range_text(const OptionInfo& o) {
  const OptionRange& r = o.range;
  const std::string range = r.low_included ? fmt::format("from {} to {}{}", r.low, r.high, unit_suffix(o))
                                           : fmt::format("above {} and at most {}{}", r.low, r.high, unit_suffix(o));
  return r.zero_allowed ? "0, or " + range : range;
}

bool in_range(const OptionRange& r, double v) {
  if (r.zero_allowed && v == 0) return true;
  return (r.low_included ? v >= r.low : v > r.low) && v <= r.high;
}

// The reason a value is refused, without the option's name ("must be a number ..., not -1").
std::string number_error(const OptionInfo& o, double v, const std::string& as_given) {
  const char* kind = o.type == OptionType::kNumber ? "number" : "whole number";
  if (!std::isfinite(v)) return fmt::format("must be a finite {} {}, not {}", kind, range_text(o), as_given);
  if (o.type != OptionType::kNumber && v != std::floor(v))
    return fmt::format("must be a whole number {}, not {}", range_text(o), as_given);
  if (!in_range(o.range, v)) return fmt::format("must be a {} {}, not {}", kind, range_text(o), as_given);
  return "";
}

std::string type_name(const OptionInfo& o) {
  switch (o.type) {
    case OptionType::kFlag:
      return "True or False (true or false)";
    case OptionType::kNumber:
      return fmt::format("a number{}", o.unit == "s" ? " of seconds" : "");
    case OptionType::kWhole:
      return "a whole number";
    case OptionType::kBytes:
      return "a whole number of bytes";
    case OptionType::kText:
      return "text";
  }
  return "a value";
}

std::string value_shown(const OptionValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, std::string>)
          return fmt::format("'{}'", echoed(x));
        else if constexpr (std::is_same_v<X, bool>)
          return x ? "true" : "false";
        else
          return fmt::format("{}", x);
      },
      v);
}

// The reason, or "" with `out` set to the canonical value.
std::string check_value(const OptionInfo& o, const OptionValue& v, OptionValue& out, bool& type_error) {
  type_error = false;
  switch (o.type) {
    case OptionType::kFlag:
      if (!std::holds_alternative<bool>(v)) break;
      out = v;
      return "";
    case OptionType::kNumber: {
      if (std::holds_alternative<bool>(v) || std::holds_alternative<std::string>(v)) break;
      const double d = std::holds_alternative<double>(v) ? std::get<double>(v) : double(std::get<std::int64_t>(v));
      if (auto why = number_error(o, d, value_shown(v)); !why.empty()) return why;
      out = d;
      return "";
    }
    case OptionType::kWhole:
    case OptionType::kBytes: {
      if (std::holds_alternative<bool>(v) || std::holds_alternative<std::string>(v)) break;
      if (const auto* w = std::get_if<std::int64_t>(&v)) {
        if (!in_range(o.range, double(*w))) return number_error(o, double(*w), value_shown(v));
        out = *w;
        return "";
      }
      const double d = std::get<double>(v);  // an integral double (JSON, a Python float) is the number
      if (auto why = number_error(o, d, value_shown(v)); !why.empty()) return why;
      out = std::int64_t(d);
      return "";
    }
    case OptionType::kText: {
      const auto* s = std::get_if<std::string>(&v);
      if (!s) break;
      try {
        out = o.check_text ? o.check_text(*s) : *s;
      } catch (const std::invalid_argument& e) {
        return e.what();
      }
      return "";
    }
  }
  type_error = true;
  return fmt::format("must be {}, not {}", type_name(o), value_shown(v));
}

// Bytes as text: a whole number with an optional binary unit ("256MiB", "1G", "4096").
std::optional<double> bytes_of_text(std::string_view text) {
  double n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end == text.data()) return std::nullopt;
  std::string unit(end, text.data() + text.size());
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (!unit.empty() && unit.back() == 'b') unit.pop_back();  // "MiB", "MB", "B"
  if (!unit.empty() && unit.back() == 'i') unit.pop_back();
  static constexpr std::string_view kUnits = "kmgt";
  double scale = 1;
  if (!unit.empty()) {
    const auto at = kUnits.find(unit);
    if (unit.size() != 1 || at == std::string_view::npos) return std::nullopt;
    scale = std::pow(1024.0, double(at + 1));
  }
  return n * scale;
}

// The command line's text as a value of the option's type; the reason when it is none.
std::string value_of_text(const OptionInfo& o, std::string_view text, OptionValue& out) {
  const std::string shown = echoed(text);
  switch (o.type) {
    case OptionType::kFlag:
      if (text == "true" || text == "1" || text == "yes" || text == "on")
        out = true;
      else if (text == "false" || text == "0" || text == "no" || text == "off")
        out = false;
      else
        return fmt::format("must be true or false, not {}", shown);
      return "";
    case OptionType::kNumber: {
      double d = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
      if (ec == std::errc::result_out_of_range)
        d = std::numeric_limits<double>::infinity();
      else if (ec != std::errc() || end != text.data() + text.size())
        return fmt::format("must be a number {}, not {}", range_text(o), shown);
      out = d;
      return "";
    }
    case OptionType::kWhole: {
      std::int64_t w = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), w);
      if (ec != std::errc() || end != text.data() + text.size())
        return fmt::format("must be a whole number {}, not {}", range_text(o), shown);
      out = w;
      return "";
    }
    case OptionType::kBytes: {
      const auto b = bytes_of_text(text);
      if (!b || !std::isfinite(*b) || *b != std::floor(*b) || !in_range(o.range, *b))
        return fmt::format("must be a whole number of bytes {} (as 256MiB, 1GiB or bytes), not {}", range_text(o),
                           shown);
      out = std::int64_t(*b);
      return "";
    }
    case OptionType::kText:
      out = std::string(text);
      return "";
  }
  return "cannot be read";
}

// compare's options (workflow/compare.h): its rounds and traced steps. Not measuring options:
// each variant's step loop takes validate's step settings with the round's budget.
std::vector<CompareOptionSpec> make_compare_specs() {
  using T = OptionType;
  std::vector<CompareOptionSpec> out;
  auto add = [&out](OptionInfo i, std::function<OptionValue(const CompareOptions&)> get,
                    std::function<void(CompareOptions&, const OptionValue&)> set) {
    add_spec(out, std::move(i), std::move(get), std::move(set));
  };
  // A count (a std::size_t member) in [low, high]: four of compare's options are one.
  auto add_count = [&add](std::string_view name, std::string_view flag, std::string_view help, double low, double high,
                          std::size_t CompareOptions::*member) {
    add(
        info(name, flag, T::kWhole, "", help, {low, true, high}, false, kCompareCommand),
        [member](const CompareOptions& o) { return OptionValue(std::int64_t(o.*member)); },
        [member](CompareOptions& o, const OptionValue& v) { o.*member = std::size_t(whole_of(v)); });
  };
  auto add_flag = [&add](std::string_view name, std::string_view flag, std::string_view help,
                         bool CompareOptions::*member) {
    add(
        info(name, flag, T::kFlag, "", help, {}, false, kCompareCommand),
        [member](const CompareOptions& o) { return OptionValue(o.*member); },
        [member](CompareOptions& o, const OptionValue& v) { o.*member = flag_of(v); });
  };
  add_count("rounds", "--rounds",
            "interleaved rounds of whole steps, each running every variant (at least 2: an interval needs two)", 2,
            double(kMaxCompareRounds), &CompareOptions::rounds);
  add_count("warmup_rounds", "--warmup-rounds", "rounds run first and not counted (0: none)", 0,
            double(kMaxCompareWarmupRounds), &CompareOptions::warmup_rounds);
  add(
      info("round_max_time", "--round-max-time", T::kNumber, "s", "seconds of each variant's step loop in a round",
           {0, false, kMaxBudgetSeconds}, false, kCompareCommand),
      [](const CompareOptions& o) { return OptionValue(o.round_max_time); },
      [](CompareOptions& o, const OptionValue& v) { o.round_max_time = number_of(v); });
  add_flag("energy", "--no-energy", "time only: no energy loops", &CompareOptions::energy);
  add_flag("layers", "--no-layers", "whole steps only: no traced steps for the per-layer table",
           &CompareOptions::layers);
  add_count("layer_steps", "--layer-steps", "traced steps a variant for the per-layer table", 1,
            double(kMaxCompareLayerSteps), &CompareOptions::layer_steps);
  add_count("layer_rows", "--layer-rows", "per-layer rows the text shows (0: all; the JSON has all)", 0,
            double(kMaxCompareLayerRows), &CompareOptions::layer_rows);
  return out;
}

template <typename Options>
const OptionSpec<Options>& find_or_throw(const std::vector<OptionSpec<Options>>& specs, std::string_view name) {
  for (const auto& s : specs)
    if (s.name == name) return s;
  std::vector<std::string_view> names;
  for (const auto& s : specs) names.push_back(s.name);
  throw std::invalid_argument(
      fmt::format("unknown option '{}' (the options are: {})", echoed(name), fmt::join(names, ", ")));
}

template <typename Options>
void apply(const std::vector<OptionSpec<Options>>& specs, Options& o, std::string_view name, const OptionValue& v) {
  const auto& spec = find_or_throw(specs, name);
  spec.set(o, checked_option_value(spec, v));
}

template <typename Options>
void check_all(const std::vector<OptionSpec<Options>>& specs, const Options& o) {
  for (const auto& s : specs) checked_option_value(s, s.get(o));
}

template <typename Options>
Settings settings_over(const std::vector<OptionSpec<Options>>& specs, const Options& o) {
  Settings out;
  for (const auto& s : specs) out.emplace_back(std::string(s.name), option_value_text(s.get(o)));
  return out;
}

}  // namespace

std::string OptionInfo::both_spellings() const { return fmt::format("{} ({})", name, flag); }

const std::vector<MeasureOptionSpec>& measure_option_specs() {
  static const std::vector<MeasureOptionSpec> specs = make_measure_specs();
  return specs;
}

const std::vector<PredictOptionSpec>& predict_option_specs() {
  static const std::vector<PredictOptionSpec> specs = make_predict_specs();
  return specs;
}

const std::vector<CompareOptionSpec>& compare_option_specs() {
  static const std::vector<CompareOptionSpec> specs = make_compare_specs();
  return specs;
}

const MeasureOptionSpec* find_measure_option(std::string_view name) {
  for (const auto& s : measure_option_specs())
    if (s.name == name) return &s;
  return nullptr;
}

const PredictOptionSpec* find_predict_option(std::string_view name) {
  for (const auto& s : predict_option_specs())
    if (s.name == name) return &s;
  return nullptr;
}

const std::vector<PredictPreset>& predict_presets() {
  static const std::vector<PredictPreset> presets = {
      {kPredictCommand, false, {}},
      // The whole step runs longer than an operator: its time varies with the host's. Every
      // operator gets short loops whose energy interval follows its share of the step (issue
      // 25: a model validated in under a minute; the operators together still add at most
      // `ops_energy_ci` to the step's interval), with `model`'s budgets.
      {kValidateCommand,
       true,
       {{"max_time", 0.5},
        {"energy_max_time", 1.0},
        {"energy_max_time_capped", 1.5},
        {"step_max_time", 3.0},
        {"short_loops_after", 0.0}}},
      // `model` measures many operators to reach its target, so its loops are shorter (the
      // budgets that keep GPU-bound predictions within a few percent), short from the start:
      // most models' operators each hold a few percent of the step.
      {kModelCommand,
       true,
       {{"target", 0.9},
        {"max_time", 0.5},
        {"energy_max_time", 1.0},
        {"energy_max_time_capped", 1.5},
        {"step_max_time", 3.0},
        {"short_loops_after", 0.0}}},
  };
  return presets;
}

PredictOptions predict_preset(OptionCommand command) {
  PredictOptions o;
  for (const auto& p : predict_presets()) {
    if (p.command != command) continue;
    o.measure = p.measure;
    if (p.measure) o.step_config.synchronous_calls = true;  // a step synchronises itself: timed by wall clock
    for (const auto& v : p.values) apply_option(o, v.option, v.value);
  }
  return o;
}

OptionValue checked_option_value(const OptionInfo& option, const OptionValue& value) {
  OptionValue out;
  bool type_error = false;
  const std::string why = check_value(option, value, out, type_error);
  if (why.empty()) return out;
  const std::string message = fmt::format("{} {}", option.both_spellings(), why);
  if (type_error) throw OptionTypeError(message);
  // A text option's reason is a sentence of its own ("unknown device 'x' (use ...)").
  if (option.type == OptionType::kText)
    throw std::invalid_argument(fmt::format("{}: {}", option.both_spellings(), why));
  throw std::invalid_argument(message);
}

OptionValue parse_option_text(const OptionInfo& option, std::string_view text) {
  OptionValue v;
  if (auto why = value_of_text(option, text, v); !why.empty())
    throw std::invalid_argument(fmt::format("{} {}", option.both_spellings(), why));
  return checked_option_value(option, v);
}

std::string option_text_error(const OptionInfo& option, std::string_view text) {
  OptionValue v, out;
  if (auto why = value_of_text(option, text, v); !why.empty()) return why;
  bool type_error = false;
  return check_value(option, v, out, type_error);
}

std::string option_value_text(const OptionValue& value) {
  return std::visit(
      [](const auto& x) -> std::string {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, std::string>)
          return x;
        else if constexpr (std::is_same_v<X, bool>)
          return x ? "true" : "false";
        else
          return fmt::format("{}", x);  // doubles: the shortest text that reads back the same
      },
      value);
}

void apply_option(MeasureOptions& o, std::string_view name, const OptionValue& value) {
  apply(measure_option_specs(), o, name, value);
}
void apply_option(PredictOptions& o, std::string_view name, const OptionValue& value) {
  apply(predict_option_specs(), o, name, value);
}
void apply_option(CompareOptions& o, std::string_view name, const OptionValue& value) {
  apply(compare_option_specs(), o, name, value);
}
void apply_option_text(MeasureOptions& o, std::string_view name, std::string_view text) {
  const auto& spec = find_or_throw(measure_option_specs(), name);
  spec.set(o, parse_option_text(spec, text));
}
void apply_option_text(PredictOptions& o, std::string_view name, std::string_view text) {
  const auto& spec = find_or_throw(predict_option_specs(), name);
  spec.set(o, parse_option_text(spec, text));
}
void apply_option_text(CompareOptions& o, std::string_view name, std::string_view text) {
  const auto& spec = find_or_throw(compare_option_specs(), name);
  spec.set(o, parse_option_text(spec, text));
}

void check_options(const MeasureOptions& o) { check_all(measure_option_specs(), o); }
void check_options(const PredictOptions& o) { check_all(predict_option_specs(), o); }
void check_options(const CompareOptions& o) { check_all(compare_option_specs(), o); }
void check_options(const MeasureConfig& c) {
  for (const ConfigOption& option : config_options()) checked_option_value(option.info, option.get(c));
}

Settings settings_of(const ReplayOptions& replay, const MeasureConfig& config) {
  MeasureOptions o;
  o.replay = replay;
  o.config = config;
  return settings_of(o);
}
Settings settings_of(const MeasureOptions& o) { return settings_over(measure_option_specs(), o); }
Settings settings_of(const PredictOptions& o) { return settings_over(predict_option_specs(), o); }
Settings settings_of(const CompareOptions& o) { return settings_over(compare_option_specs(), o); }

std::string settings_key(const Settings& settings) {
  std::string text;
  for (const auto& spec : measure_option_specs()) {
    if (!spec.identity) continue;
    if (const std::string* value = find_setting(settings, spec.name)) text += fmt::format("{}={}\n", spec.name, *value);
  }
  return stable_hash(text);
}

const std::string* find_setting(const Settings& settings, std::string_view name) {
  for (const auto& [n, v] : settings)
    if (n == name) return &v;
  return nullptr;
}

}  // namespace opcost
