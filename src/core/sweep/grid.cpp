#include "core/sweep/grid.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "core/io/input_file.h"
#include "core/spec/spec_file.h"
#include "core/sweep/odometer.h"

namespace opcost {

namespace {

// A YAML scalar as an axis value: an integer, a float, true/false, or text (a dtype, "normal").
ExprValue scalar_value(const YAML::Node& n) {
  const std::string s = n.Scalar();
  if (n.Tag() == "!") return s;  // quoted: always text
  try {
    std::size_t used = 0;
    const long long i = std::stoll(s, &used);
    if (used == s.size()) return int64_t(i);
    const double d = std::stod(s, &used);
    if (used == s.size()) return d;
  } catch (const std::exception&) {}
  if (s == "true") return true;
  if (s == "false") return false;
  return s;
}

std::string describe(const std::vector<std::pair<std::string, ExprValue>>& values) {
  std::string out;
  for (const auto& [k, v] : values) out += fmt::format("{}{}={}", out.empty() ? "" : ", ", k, to_text(v));
  return out;
}

// "{dtype}[{batch},{cin}]" with each "{...}" replaced by its value.
std::string fill(const std::string& text, const ExprScope& scope, const std::string& at) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t open = text.find('{', i);
    if (open == std::string::npos) {
      out += text.substr(i);
      break;
    }
    const std::size_t close = text.find('}', open);
    if (close == std::string::npos)
      throw std::invalid_argument(fmt::format("{}: \"{}\" opens '{{' without closing it", at, text));
    out += text.substr(i, open - i);
    out += to_text(evaluate(text.substr(open + 1, close - open - 1), scope));
    i = close + 1;
  }
  return out;
}

std::string arg_text(const YAML::Node& n, const ExprScope& scope, const std::string& at) {
  if (n.IsScalar()) return fill(n.Scalar(), scope, at);
  if (n.IsSequence()) {
    std::string out = "[";
    for (std::size_t k = 0; k < n.size(); ++k) out += (k ? "," : "") + arg_text(n[k], scope, at);
    return out + "]";
  }
  throw std::invalid_argument(
      fmt::format("{}: an argument is a value, a template string or a list, not a mapping", at));
}

struct Axis {
  std::vector<std::string> names;                // one, or a zip group's
  std::vector<std::vector<ExprValue>> settings;  // each setting: one value per name
};

std::vector<Axis> read_axes(const YAML::Node& root, const std::string& origin) {
  std::vector<Axis> axes;
  auto list_of = [&](const YAML::Node& values, const std::string& name, const std::string& key) {
    if (!values.IsSequence() || values.size() == 0)
      throw std::invalid_argument(
          fmt::format("{}: {}.{} must be a non-empty list of values, e.g. [1, 8, 32]", origin, key, name));
    std::vector<ExprValue> out;
    for (const auto& v : values) {
      if (!v.IsScalar())
        throw std::invalid_argument(
            fmt::format("{}: {}.{}: each value is a number or a word, not a list", origin, key, name));
      out.push_back(scalar_value(v));
    }
    return out;
  };
  if (const YAML::Node a = root["axes"]) {
    if (!a.IsMap()) throw std::invalid_argument(fmt::format("{}: 'axes' maps names to lists of values", origin));
    for (const auto& kv : a) {
      const auto name = kv.first.as<std::string>();
      Axis axis{{name}, {}};
      for (auto& v : list_of(kv.second, name, "axes")) axis.settings.push_back({v});
      axes.push_back(std::move(axis));
    }
  }
  if (const YAML::Node z = root["zip"]) {
    if (!z.IsSequence())
      throw std::invalid_argument(
          fmt::format("{}: 'zip' is a list of groups, e.g. [{{cin: [64, 128], cout: [128, 256]}}]", origin));
    for (std::size_t g = 0; g < z.size(); ++g) {
      if (!z[g].IsMap())
        throw std::invalid_argument(fmt::format("{}: zip[{}] maps names to lists of values", origin, g));
      Axis axis;
      std::vector<std::vector<ExprValue>> columns;
      for (const auto& kv : z[g]) {
        axis.names.push_back(kv.first.as<std::string>());
        columns.push_back(list_of(kv.second, axis.names.back(), fmt::format("zip[{}]", g)));
        if (columns.back().size() != columns.front().size())
          throw std::invalid_argument(fmt::format(
              "{}: zip[{}]: {} has {} values and {} has {}; zipped lists move in step, "
              "so they need the same length",
              origin, g, axis.names.front(), columns.front().size(), axis.names.back(), columns.back().size()));
      }
      for (std::size_t r = 0; r < (columns.empty() ? 0 : columns.front().size()); ++r) {
        std::vector<ExprValue> setting;
        for (const auto& c : columns) setting.push_back(c[r]);
        axis.settings.push_back(std::move(setting));
      }
      axes.push_back(std::move(axis));
    }
  }
  return axes;
}

