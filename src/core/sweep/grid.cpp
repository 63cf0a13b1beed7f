#include "core/sweep/grid.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "core/io/input_file.h"
#include "core/spec/op_call.h"
#include "core/spec/spec_file.h"
#include "core/sweep/odometer.h"
#include "core/text/text.h"

namespace opcost {

namespace {

// What a grid file may make us hold. A real grid is a few kilobytes; these bounds are far above
// that and far below what would hurt. YAML aliases repeat a node without repeating its text, so
// what is counted is what is read, aliases expanded.
constexpr std::size_t kMaxReadBytes = std::size_t(1) << 20;       // names, values and templates read
constexpr std::size_t kMaxValueBytes = 1024;                      // one axis or derived value
constexpr std::size_t kMaxArgNesting = 8;                         // lists in lists (a tensor list is 1)
constexpr std::size_t kMaxCallLineBytes = std::size_t(64) << 10;  // one item's call, filled in

// User text as a message echoes it (core/text): one line, cut (a 10 MB value must not make 10 MB
// of stderr).
std::string echo(std::string_view text, std::size_t max_bytes = 60) { return printable_one_line(text, max_bytes); }

// How much of a file's name, and of a YAML library's message, a message echoes.
constexpr std::size_t kMaxOriginChars = 1024;
constexpr std::size_t kMaxLibraryMessageChars = 200;

// Counts what is read from the YAML tree, aliases expanded, and refuses past kMaxReadBytes: an
// anchor reused a thousand times reads a thousand times.
class ReadBudget {
 public:
  explicit ReadBudget(std::string origin) : origin_(std::move(origin)) {}
  void visit(std::size_t bytes = 1) {
    used_ += bytes;
    if (used_ > kMaxReadBytes)
      throw std::invalid_argument(fmt::format(
          "{}: the grid reads as more than {} of values and templates (YAML aliases repeating long lists?); a grid "
          "needs its axes' values and a few templates: write it smaller",
          origin_, format_bytes(double(kMaxReadBytes))));
  }
  const std::string& scalar(const YAML::Node& n) {
    visit(n.Scalar().size() + 1);
    return n.Scalar();
  }

