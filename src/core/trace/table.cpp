#include "core/trace/table.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
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
  std::vector<std::size_t> activities, inferred;
};
CallDevice device_per_call(const TraceRun& run, TraceTable& t) {
  CallDevice d{std::vector<double>(run.ops.size(), 0.0), std::vector<std::size_t>(run.ops.size(), 0),
               std::vector<std::size_t>(run.ops.size(), 0)};
  for (const auto& a : run.device_activities) {
    t.device_busy_us += us(a.duration_ns());
    if (a.op < 0) {
      t.untied_gpu_us += us(a.duration_ns());
      ++t.untied;
      continue;
    }
    d.gpu_us[std::size_t(a.op)] += us(a.duration_ns());
    ++d.activities[std::size_t(a.op)];
    d.inferred[std::size_t(a.op)] += a.inferred;
  }
  return d;
}

// A call's own figures into its row: an outermost call has no child call of its own, so its
// self and total are the same. An inferred call stands for calls counted in their own rows:
// only its device activities count.
void add_call(TraceRow& r, const OpActivity& op, const CallDevice& d, std::size_t i) {
  if (!op.inferred) {
    ++r.calls;
    r.cpu_total_us += us(op.duration_ns());
    r.cpu_self_us += us(op.duration_ns());
  }
  r.gpu_total_us += d.gpu_us[i];
  r.gpu_self_us += d.gpu_us[i];
  r.device_activities += d.activities[i];
  r.inferred += d.inferred[i];
  r.flops += double(op.flops);
}

// Energy of a set of calls with its 95% half-width. Calls sharing an operator measurement
// share its error (added); different measurements' errors are independent (in quadrature);
// the power between kernels is one figure for every idle stretch (added).
class EnergySum {
 public:
  void add(const CallEnergy& c) {
    mJ_ += c.mJ();
    idle_us_ += c.gap_us;
    ci_by_measurement_[c.measurement] += c.kernels_ci_mJ;
  }
  double mJ() const { return mJ_; }
  double idle_us() const { return idle_us_; }
  double ci_mJ(const EnergyTotals& e) const {
    double squares = 0;
    for (const auto& [m, ci] : ci_by_measurement_) squares += ci * ci;
    return std::sqrt(squares) + idle_us_ * e.gap_power_ci_W * 1e-3;
  }

 private:
  double mJ_ = 0, idle_us_ = 0;
  std::map<int64_t, double> ci_by_measurement_;
};

// Rows' energy, self and total, from their calls' (op_table and layer_table say which).
class RowEnergies {
 public:
  RowEnergies(const TraceRun& run, TraceTable& t) : run_(run), t_(t) {
    if (!run.energy) {
      t.energy_why = run.energy_why;
      return;
    }
    t.energy = static_cast<const EnergyTotals&>(*run.energy);
  }
  // A call into a row: its own (self), or a child layer's (total only).
  void add(std::size_t row, std::size_t call, bool self) {
    if (!run_.energy) return;
    if (rows_.size() <= row) rows_.resize(row + 1);
    const CallEnergy& c = run_.energy->calls[call];
    rows_[row].total.add(c);
    if (!self) return;
    rows_[row].self.add(c);
    all_.add(c);
  }
  void finish() {
    if (!run_.energy) return;
    const EnergyTotals& e = *run_.energy;
    for (std::size_t i = 0; i < rows_.size() && i < t_.rows.size(); ++i) {
      TraceRow& r = t_.rows[i];
      r.energy_self_mJ = rows_[i].self.mJ();
      r.energy_self_ci_mJ = rows_[i].self.ci_mJ(e);
      r.idle_self_us = rows_[i].self.idle_us();
      r.energy_total_mJ = rows_[i].total.mJ();
      r.energy_total_ci_mJ = rows_[i].total.ci_mJ(e);
    }
    t_.total.energy_self_mJ = t_.total.energy_total_mJ = all_.mJ();
    t_.total.energy_self_ci_mJ = t_.total.energy_total_ci_mJ = all_.ci_mJ(e);
    t_.total.idle_self_us = all_.idle_us();
  }

 private:
  struct Sums {
    EnergySum self, total;
  };
  const TraceRun& run_;
  TraceTable& t_;
  std::vector<Sums> rows_;
  EnergySum all_;
};

