#include "workflow/sweep_summary.h"

#include "core/estimate/call_work.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace opcost {

using nlohmann::json;

namespace {

// The figures summarised, by the name the summary gives them, with the path each has in an
// exported row (the measurement document's) and its unit.
struct Metric {
  const char* name;
  std::array<const char*, 2> path;
  const char* unit;
};
constexpr std::array<Metric, 3> kMetrics = {{{"time_us", {"time_us", "mean"}, "µs"},
                                             {"energy_mJ", {"energy_mJ", "per_call"}, "mJ"},
                                             {"power_W", {"power_W", "average"}, "W"}}};

// The member at obj[a][b] when both levels are objects that have it; else null. Never throws:
// a row of another shape is a row without that figure.
const json* member(const json& obj, const char* a, const char* b = nullptr) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(a);
  if (it == obj.end()) return nullptr;
  if (b == nullptr) return &*it;
  return member(*it, b);
}

std::optional<double> figure(const json& row, const Metric& m) {
  const json* v = member(row, m.path[0], m.path[1]);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  const double d = v->get<double>();
  if (!std::isfinite(d)) return std::nullopt;
  return d;
}

struct Stat {
  std::size_t count = 0;
  double sum = 0;
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  void add(double v) {
    ++count;
    sum += v;
    min = std::min(min, v);
    max = std::max(max, v);
  }
  double mean() const { return sum / double(count); }
  json summary() const {
    if (count == 0) return nullptr;
    return {{"count", count}, {"mean", mean()}, {"min", min}, {"max", max}};
  }
  json mean_or_null() const { return count == 0 ? json(nullptr) : json(mean()); }
};

// Everything summarised about the rows sharing one value (or one pair of values).
struct Group {
  json value;  // the axis value as the rows have it (a pair: [x, y])
  std::size_t count = 0;
  std::array<Stat, kMetrics.size()> stats;
  void add(const json& row) {
    ++count;
    for (std::size_t i = 0; i < kMetrics.size(); ++i)
      if (auto v = figure(row, kMetrics[i])) stats[i].add(*v);
  }
};

// Axis values in reading order: numbers ascending, then the rest (strings, lists) by their text.
bool value_before(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) return a.get<double>() < b.get<double>();
  if (a.is_number() != b.is_number()) return a.is_number();
  return a.dump() < b.dump();
}

// A row's value on an axis: its "axes" member's, or for the pseudo-axis "op" (a sweep over
// several operators whose grid names none) its operator. Null when it has none.
const json* axis_value(const json& row, const std::string& axis, bool op_is_pseudo_axis) {
  if (op_is_pseudo_axis && axis == "op") return member(row, "op");
  const json* axes = member(row, "axes");
  if (axes == nullptr || !axes->is_object()) return nullptr;
  auto it = axes->find(axis);
  return it == axes->end() || it->is_null() ? nullptr : &*it;
}

// Which axes the rows name, in the order they first appear; "op" too when the rows measure
// several operators and no axis is called so.
struct AxisList {
  std::vector<std::string> names, left_out;
  bool op_is_pseudo_axis = false;
};

AxisList axes_of(const json& rows) {
  AxisList out;
  std::vector<std::string> seen;
  json first_op;
  bool several_ops = false;
  for (const auto& row : rows) {
    if (const json* op = member(row, "op"); op != nullptr && op->is_string()) {
      if (first_op.is_null()) first_op = *op;
      several_ops = several_ops || *op != first_op;
    }
    const json* axes = member(row, "axes");
    if (axes == nullptr || !axes->is_object()) continue;
    for (const auto& [name, value] : axes->items())
      if (std::find(seen.begin(), seen.end(), name) == seen.end()) seen.push_back(name);
  }
  if (several_ops && std::find(seen.begin(), seen.end(), "op") == seen.end()) {
    seen.insert(seen.begin(), "op");
    out.op_is_pseudo_axis = true;
  }
  for (auto& name : seen) (out.names.size() < kSweepSummaryMaxAxes ? out.names : out.left_out).push_back(name);
  return out;
}

json group_json(const Group& g, const char* value_key = "value") {
  json out = {{value_key, g.value}, {"count", g.count}};
  for (std::size_t i = 0; i < kMetrics.size(); ++i) out[kMetrics[i].name] = g.stats[i].summary();
  return out;
}

