#include "core/trace/table.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace opcost {

namespace {

double us(int64_t ns) { return double(ns) / 1000.0; }

// Device time and activity count of each call.
struct CallDevice {
  std::vector<double> gpu_us;
  std::vector<std::size_t> activities;
};
CallDevice device_per_call(const TraceRun& run, TraceTable& t) {
  CallDevice d{std::vector<double>(run.ops.size(), 0.0), std::vector<std::size_t>(run.ops.size(), 0)};
  for (const auto& a : run.device_activities) {
    t.device_busy_us += us(a.duration_ns());
    if (a.op < 0) {
      t.untied_gpu_us += us(a.duration_ns());
      ++t.untied;
      continue;
    }
    d.gpu_us[std::size_t(a.op)] += us(a.duration_ns());
    ++d.activities[std::size_t(a.op)];
  }
  return d;
}

// A call's own figures into its row: an outermost call has no child call of its own, so its
// self and total are the same.
void add_call(TraceRow& r, const OpActivity& op, const CallDevice& d, std::size_t i) {
  ++r.calls;
  r.cpu_total_us += us(op.duration_ns());
  r.cpu_self_us += us(op.duration_ns());
  r.gpu_total_us += d.gpu_us[i];
  r.gpu_self_us += d.gpu_us[i];
  r.device_activities += d.activities[i];
  r.flops += double(op.flops);
}

void add_to_total(TraceTable& t) {
  t.total = TraceRow{};
  t.total.name = "total";
  for (const auto& r : t.rows) {
    t.total.calls += r.calls;
    t.total.cpu_self_us += r.cpu_self_us;
    t.total.gpu_self_us += r.gpu_self_us;
    t.total.device_activities += r.device_activities;
    t.total.flops += r.flops;
  }
  t.total.cpu_total_us = t.total.cpu_self_us;
  t.total.gpu_total_us = t.total.gpu_self_us;
}

}  // namespace

TraceTable op_table(const TraceRun& run, bool by_shape) {
  TraceTable t;
  t.group_by = by_shape ? "op+shape" : "op";
  t.steps = run.steps.size();
  t.measured_step = run.measured_step;
  const CallDevice d = device_per_call(run, t);
  std::map<std::pair<std::string, std::string>, std::size_t> index;
  for (std::size_t i = 0; i < run.ops.size(); ++i) {
    const auto& op = run.ops[i];
    const auto key = std::make_pair(op.name, by_shape ? op.shapes : std::string());
    auto [it, fresh] = index.try_emplace(key, t.rows.size());
    if (fresh) t.rows.push_back(TraceRow{op.name, key.second});
    add_call(t.rows[it->second], op, d, i);
  }
  add_to_total(t);
  return t;
}

TraceTable layer_table(const TraceRun& run) {
  TraceTable t;
  t.group_by = "layer";
  t.steps = run.steps.size();
  t.measured_step = run.measured_step;
  const CallDevice d = device_per_call(run, t);
  std::map<std::string, std::size_t> index;
  auto row = [&](const std::string& name) -> TraceRow& {
    auto [it, fresh] = index.try_emplace(name, t.rows.size());
    if (fresh) {
      t.rows.emplace_back();
      t.rows.back().name = name;
    }
    return t.rows[it->second];
  };
  // Host time: each range's duration, less its child ranges' for self.
  std::vector<double> child_us(run.layers.size(), 0.0);
  for (const auto& l : run.layers)
    if (l.parent >= 0) child_us[std::size_t(l.parent)] += us(l.duration_ns());
  for (std::size_t i = 0; i < run.layers.size(); ++i) {
    TraceRow& r = row(run.layers[i].name);
    ++r.calls;
    r.cpu_total_us += us(run.layers[i].duration_ns());
    r.cpu_self_us += us(run.layers[i].duration_ns()) - child_us[i];
  }
  // Device time: a call's kernels are its innermost layer's self, and every enclosing layer's
  // total. Calls outside any layer have a row of their own.
  for (std::size_t i = 0; i < run.ops.size(); ++i) {
    const auto& op = run.ops[i];
    if (op.layer < 0) {
      add_call(row("(no layer)"), op, d, i);
      continue;
    }
    TraceRow& own = row(run.layers[std::size_t(op.layer)].name);
    own.gpu_self_us += d.gpu_us[i];
    own.device_activities += d.activities[i];
    own.flops += double(op.flops);
    for (int l = op.layer; l >= 0; l = run.layers[std::size_t(l)].parent)
      row(run.layers[std::size_t(l)].name).gpu_total_us += d.gpu_us[i];
  }
  add_to_total(t);
  return t;
}

