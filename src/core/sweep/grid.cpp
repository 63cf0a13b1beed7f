#include "core/sweep/grid.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <stdexcept>

#include "core/io/input_file.h"
#include "core/spec/spec_file.h"

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

}  // namespace

Grid expand_grid_text(const std::string& yaml, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument(fmt::format("{}:{}: not YAML: {}", origin, e.mark.line + 1, e.msg));
  }
  if (!root.IsMap()) throw std::invalid_argument(fmt::format("{}: a grid is a mapping with op, args and axes", origin));
  static const char* const known[] = {"name", "op", "args", "axes", "zip", "derive", "where"};
  for (const auto& kv : root) {
    const auto key = kv.first.as<std::string>();
    if (std::find(std::begin(known), std::end(known), key) == std::end(known))
      throw std::invalid_argument(
          fmt::format("{}: unknown key '{}' (a grid has name, op, args, axes, zip, derive and where)", origin, key));
  }
  Grid grid;
  if (!root["op"] || !root["op"].IsScalar())
    throw std::invalid_argument(fmt::format("{}: missing 'op' (e.g. op: aten::conv2d)", origin));
  grid.op = root["op"].Scalar();
  grid.name = root["name"] ? root["name"].as<std::string>() : grid.op;
  const YAML::Node args = root["args"];
  if (args && !args.IsMap())
    throw std::invalid_argument(fmt::format("{}: 'args' maps argument names to values", origin));
  const std::vector<Axis> axes = read_axes(root, origin);
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
  std::vector<std::size_t> at(axes.size(), 0);
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
        grid.items.push_back(std::move(item));
      } else {
        ++grid.filtered_out;
      }
    } catch (const ExpressionError& e) {
      throw ExpressionError(fmt::format("{}: {}", where_item, e.what()));
    }
    more = false;
    for (std::size_t a = axes.size(); a-- > 0;) {
      if (++at[a] < axes[a].settings.size()) {
        more = true;
        break;
      }
      at[a] = 0;
    }
  }
  return grid;
}

Grid expand_grid_file(const std::string& path) { return expand_grid_text(read_text_file(path, "the grid file"), path); }

}  // namespace opcost