// A row's work (core/estimate/call_work.h: family, FLOPs and bytes a call) for the roofline;
// null where its operator or arguments are not counted.
json work_of(const json& row) {
  const json *op = member(row, "op"), *args = member(row, "args");
  if (op == nullptr || !op->is_string() || args == nullptr || !args->is_string()) return nullptr;
  const std::string& name = op->get_ref<const std::string&>();
  const auto work = call_work(name.substr(0, name.find('.')), args->get_ref<const std::string&>());
  if (!work) return nullptr;
  return {{"family", family_name(work->family)}, {"flops", work->flops}, {"bytes", work->bytes}};
}

// One point per distinct call (op, overload, args) whose work is counted and that has a time:
// its work and its mean time over the rows that measured it (a sweep re-run, or several
// devices), in the rows' order, at most kSweepRooflineMaxPoints; `left_out` counts the distinct
// calls beyond.
json roofline_points(const json& rows, std::size_t& left_out) {
  constexpr std::size_t kSkipped = std::numeric_limits<std::size_t>::max();
  std::map<std::string, std::size_t> index;  // a call's point, or kSkipped (no work, or beyond)
  std::vector<json> points;
  std::vector<Stat> times;
  for (const auto& row : rows) {
    const json *op = member(row, "op"), *args = member(row, "args"), *overload = member(row, "overload");
    auto time = figure(row, kMetrics[0]);
    if (op == nullptr || !op->is_string() || args == nullptr || !args->is_string() || !time || *time <= 0) continue;
    const json overload_text = overload != nullptr && overload->is_string() ? *overload : json("");
    const std::string key =
        op->get<std::string>() + "\n" + overload_text.get<std::string>() + "\n" + args->get<std::string>();
    auto [it, fresh] = index.try_emplace(key, kSkipped);
    if (fresh) {
      json work = work_of(row);  // once per distinct call
      if (work.is_null()) continue;
      if (points.size() == kSweepRooflineMaxPoints) {
        ++left_out;
        continue;
      }
      it->second = points.size();
      points.push_back({{"op", *op}, {"overload", overload_text}, {"args", *args}, {"work", std::move(work)}});
      times.emplace_back();
    }
    if (it->second != kSkipped) times[it->second].add(*time);
  }
  json out = json::array();
  for (std::size_t i = 0; i < points.size(); ++i) {
    points[i]["time_us"] = times[i].mean();
    points[i]["rows"] = times[i].count;
    out.push_back(std::move(points[i]));
  }
  return out;
}

json by_axis(const json& rows, const AxisList& axes, json& values_left_out) {
  json out = json::object();
  for (const auto& axis : axes.names) {
    std::map<std::string, Group> groups;  // by the value's text
    for (const auto& row : rows) {
      const json* v = axis_value(row, axis, axes.op_is_pseudo_axis);
      if (v == nullptr) continue;
      Group& g = groups[v->dump()];
      if (g.count == 0) g.value = *v;
      g.add(row);
    }
    std::vector<const Group*> sorted;
    for (const auto& [text, g] : groups) sorted.push_back(&g);
    std::sort(sorted.begin(), sorted.end(),
              [](const Group* a, const Group* b) { return value_before(a->value, b->value); });
    if (sorted.size() > kSweepSummaryMaxValues) {
      values_left_out[axis] = sorted.size() - kSweepSummaryMaxValues;
      sorted.resize(kSweepSummaryMaxValues);
    }
    json values = json::array();
    for (const Group* g : sorted) values.push_back(group_json(*g));
    out[axis] = std::move(values);
  }
  return out;
}

// One heatmap: the rows' means per pair of values of axes x and y; null when it would have
// more than kSweepHeatmapMaxCells cells (`why` says so).
json heatmap(const json& rows, const AxisList& axes, const std::string& x, const std::string& y, std::string& why) {
  std::map<std::pair<std::string, std::string>, Group> cells;
  for (const auto& row : rows) {
    const json* vx = axis_value(row, x, axes.op_is_pseudo_axis);
    const json* vy = axis_value(row, y, axes.op_is_pseudo_axis);
    if (vx == nullptr || vy == nullptr) continue;
    auto key = std::make_pair(vx->dump(), vy->dump());
    auto it = cells.find(key);
    if (it == cells.end()) {
      if (cells.size() == kSweepHeatmapMaxCells) {
        why = fmt::format("more than {} pairs of values", kSweepHeatmapMaxCells);
        return nullptr;
      }
      it = cells.emplace(key, Group{}).first;
      it->second.value = json::array({*vx, *vy});
    }
    it->second.add(row);
  }
  if (cells.empty()) {
    why = "no row has both axes";
    return nullptr;
  }
  std::vector<const Group*> sorted;
  for (const auto& [key, g] : cells) sorted.push_back(&g);
  std::sort(sorted.begin(), sorted.end(), [](const Group* a, const Group* b) {
    if (a->value[0] != b->value[0]) return value_before(a->value[0], b->value[0]);
    return value_before(a->value[1], b->value[1]);
  });
  json out = json::array();
  for (const Group* g : sorted) {
    json cell = {{"x", g->value[0]}, {"y", g->value[1]}, {"count", g->count}};
    for (std::size_t i = 0; i < kMetrics.size(); ++i) cell[kMetrics[i].name] = g->stats[i].mean_or_null();
    out.push_back(std::move(cell));
  }
  return {{"x", x}, {"y", y}, {"cells", std::move(out)}};
}

}  // namespace