void add_to_total(TraceTable& t) {
  t.total = TraceRow{};
  t.total.name = "total";
  for (const auto& r : t.rows) {
    t.total.calls += r.calls;
    t.total.cpu_self_us += r.cpu_self_us;
    t.total.gpu_self_us += r.gpu_self_us;
    t.total.device_activities += r.device_activities;
    t.total.inferred += r.inferred;
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
  RowEnergies energies(run, t);
  std::map<std::pair<std::string, std::string>, std::size_t> index;
  for (std::size_t i = 0; i < run.ops.size(); ++i) {
    const auto& op = run.ops[i];
    const auto key = std::make_pair(op.name, by_shape ? op.shapes : std::string());
    auto [it, fresh] = index.try_emplace(key, t.rows.size());
    if (fresh) t.rows.push_back(TraceRow{op.name, key.second});
    add_call(t.rows[it->second], op, d, i);
    energies.add(it->second, i, true);
  }
  add_to_total(t);
  energies.finish();
  return t;
}

TraceTable layer_table(const TraceRun& run) {
  TraceTable t;
  t.group_by = "layer";
  t.steps = run.steps.size();
  t.measured_step = run.measured_step;
  const CallDevice d = device_per_call(run, t);
  RowEnergies energies(run, t);
  std::map<std::string, std::size_t> index;
  auto row_index = [&](const std::string& name) {
    auto [it, fresh] = index.try_emplace(name, t.rows.size());
    if (fresh) {
      t.rows.emplace_back();
      t.rows.back().name = name;
    }
    return it->second;
  };
  auto row = [&](const std::string& name) -> TraceRow& { return t.rows[row_index(name)]; };
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
      const std::size_t r = row_index("(no layer)");
      add_call(t.rows[r], op, d, i);
      energies.add(r, i, true);
      continue;
    }
    const std::size_t own = row_index(run.layers[std::size_t(op.layer)].name);
    t.rows[own].gpu_self_us += d.gpu_us[i];
    t.rows[own].device_activities += d.activities[i];
    t.rows[own].inferred += d.inferred[i];
    t.rows[own].flops += double(op.flops);
    for (int l = op.layer; l >= 0; l = run.layers[std::size_t(l)].parent) {
      const std::size_t r = row_index(run.layers[std::size_t(l)].name);
      t.rows[r].gpu_total_us += d.gpu_us[i];
      energies.add(r, i, r == own);
    }
  }
  add_to_total(t);
  energies.finish();
  return t;
}

namespace {

// The rows to show: sorted by a column, largest first (by name: A to Z), the first `limit`.
std::vector<const TraceRow*> sorted_rows(const TraceTable& t, const std::string& sort_by, std::size_t limit) {
  static const std::map<std::string, std::function<double(const TraceRow&)>> keys = {
      {"gpu", [](const TraceRow& r) { return r.gpu_total_us; }},
      {"gpu_total", [](const TraceRow& r) { return r.gpu_total_us; }},
      {"gpu_self", [](const TraceRow& r) { return r.gpu_self_us; }},
      {"cpu", [](const TraceRow& r) { return r.cpu_total_us; }},
      {"cpu_total", [](const TraceRow& r) { return r.cpu_total_us; }},
      {"cpu_self", [](const TraceRow& r) { return r.cpu_self_us; }},
      {"energy", [](const TraceRow& r) { return r.energy_total_mJ; }},
      {"energy_total", [](const TraceRow& r) { return r.energy_total_mJ; }},
      {"energy_self", [](const TraceRow& r) { return r.energy_self_mJ; }},
      {"calls", [](const TraceRow& r) { return double(r.calls); }},
  };
  std::vector<const TraceRow*> rows;
  for (const auto& r : t.rows) rows.push_back(&r);
  if (sort_by == "name") {
    std::stable_sort(rows.begin(), rows.end(), [](auto* a, auto* b) { return a->name < b->name; });
  } else {
    auto k = keys.find(sort_by);
    if (k == keys.end())
      throw std::invalid_argument(
          fmt::format("sort by '{}': not a column; use gpu, gpu_total, gpu_self, cpu, cpu_total, cpu_self, energy, "
                      "energy_total, energy_self, calls or name",
                      sort_by));
    std::stable_sort(rows.begin(), rows.end(), [&](auto* a, auto* b) { return k->second(*a) > k->second(*b); });
  }
  if (limit && rows.size() > limit) rows.resize(limit);
  return rows;
}

// The table's text: the columns sized to the shown rows' names, then the notes under it.
class TableText {
 public:
  TableText(const TraceTable& t, const std::vector<const TraceRow*>& rows)
      : t_(t), shapes_(t.group_by == "op+shape"), layers_(t.group_by == "layer"), energy_(t.energy.has_value()) {
    width_ = layers_ ? 5 : 8;
    for (auto* r : rows) width_ = std::max(width_, r->name.size() + (r->inferred ? 2 : 0));
    width_ = std::min<std::size_t>(width_, 60);
  }