std::string render_table(const TraceTable& t, const std::string& sort_by, std::size_t limit) {
  static const std::map<std::string, std::function<double(const TraceRow&)>> keys = {
      {"gpu", [](const TraceRow& r) { return r.gpu_total_us; }},
      {"gpu_total", [](const TraceRow& r) { return r.gpu_total_us; }},
      {"gpu_self", [](const TraceRow& r) { return r.gpu_self_us; }},
      {"cpu", [](const TraceRow& r) { return r.cpu_total_us; }},
      {"cpu_total", [](const TraceRow& r) { return r.cpu_total_us; }},
      {"cpu_self", [](const TraceRow& r) { return r.cpu_self_us; }},
      {"calls", [](const TraceRow& r) { return double(r.calls); }},
  };
  std::vector<const TraceRow*> rows;
  for (const auto& r : t.rows) rows.push_back(&r);
  if (sort_by == "name") {
    std::stable_sort(rows.begin(), rows.end(), [](auto* a, auto* b) { return a->name < b->name; });
  } else {
    auto k = keys.find(sort_by);
    if (k == keys.end())
      throw std::invalid_argument(fmt::format(
          "sort by '{}': not a column; use gpu, gpu_total, gpu_self, cpu, cpu_total, cpu_self, calls or name",
          sort_by));
    std::stable_sort(rows.begin(), rows.end(), [&](auto* a, auto* b) { return k->second(*a) > k->second(*b); });
  }
  if (limit && rows.size() > limit) rows.resize(limit);
  std::size_t width = t.group_by == "layer" ? 5 : 8;
  for (auto* r : rows) width = std::max(width, r->name.size());
  width = std::min<std::size_t>(width, 60);
  const bool shapes = t.group_by == "op+shape";
  auto fit = [&](const std::string& s) { return s.size() <= width ? s : s.substr(0, width - 3) + "..."; };
  auto pct = [&](double v) {
    return t.device_busy_us > 0 ? fmt::format("{:5.1f}%", 100 * v / t.device_busy_us) : std::string("     -");
  };
  std::string out = fmt::format("{:<{}}  {:>7}  {:>12}  {:>12}  {:>12}  {:>12}  {:>6}{}\n",
                                t.group_by == "layer" ? "layer" : "operator", width, "calls", "CPU total us",
                                "CPU self us", "GPU total us", "GPU self us", "GPU %", shapes ? "  input shapes" : "");
  auto line = [&](const TraceRow& r) {
    out += fmt::format("{:<{}}  {:>7}  {:>12.1f}  {:>12.1f}  {:>12.1f}  {:>12.1f}  {}{}\n", fit(r.name), width, r.calls,
                       r.cpu_total_us, r.cpu_self_us, r.gpu_total_us, r.gpu_self_us, pct(r.gpu_self_us),
                       shapes ? "  " + r.shapes : "");
  };
  for (auto* r : rows) line(*r);
  if (rows.size() < t.rows.size()) out += fmt::format("({} more rows)\n", t.rows.size() - rows.size());
  line(t.total);
  // One traced run: its times are what it took, with no interval (the measured step below has one).
  out += fmt::format("{} step{} traced (times are their sums, one run, no interval); device busy {:.1f} us", t.steps,
                     t.steps == 1 ? "" : "s", t.device_busy_us);
  if (t.untied) out += fmt::format(", of which {:.1f} us in {} activities tied to no call", t.untied_gpu_us, t.untied);
  out += "\n";
  if (const auto& m = t.measured_step) {
    out += fmt::format("untraced step, measured: {:.1f} us ± {:.1f}", m->time_us, m->time_ci_us);
    if (m->energy_mJ) {
      out += fmt::format(", {:.2f} mJ ± {:.2f}", *m->energy_mJ, m->energy_ci_mJ.value_or(0));
      if (m->energy_loop_time_us)  // the energy loop's own pace: steps back to back
        out += fmt::format(" ({:.0f} W at {:.1f} us a step in the energy loop)",
                           *m->energy_mJ / *m->energy_loop_time_us * 1000, *m->energy_loop_time_us);
      out += "; energy per layer is not attributed yet";
    } else {
      out += fmt::format("; energy unavailable: {}", m->energy_why);
    }
    if (!m->flags.empty()) out += fmt::format(" [{}]", fmt::join(m->flags, ", "));
    out += "\n";
  }
  return out;
}

nlohmann::json to_json(const TraceTable& t) {
  auto row = [](const TraceRow& r) {
    nlohmann::json j = {{"name", r.name},
                        {"calls", r.calls},
                        {"cpu_total_us", r.cpu_total_us},
                        {"cpu_self_us", r.cpu_self_us},
                        {"gpu_total_us", r.gpu_total_us},
                        {"gpu_self_us", r.gpu_self_us},
                        {"device_activities", r.device_activities}};
    if (!r.shapes.empty()) j["shapes"] = r.shapes;
    if (r.flops > 0) j["flops"] = r.flops;
    return j;
  };
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : t.rows) rows.push_back(row(r));
  nlohmann::json j = {{"group_by", t.group_by},
                      {"steps", t.steps},
                      {"rows", rows},
                      {"total", row(t.total)},
                      {"untied", t.untied},
                      {"untied_gpu_us", t.untied_gpu_us},
                      {"device_busy_us", t.device_busy_us}};
  if (const auto& m = t.measured_step) {
    nlohmann::json s = {{"time_us", m->time_us}, {"time_ci95_us", m->time_ci_us}, {"flags", m->flags}};
    if (m->energy_mJ)
      s.update({{"energy_mJ", *m->energy_mJ},
                {"energy_ci95_mJ", m->energy_ci_mJ.value_or(0)},
                {"energy_loop_time_us", m->energy_loop_time_us.value_or(0)}});
    else
      s["energy_unavailable"] = m->energy_why;
    j["measured_step"] = s;
  }
  return j;
}

}  // namespace opcost