json summarize_sweep(const json& rows) {
  const AxisList axes = axes_of(rows);
  json out = {{"rows", rows.size()}, {"axes", axes.names}, {"axes_left_out", axes.left_out}};

  json metrics = json::object();
  Group all;
  std::size_t with_axes = 0;
  json sweeps = json::object();
  for (const auto& row : rows) {
    all.add(row);
    const json* a = member(row, "axes");
    if (a != nullptr && a->is_object() && !a->empty()) ++with_axes;
    const json* s = member(row, "sweep");
    if (s != nullptr && s->is_string()) sweeps[s->get<std::string>()] = sweeps.value(s->get<std::string>(), 0) + 1;
  }
  for (std::size_t i = 0; i < kMetrics.size(); ++i)
    metrics[kMetrics[i].name] = {{"unit", kMetrics[i].unit},
                                 {"from", fmt::format("/{}/{}", kMetrics[i].path[0], kMetrics[i].path[1])},
                                 {"overall", all.stats[i].summary()}};
  out["rows_with_axes"] = with_axes;
  out["sweeps"] = std::move(sweeps);
  out["metrics"] = std::move(metrics);

  json values_left_out = json::object();
  out["by_axis"] = by_axis(rows, axes, values_left_out);
  out["values_left_out"] = std::move(values_left_out);

  json maps = json::array(), maps_left_out = json::array();
  const std::size_t paired = std::min(axes.names.size(), kSweepHeatmapMaxAxes);
  for (std::size_t i = 0; i < paired; ++i)
    for (std::size_t j = i + 1; j < paired; ++j) {
      std::string why;
      json map = heatmap(rows, axes, axes.names[i], axes.names[j], why);
      if (map.is_null())
        maps_left_out.push_back({{"x", axes.names[i]}, {"y", axes.names[j]}, {"why", why}});
      else
        maps.push_back(std::move(map));
    }
  out["heatmaps"] = std::move(maps);
  out["heatmaps_left_out"] = std::move(maps_left_out);
  // The export's rows carry times and energies, not the FLOPs and bytes a roofline places: the
  // page counts those from the arguments of these points.
  std::size_t left_out = 0;
  out["roofline_points"] = roofline_points(rows, left_out);
  out["roofline_points_left_out"] = left_out;
  return out;
}

json slim_sweep_row(const json& row) {
  if (!row.is_object()) return nullptr;
  static const std::array<const char*, 10> kKept = {"db_id",  "op",    "overload", "args",  "dtype",
                                                    "device", "sweep", "axes",     "flags", "cache_mode"};
  json out = json::object();
  for (const char* key : kKept)
    if (const json* v = member(row, key)) out[key] = *v;
  // The figures with their intervals, each at its place in the exported document.
  static const std::array<std::array<const char*, 2>, 7> kFigures = {{{"time_us", "mean"},
                                                                      {"time_us", "ci95_low"},
                                                                      {"time_us", "ci95_high"},
                                                                      {"energy_mJ", "per_call"},
                                                                      {"energy_mJ", "ci95_low"},
                                                                      {"energy_mJ", "ci95_high"},
                                                                      {"power_W", "average"}}};
  for (const auto& [a, b] : kFigures)
    if (const json* v = member(row, a, b); v != nullptr && v->is_number()) out[a][b] = *v;
  // Counted here, not in the page: the roofline reads FLOPs and bytes from the data it embeds.
  if (json work = work_of(row); !work.is_null()) out["work"] = std::move(work);
  return out;
}

}  // namespace opcost