  std::string header() const {
    // Energy columns when attributed: a layer's total and self differ, an operator's do not.
    std::string energy_head;
    if (energy_)
      energy_head = layers_ ? fmt::format("  {:>18}  {:>18}  {:>10}", "energy total mJ", "energy self mJ", "self W")
                            : fmt::format("  {:>18}  {:>10}", "energy mJ", "W");
    return fmt::format("{:<{}}  {:>7}  {:>12}  {:>12}  {:>12}  {:>12}  {:>6}{}{}\n", layers_ ? "layer" : "operator",
                       width_, "calls", "CPU total us", "CPU self us", "GPU total us", "GPU self us", "GPU %",
                       energy_head, shapes_ ? "  input shapes" : "");
  }

  std::string line(const TraceRow& r) const {
    return fmt::format("{:<{}}  {:>7}  {:>12.1f}  {:>12.1f}  {:>12.1f}  {:>12.1f}  {}{}{}\n", label(r), width_, r.calls,
                       r.cpu_total_us, r.cpu_self_us, r.gpu_total_us, r.gpu_self_us, pct(r.gpu_self_us),
                       energy_cells(r), shapes_ ? "  " + r.shapes : "");
  }

  // One traced run: its times are what it took, with no interval (the measured step below has one).
  std::string steps_note() const {
    std::string out =
        fmt::format("{} step{} traced (times are their sums, one run, no interval); device busy {:.1f} us", t_.steps,
                    t_.steps == 1 ? "" : "s", t_.device_busy_us);
    if (t_.untied)
      out += fmt::format(", of which {:.1f} us in {} activities tied to no call", t_.untied_gpu_us, t_.untied);
    out += "\n";
    if (t_.total.inferred)
      out += fmt::format(
          "* inferred: {} device activities had no correlation id and were tied by the synchronisations around "
          "them\n",
          t_.total.inferred);
    return out;
  }

  std::string measured_step_note() const {
    const auto& m = t_.measured_step;
    if (!m) return "";
    std::string out = fmt::format("untraced step, measured: {:.1f} us ± {:.1f}", m->time_us, m->time_ci_us);
    if (m->energy_mJ) {
      out += fmt::format(", {:.2f} mJ ± {:.2f}", *m->energy_mJ, m->energy_ci_mJ.value_or(0));
      if (m->energy_loop_time_us)  // the energy loop's own pace: steps back to back
        out += fmt::format(" ({:.0f} W ± {:.0f} at {:.1f} us a step in the energy loop)",
                           *m->energy_mJ / *m->energy_loop_time_us * 1000,
                           m->energy_ci_mJ.value_or(0) / *m->energy_loop_time_us * 1000, *m->energy_loop_time_us);
    } else {
      out += fmt::format("; energy unavailable: {}", m->energy_why);
    }
    if (!m->flags.empty()) out += fmt::format(" [{}]", fmt::join(m->flags, ", "));
    return out + "\n";
  }

  // The attributed energy against the untraced steps' measured one, and what was left out; or
  // why there is none.
  std::string energy_note() const {
    const auto& e = t_.energy;
    if (!e)
      return t_.energy_why.empty()
                 ? ""
                 : fmt::format("no energy per {}: {}\n", layers_ ? "layer" : "operator", t_.energy_why);
    std::string out = fmt::format(
        "energy attributed: {:.2f} mJ ± {:.2f} (95%, from the operators' and the idle power's measurements) = "
        "kernels {:.2f} mJ + GPU idle {:.2f} mJ at {:.0f} W ± {:.0f}; the untraced steps measured {:.2f} mJ ± {:.2f}: "
        "{:+.1f}%, not scaled\n",
        e->attributed_mJ(), t_.total.energy_total_ci_mJ, e->kernels_mJ, e->gaps_mJ, e->gap_power_W, e->gap_power_ci_W,
        e->measured_mJ, e->measured_ci_mJ, 100 * e->error());
    if (e->unattributed_us > 0) {
      std::vector<std::string> why;
      for (const auto& [reason, n] : e->calls_without_power) why.push_back(fmt::format("{} calls: {}", n, reason));
      out += fmt::format("energy not attributed: {:.1f} us of device time{}{}\n", e->unattributed_us,
                         why.empty() ? " tied to no call" : " (",
                         why.empty() ? "" : fmt::format("{})", fmt::join(why, "; ")));
    }
    return out;
  }