 private:
  std::string origin_;
  std::size_t used_ = 0;
};

// The entries of a mapping, each key once. YAML keeps a repeated key and a lookup finds the
// first, so a repeated one would be dropped without a word.
std::vector<std::pair<std::string, YAML::Node>> entries(const YAML::Node& map, const std::string& where,
                                                        ReadBudget& budget) {
  std::vector<std::pair<std::string, YAML::Node>> out;
  std::set<std::string> seen;
  for (const auto& kv : map) {
    if (!kv.first.IsScalar())
      throw std::invalid_argument(fmt::format("{}: a key is a name, not a list or a mapping", where));
    const std::string& key = budget.scalar(kv.first);
    if (!seen.insert(key).second)
      throw std::invalid_argument(
          fmt::format("{}: '{}' is given twice; keep one (YAML would silently use the first)", where, echo(key)));
    out.emplace_back(key, kv.second);
  }
  return out;
}

std::string scalar_text(const YAML::Node& n, const std::string& where, ReadBudget& budget) {
  if (!n.IsScalar()) throw std::invalid_argument(fmt::format("{}: give one value (a word or an expression)", where));
  return budget.scalar(n);
}

// A YAML scalar as an axis value: an integer, a float, true/false, or a word (a dtype, "normal").
ExprValue scalar_value(const YAML::Node& n, const std::string& s, const std::string& at) {
  if (s.size() > kMaxValueBytes)
    throw std::invalid_argument(
        fmt::format("{}: a value of {} bytes ('{}'); an axis value is a number or a word of at most {} bytes", at,
                    s.size(), echo(s), kMaxValueBytes));
  if (n.Tag() == "!" || n.Tag() == "tag:yaml.org,2002:str") return s;  // quoted (or !!str): always text
  // A number is digits with a sign, a point and an exponent at most; anything else (0x10, inf,
  // 1-2) is a word, as YAML's core schema reads it.
  const std::size_t lead = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
  const bool numeric = s.size() > lead && s.find_first_not_of("0123456789.eE+-", lead) == std::string::npos &&
                       (std::isdigit(static_cast<unsigned char>(s[lead])) || s[lead] == '.');
  if (numeric) {
    int64_t i = 0;
    const char* const end = s.data() + s.size();
    const auto [stop, ec] = std::from_chars(s.data() + (s[0] == '+' ? 1 : 0), end, i);
    if (ec == std::errc() && stop == end) return i;
    if (ec == std::errc::result_out_of_range && stop == end)
      throw std::invalid_argument(
          fmt::format("{}: {} does not fit in a 64-bit integer (grid integers are int64, from -9223372036854775808 "
                      "to 9223372036854775807); write it as a float (1e20) or use a smaller value",
                      at, echo(s, 40)));
    char* dstop = nullptr;
    const double d = std::strtod(s.c_str(), &dstop);
    if (dstop == s.c_str() + s.size()) {
      if (!std::isfinite(d))
        throw std::invalid_argument(fmt::format("{}: {} is beyond a 64-bit float", at, echo(s, 40)));
      return d;
    }
  }
  if (s == "true") return true;
  if (s == "false") return false;
  return s;
}

// A name of an axis or derived value: a word expressions can use ({batch}, "k // 2"), none that
// means something else there, and not `data`, the name the data key's axis takes in every item
// (and the export's axis_data column), whether or not this grid has a data key.
void check_name(const std::string& name, const std::string& where) {
  const bool word = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_') &&
                    std::all_of(name.begin(), name.end(),
                                [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
  if (!word)
    throw std::invalid_argument(fmt::format(
        "{}: '{}' is not a name expressions can use: letters, digits and _, not starting with a digit (batch, c_in)",
        where, echo(name)));
  if (name == "data")
    throw std::invalid_argument(fmt::format(
        "{}: 'data' is reserved: it names the data key's axis (how inputs are filled) in every item and in exports; "
        "rename it",
        where));
  static const char* const keywords[] = {"and", "or", "not", "true", "false", "True", "False", "min", "max"};
  if (std::find(std::begin(keywords), std::end(keywords), name) != std::end(keywords))
    throw std::invalid_argument(
        fmt::format("{}: '{}' is a word of expressions, so no expression could use it; rename it", where, echo(name)));
}

std::string describe(const std::vector<std::pair<std::string, ExprValue>>& values) {
  std::string out;
  for (const auto& [k, v] : values) {
    out += fmt::format("{}{}={}", out.empty() ? "" : ", ", k, to_text(v));
    if (out.size() > 200) break;  // echo() cuts it: the rest would be dropped anyway
  }
  return echo(out, 200);
}

// An argument: a template string, or a list of them (of lists...).
struct ArgTemplate {
  bool is_list = false;
  std::string text;
  std::vector<ArgTemplate> list;
};

ArgTemplate read_arg(const YAML::Node& n, const std::string& where, std::size_t depth, ReadBudget& budget) {
  if (n.IsScalar()) return {false, budget.scalar(n), {}};
  if (n.IsSequence()) {
    if (depth >= kMaxArgNesting)
      throw std::invalid_argument(fmt::format(
          "{}: lists nested more than {} deep; an argument is a value or a list of them", where, kMaxArgNesting));
    ArgTemplate t{true, "", {}};
    for (const auto& e : n) {
      budget.visit();
      t.list.push_back(read_arg(e, where, depth + 1, budget));
    }
    return t;
  }
  throw std::invalid_argument(
      fmt::format("{}: an argument is a value, a template string or a list, not a mapping or empty", where));
}

// "{dtype}[{batch},{cin}]" with each "{...}" replaced by its value, appended to `out`.
void fill(const std::string& text, const ExprScope& scope, const std::string& at, std::string& out) {
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t open = text.find('{', i);
    if (open == std::string::npos) {
      out.append(text, i);
      break;
    }
    const std::size_t close = text.find('}', open);
    if (close == std::string::npos)
      throw std::invalid_argument(fmt::format("{}: \"{}\" opens '{{' without closing it", at, echo(text, 80)));
    out.append(text, i, open - i);
    out += to_text(evaluate(text.substr(open + 1, close - open - 1), scope));
    i = close + 1;
    if (out.size() > kMaxCallLineBytes) break;
  }
  if (out.size() > kMaxCallLineBytes)
    throw std::invalid_argument(fmt::format(
        "{}: the call is longer than {} once filled in; no operator call needs that: check the templates and values",
        at, format_bytes(double(kMaxCallLineBytes))));
}

void arg_text(const ArgTemplate& t, const ExprScope& scope, const std::string& at, std::string& out) {
  if (!t.is_list) return fill(t.text, scope, at, out);
  out += '[';
  for (std::size_t k = 0; k < t.list.size(); ++k) {
    if (k) out += ',';
    arg_text(t.list[k], scope, at, out);
  }
  out += ']';
}

struct Axis {
  std::string label;                             // its name, or a zip group's names joined by '+'
  std::vector<std::string> names;                // one, or a zip group's
  std::vector<std::vector<ExprValue>> settings;  // each setting: one value per name
};

// One setting of the `data` axis: how the floating-point inputs are filled.
struct DataSetting {
  std::string label;  // "normal", "uniform", "uniform[-2,2]", "zeros=0.5"
  std::optional<std::pair<double, double>> range;
  std::optional<double> zeros_fraction;
};

std::optional<double> number_of(const YAML::Node& n) {
  if (!n.IsScalar() || n.Scalar().size() > 64) return std::nullopt;
  try {
    return n.as<double>();
  } catch (const YAML::Exception&) {
    return std::nullopt;
  }
}

std::vector<DataSetting> read_data(const YAML::Node& d, const std::string& origin, ReadBudget& budget) {
  const std::string form =
      "each 'data' entry is normal, uniform, {uniform: [low, high]} or {zeros: fraction}, e.g. "
      "data: [normal, {zeros: 0.5}]";
  if (!d.IsSequence() || d.size() == 0) throw std::invalid_argument(fmt::format("{}: data: {}", origin, form));
  std::vector<DataSetting> out;
  for (std::size_t i = 0; i < d.size(); ++i) {
    const YAML::Node e = d[i];
    const std::string at = fmt::format("{}: data[{}]", origin, i);
    budget.visit();
    DataSetting s;
    const auto map = e.IsMap() ? entries(e, at, budget) : std::vector<std::pair<std::string, YAML::Node>>{};
    if (e.IsScalar() && e.Scalar() == "normal") {
      s.label = "normal";
    } else if (e.IsScalar() && e.Scalar() == "uniform") {
      s.label = "uniform";
      s.range = std::pair(-1.0, 1.0);
    } else if (map.size() == 1 && map[0].first == "zeros") {
      const std::optional<double> f = number_of(map[0].second);
      if (!f || !(*f >= 0 && *f <= 1))
        throw std::invalid_argument(fmt::format("{}: zeros is the fraction of zero elements, from 0 to 1", at));
      s.zeros_fraction = f;
      s.label = fmt::format("zeros={}", map[0].second.Scalar());
    } else if (map.size() == 1 && map[0].first == "uniform" && map[0].second.IsSequence() &&
               map[0].second.size() == 2) {
      const YAML::Node r = map[0].second;
      const std::optional<double> lo = number_of(r[0]), hi = number_of(r[1]);
      if (!lo || !hi || !std::isfinite(*lo) || !std::isfinite(*hi) || !(*hi > *lo))
        throw std::invalid_argument(fmt::format("{}: uniform: [low, high] needs two numbers with high > low", at));
      s.range = std::pair(*lo, *hi);
      s.label = fmt::format("uniform[{},{}]", r[0].Scalar(), r[1].Scalar());
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

struct GridDefinition::Parts {
  std::string origin, name, op;
  std::vector<std::pair<std::string, ArgTemplate>> args;
  std::vector<Axis> axes;         // `axes`, then each zip group, then `data`
  std::vector<DataSetting> data;  // empty: no data key
  std::vector<std::pair<std::string, std::string>> derive;
  std::vector<std::string> filters;
};

namespace {

// Each name once across axes, zip groups and derived values: an item has one value per name.
class Names {
 public:
  void add(const std::string& name, const std::string& where) {
    check_name(name, where);
    const auto [it, added] = first_.emplace(name, where);
    if (!added)
      throw std::invalid_argument(
          fmt::format("{}: '{}' is already named by {}; an item has one value per name: rename one of them", where,
                      echo(name), it->second));
  }

 private:
  std::map<std::string, std::string> first_;  // name -> where it was first given
};

std::vector<ExprValue> value_list(const YAML::Node& values, const std::string& at, ReadBudget& budget) {
  if (!values.IsSequence() || values.size() == 0)
    throw std::invalid_argument(fmt::format("{} must be a non-empty list of values, e.g. [1, 8, 32]", at));
  std::vector<ExprValue> out;
  for (const auto& v : values) {
    if (!v.IsScalar())
      throw std::invalid_argument(
          fmt::format("{}: each value is a number or a word, not a list, a mapping or empty", at));
    out.push_back(scalar_value(v, budget.scalar(v), at));
  }
  return out;
}

void read_axes(const YAML::Node& root, GridDefinition::Parts& g, Names& names, ReadBudget& budget) {
  const std::string& origin = g.origin;
  if (const YAML::Node a = root["axes"]) {
    if (!a.IsMap()) throw std::invalid_argument(fmt::format("{}: 'axes' maps names to lists of values", origin));
    for (const auto& [name, values] : entries(a, origin + ": axes", budget)) {
      const std::string at = fmt::format("{}: axes.{}", origin, echo(name));
      names.add(name, at);
      Axis axis{name, {name}, {}};
      for (auto& v : value_list(values, at, budget)) axis.settings.push_back({std::move(v)});
      g.axes.push_back(std::move(axis));
    }
  }
  if (const YAML::Node z = root["zip"]) {
    if (!z.IsSequence())
      throw std::invalid_argument(
          fmt::format("{}: 'zip' is a list of groups, e.g. [{{cin: [64, 128], cout: [128, 256]}}]", origin));
    for (std::size_t group = 0; group < z.size(); ++group) {
      const std::string where = fmt::format("{}: zip[{}]", origin, group);
      if (!z[group].IsMap() || z[group].size() == 0)
        throw std::invalid_argument(fmt::format("{} maps names to lists of values", where));
      Axis axis;
      std::vector<std::vector<ExprValue>> columns;
      for (const auto& [name, values] : entries(z[group], where, budget)) {
        const std::string at = fmt::format("{}.{}", where, echo(name));
        names.add(name, at);
        axis.names.push_back(name);
        axis.label += (axis.label.empty() ? "" : "+") + name;
        columns.push_back(value_list(values, at, budget));
        if (columns.back().size() != columns.front().size())
          throw std::invalid_argument(
              fmt::format("{}: {} has {} values and {} has {}; zipped lists move in step, so they need the same length",
                          where, echo(axis.names.front()), columns.front().size(), echo(name), columns.back().size()));
      }
      for (std::size_t r = 0; r < columns.front().size(); ++r) {
        std::vector<ExprValue> setting;
        for (const auto& c : columns) setting.push_back(c[r]);
        axis.settings.push_back(std::move(setting));
      }
      g.axes.push_back(std::move(axis));
    }
  }
}

}  // namespace

GridDefinition GridDefinition::read(const std::string& yaml, const std::string& given_origin) {
  // The file's name as every message shows it: a path may hold a newline.
  const std::string origin = echo(given_origin, kMaxOriginChars);
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    // yaml-cpp's message quotes the input ("unknown escape character: " and the character).
    throw std::invalid_argument(
        fmt::format("{}:{}: not YAML: {}", origin, e.mark.line + 1, echo(e.msg, kMaxLibraryMessageChars)));
  }
  if (!root.IsMap()) throw std::invalid_argument(fmt::format("{}: a grid is a mapping with op, args and axes", origin));
  ReadBudget budget(origin);
  auto g = std::make_shared<Parts>();
  g->origin = origin;
  static const char* const known[] = {"name", "op", "args", "axes", "zip", "derive", "where", "data"};
  for (const auto& [key, value] : entries(root, origin, budget))
    if (std::find(std::begin(known), std::end(known), key) == std::end(known))
      throw std::invalid_argument(fmt::format(
          "{}: unknown key '{}' (a grid has name, op, args, axes, zip, derive, where and data)", origin, echo(key)));
  if (!root["op"] || !root["op"].IsScalar())
    throw std::invalid_argument(fmt::format("{}: missing 'op' (e.g. op: aten::conv2d)", origin));
  g->op = budget.scalar(root["op"]);
  try {  // refused once here, not in each item's call
    check_op_name(g->op);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("{}: op: {}", origin, e.what()));
  }
  g->name = root["name"] ? scalar_text(root["name"], origin + ": name", budget) : g->op;
  check_sweep_name(g->name, origin);
  if (const YAML::Node args = root["args"]) {
    if (!args.IsMap()) throw std::invalid_argument(fmt::format("{}: 'args' maps argument names to values", origin));
    for (const auto& [name, value] : entries(args, origin + ": args", budget))
      g->args.emplace_back(name, read_arg(value, fmt::format("{}: args.{}", origin, echo(name)), 0, budget));
  }
  Names names;
  read_axes(root, *g, names, budget);
  // `data` is the last axis (the fastest): one configuration's data settings sit together.
  if (const YAML::Node d = root["data"]) {
    g->data = read_data(d, origin, budget);
    Axis axis{"data", {"data"}, {}};
    for (const auto& s : g->data) axis.settings.push_back({s.label});
    g->axes.push_back(std::move(axis));
  }
  if (const YAML::Node d = root["derive"]) {
    if (!d.IsMap()) throw std::invalid_argument(fmt::format("{}: 'derive' maps names to expressions", origin));
    for (const auto& [name, expr] : entries(d, origin + ": derive", budget)) {
      const std::string at = fmt::format("{}: derive.{}", origin, echo(name));
      names.add(name, at);
      g->derive.emplace_back(name, scalar_text(expr, at, budget));
    }
  }
  if (const YAML::Node w = root["where"]) {
    if (w.IsScalar()) {
      g->filters.push_back(budget.scalar(w));
    } else if (w.IsSequence()) {
      for (std::size_t i = 0; i < w.size(); ++i)
        g->filters.push_back(scalar_text(w[i], fmt::format("{}: where[{}]", origin, i), budget));
    } else {
      throw std::invalid_argument(fmt::format("{}: 'where' is an expression or a list of them", origin));
    }
  }
  return GridDefinition(std::move(g));
}

const std::string& GridDefinition::name() const { return parts_->name; }
const std::string& GridDefinition::op() const { return parts_->op; }

std::uint64_t GridDefinition::combinations() const {
  std::uint64_t n = 1;
  for (const auto& a : parts_->axes) n = saturating_product(n, a.settings.size());
  return n;
}

void GridDefinition::check_size(std::uint64_t max_items) const {
  std::string lengths;
  for (const auto& a : parts_->axes) {
    lengths += fmt::format("{}{} {}", lengths.empty() ? "" : " × ", a.label, a.settings.size());
    if (lengths.size() > 200) break;  // echo() cuts it
  }
  check_item_count(
      combinations(), max_items, parts_->origin,
      fmt::format("combinations ({}; `where` filters may keep fewer, but are not counted before expanding)",
                  echo(lengths.empty() ? "no axes" : lengths, 200)));
}

std::size_t GridDefinition::for_each_item(const std::function<void(GridItem&)>& each) const {
  const Parts& g = *parts_;
  std::size_t filtered_out = 0;
  // Odometer over the axes: the last axis moves fastest.
  std::vector<std::size_t> at(g.axes.size(), 0), sizes;
  for (const auto& a : g.axes) sizes.push_back(a.settings.size());
  for (bool more = true; more; more = next_combination(at, sizes)) {
    GridItem item;
    ExprScope scope;
    for (std::size_t a = 0; a < g.axes.size(); ++a)
      for (std::size_t n = 0; n < g.axes[a].names.size(); ++n) {
        item.values.emplace_back(g.axes[a].names[n], g.axes[a].settings[at[a]][n]);
        scope[g.axes[a].names[n]] = g.axes[a].settings[at[a]][n];
      }
    const std::string where_item =
        item.values.empty() ? g.origin : fmt::format("{} (item {})", g.origin, describe(item.values));
    bool keep = true;
    try {
      for (const auto& [name, expr] : g.derive) {
        ExprValue v = evaluate(expr, scope);
        if (const auto* s = std::get_if<std::string>(&v); s && s->size() > kMaxValueBytes)
          throw ExpressionError(
              fmt::format("derive.{}: gives a text of {} bytes; a value is a number or a word of at "
                          "most {} bytes",
                          echo(name), s->size(), kMaxValueBytes));
        scope[name] = v;
        item.values.emplace_back(name, std::move(v));
      }
      // In order, stopping at the first that fails: a later filter may rely on an earlier one
      // (where: ["m != 0", "n % m == 0"]).
      for (const auto& f : g.filters) keep = keep && evaluate_condition(f, scope);
      if (keep) {
        item.call_line = g.op;
        for (const auto& [name, t] : g.args) {
          item.call_line += ' ' + name + '=';
          arg_text(t, scope, fmt::format("{} args.{}", where_item, echo(name)), item.call_line);
        }
      }
    } catch (const ExpressionError& e) {
      throw ExpressionError(fmt::format("{}: {}", where_item, e.what()));
    }
    if (!keep) {
      ++filtered_out;
      continue;
    }
    item.call = parse_call_line(item.call_line, where_item);
    if (!g.data.empty()) {
      const DataSetting& d = g.data[at.back()];
      for (auto& a : item.call.args) apply_data(a.value, d);
      item.call_line = item.call.display_name() + " " + format_args(item.call.args);
    }
    each(item);
  }
  return filtered_out;
}

Grid expand_grid_text(const std::string& yaml, const std::string& origin, std::uint64_t max_items) {
  const GridDefinition definition = GridDefinition::read(yaml, origin);
  definition.check_size(max_items);
  Grid grid;
  grid.name = definition.name();
  grid.op = definition.op();
  grid.filtered_out = definition.for_each_item([&](GridItem& item) { grid.items.push_back(std::move(item)); });
  return grid;
}

Grid expand_grid_file(const std::string& path, std::uint64_t max_items) {
  return expand_grid_text(read_text_file(path, "the grid file"), path, max_items);
}

}  // namespace opcost