// One setting of the `data` axis: how the floating-point inputs are filled.
struct DataSetting {
  std::string label;  // "normal", "uniform", "uniform[-2,2]", "zeros=0.5"
  std::optional<std::pair<double, double>> range;
  std::optional<double> zeros_fraction;
};

std::vector<DataSetting> read_data(const YAML::Node& d, const std::string& origin) {
  const std::string form =
      "each 'data' entry is normal, uniform, {uniform: [low, high]} or {zeros: fraction}, e.g. "
      "data: [normal, {zeros: 0.5}]";
  if (!d.IsSequence() || d.size() == 0) throw std::invalid_argument(fmt::format("{}: data: {}", origin, form));
  std::vector<DataSetting> out;
  for (std::size_t i = 0; i < d.size(); ++i) {
    const YAML::Node e = d[i];
    const std::string at = fmt::format("{}: data[{}]", origin, i);
    DataSetting s;
    if (e.IsScalar() && e.Scalar() == "normal") {
      s.label = "normal";
    } else if (e.IsScalar() && e.Scalar() == "uniform") {
      s.label = "uniform";
      s.range = std::pair(-1.0, 1.0);
    } else if (e.IsMap() && e.size() == 1 && e["zeros"]) {
      double f = -1;
      try {
        f = e["zeros"].as<double>();
      } catch (const YAML::Exception&) {}
      if (!(f >= 0 && f <= 1))
        throw std::invalid_argument(fmt::format("{}: zeros is the fraction of zero elements, from 0 to 1", at));
      s.zeros_fraction = f;
      s.label = fmt::format("zeros={}", e["zeros"].Scalar());
    } else if (e.IsMap() && e.size() == 1 && e["uniform"] && e["uniform"].IsSequence() && e["uniform"].size() == 2) {
      const double lo = e["uniform"][0].as<double>(), hi = e["uniform"][1].as<double>();
      if (!(hi > lo)) throw std::invalid_argument(fmt::format("{}: uniform: [low, high] needs high > low", at));
      s.range = std::pair(lo, hi);
      s.label = fmt::format("uniform[{},{}]", e["uniform"][0].Scalar(), e["uniform"][1].Scalar());
    } else {
      throw std::invalid_argument(fmt::format("{}: {}", at, form));
    }
    out.push_back(std::move(s));
  }
  return out;
}

bool is_floating(const std::string& dtype) {
  return dtype == "f32" || dtype == "f16" || dtype == "bf16" || dtype == "f64" || dtype.rfind("f8", 0) == 0;
}

// Every floating-point tensor of the call (in lists too) gets the setting's values; integer
// tensors (indices) keep theirs.
void apply_data(ArgValue& v, const DataSetting& d) {
  if (auto* t = std::get_if<TensorSpec>(&v.v)) {
    if (!is_floating(t->dtype)) return;
    if (d.range) t->range = d.range;
    if (d.zeros_fraction) t->zeros_fraction = d.zeros_fraction;
  } else if (auto* list = std::get_if<ArgList>(&v.v)) {
    for (auto& e : *list) apply_data(e, d);
  }
}

}  // namespace