 private:
  std::string fit(const std::string& s) const { return s.size() <= width_ ? s : s.substr(0, width_ - 3) + "..."; }
  // A row with activities tied by synchronisations says so.
  std::string label(const TraceRow& r) const { return r.inferred ? fit(r.name + " *") : fit(r.name); }
  std::string pct(double v) const {
    return t_.device_busy_us > 0 ? fmt::format("{:5.1f}%", 100 * v / t_.device_busy_us) : std::string("     -");
  }
  std::string energy_cells(const TraceRow& r) const {
    if (!energy_) return std::string();
    auto cell = [](double v, double ci) { return fmt::format("{:>18}", fmt::format("{:.3f} ± {:.3f}", v, ci)); };
    std::string c = "  " + cell(r.energy_total_mJ, r.energy_total_ci_mJ);
    if (layers_) c += "  " + cell(r.energy_self_mJ, r.energy_self_ci_mJ);
    const auto w = r.power_W();
    return c + fmt::format("  {:>10}", w ? fmt::format("{:.0f} ± {:.0f}", *w, r.power_ci_W()) : "-");
  }

  const TraceTable& t_;
  const bool shapes_, layers_, energy_;
  std::size_t width_;
};

}  // namespace

std::string render_table(const TraceTable& t, const std::string& sort_by, std::size_t limit) {
  const std::vector<const TraceRow*> rows = sorted_rows(t, sort_by, limit);
  const TableText text(t, rows);
  std::string out = text.header();
  for (auto* r : rows) out += text.line(*r);
  if (rows.size() < t.rows.size()) out += fmt::format("({} more rows)\n", t.rows.size() - rows.size());
  out += text.line(t.total);
  return out + text.steps_note() + text.measured_step_note() + text.energy_note();
}

TraceTable trace_table(const TraceRun& run, const std::string& group_by, bool with_timeline) {
  if (group_by != "layer" && group_by != "op" && group_by != "shape")
    throw std::invalid_argument("group_by='" + group_by + "': use 'op', 'shape' or 'layer'");
  TraceTable t = group_by == "layer" ? layer_table(run) : op_table(run, group_by == "shape");
  if (with_timeline) t.timeline = compact_timeline(run);
  return t;
}

nlohmann::json to_json(const TraceTable& t) {
  const bool energy = t.energy.has_value();
  auto row = [&](const TraceRow& r) {
    nlohmann::json j = {{"name", r.name},
                        {"calls", r.calls},
                        {"cpu_total_us", r.cpu_total_us},
                        {"cpu_self_us", r.cpu_self_us},
                        {"gpu_total_us", r.gpu_total_us},
                        {"gpu_self_us", r.gpu_self_us},
                        {"device_activities", r.device_activities},
                        {"inferred_activities", r.inferred}};
    if (!r.shapes.empty()) j["shapes"] = r.shapes;
    if (r.flops > 0) j["flops"] = r.flops;
    if (energy)
      j.update({{"energy_total_mJ", r.energy_total_mJ},
                {"energy_total_ci95_mJ", r.energy_total_ci_mJ},
                {"energy_self_mJ", r.energy_self_mJ},
                {"energy_self_ci95_mJ", r.energy_self_ci_mJ},
                {"idle_self_us", r.idle_self_us},
                {"power_self_W", r.power_W() ? nlohmann::json(*r.power_W()) : nlohmann::json(nullptr)},
                {"power_self_ci95_W", r.power_W() ? nlohmann::json(r.power_ci_W()) : nlohmann::json(nullptr)}});
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
  if (const auto& e = t.energy) {
    nlohmann::json why = nlohmann::json::object();
    for (const auto& [reason, n] : e->calls_without_power) why[reason] = n;
    j["energy"] = {{"attributed_mJ", e->attributed_mJ()},
                   {"attributed_ci95_mJ", t.total.energy_total_ci_mJ},
                   {"kernels_mJ", e->kernels_mJ},
                   {"idle_mJ", e->gaps_mJ},
                   {"idle_power_W", e->gap_power_W},
                   {"idle_power_ci95_W", e->gap_power_ci_W},
                   {"idle_scale", e->gap_scale},
                   {"measured_mJ", e->measured_mJ},
                   {"measured_ci95_mJ", e->measured_ci_mJ},
                   {"error", e->error()},
                   {"unattributed_device_us", e->unattributed_us},
                   {"calls_without_power", why}};
  } else if (!t.energy_why.empty()) {
    j["energy_unavailable"] = t.energy_why;
  }
  if (t.timeline && !t.timeline->empty()) j["timeline"] = to_json(*t.timeline);
  return j;
}

}  // namespace opcost