Grid expand_grid_text(const std::string& yaml, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument(fmt::format("{}:{}: not YAML: {}", origin, e.mark.line + 1, e.msg));
  }
  if (!root.IsMap()) throw std::invalid_argument(fmt::format("{}: a grid is a mapping with op, args and axes", origin));
  static const char* const known[] = {"name", "op", "args", "axes", "zip", "derive", "where", "data"};
  for (const auto& kv : root) {
    const auto key = kv.first.as<std::string>();
    if (std::find(std::begin(known), std::end(known), key) == std::end(known))
      throw std::invalid_argument(fmt::format(
          "{}: unknown key '{}' (a grid has name, op, args, axes, zip, derive, where and data)", origin, key));
  }
  Grid grid;
  if (!root["op"] || !root["op"].IsScalar())
    throw std::invalid_argument(fmt::format("{}: missing 'op' (e.g. op: aten::conv2d)", origin));
  grid.op = root["op"].Scalar();
  grid.name = root["name"] ? root["name"].as<std::string>() : grid.op;
  const YAML::Node args = root["args"];
  if (args && !args.IsMap())
    throw std::invalid_argument(fmt::format("{}: 'args' maps argument names to values", origin));
  std::vector<Axis> axes = read_axes(root, origin);
  // `data` is the last axis (the fastest): one configuration's data settings sit together.
  std::vector<DataSetting> data;
  if (const YAML::Node d = root["data"]) {
    data = read_data(d, origin);
    for (const auto& a : axes)
      if (std::find(a.names.begin(), a.names.end(), "data") != a.names.end())
        throw std::invalid_argument(
            fmt::format("{}: 'data' is both an axis and the data key; rename the axis", origin));
    Axis axis{{"data"}, {}};
    for (const auto& s : data) axis.settings.push_back({s.label});
    axes.push_back(std::move(axis));
  }
  std::vector<std::pair<std::string, std::string>> derive;
  if (const YAML::Node d = root["derive"]) {
    if (!d.IsMap()) throw std::invalid_argument(fmt::format("{}: 'derive' maps names to expressions", origin));
    for (const auto& kv : d) derive.emplace_back(kv.first.as<std::string>(), kv.second.as<std::string>());
  }
  std::vector<std::string> filters;
  if (const YAML::Node w = root["where"]) {
    if (w.IsScalar())
      filters.push_back(w.Scalar());
    else if (w.IsSequence())
      for (const auto& f : w) filters.push_back(f.as<std::string>());
    else
      throw std::invalid_argument(fmt::format("{}: 'where' is an expression or a list of them", origin));
  }

  // Odometer over the axes: the last axis moves fastest.
  std::vector<std::size_t> at(axes.size(), 0), sizes;
  for (const auto& a : axes) sizes.push_back(a.settings.size());
  for (bool more = true; more;) {
    GridItem item;
    ExprScope scope;
    for (std::size_t a = 0; a < axes.size(); ++a)
      for (std::size_t n = 0; n < axes[a].names.size(); ++n) {
        item.values.emplace_back(axes[a].names[n], axes[a].settings[at[a]][n]);
        scope[axes[a].names[n]] = axes[a].settings[at[a]][n];
      }
    const std::string where_item = fmt::format("{} (item {})", origin, describe(item.values));
    try {
      for (const auto& [name, expr] : derive) {
        scope[name] = evaluate(expr, scope);
        item.values.emplace_back(name, scope[name]);
      }
      bool keep = true;
      for (const auto& f : filters) keep = keep && evaluate_condition(f, scope);
      if (keep) {
        item.call_line = grid.op;
        if (args)
          for (const auto& kv : args)
            item.call_line +=
                fmt::format(" {}={}", kv.first.as<std::string>(),
                            arg_text(kv.second, scope, where_item + " args." + kv.first.as<std::string>()));
        item.call = parse_call_line(item.call_line, where_item);
        if (!data.empty()) {
          const DataSetting& d = data[at.back()];
          for (auto& a : item.call.args) apply_data(a.value, d);
          item.call_line = item.call.display_name() + " " + format_args(item.call.args);
        }
        grid.items.push_back(std::move(item));
      } else {
        ++grid.filtered_out;
      }
    } catch (const ExpressionError& e) {
      throw ExpressionError(fmt::format("{}: {}", where_item, e.what()));
    }
    more = next_combination(at, sizes);
  }
  return grid;
}

Grid expand_grid_file(const std::string& path) { return expand_grid_text(read_text_file(path, "the grid file"), path); }

}  // namespace opcost
