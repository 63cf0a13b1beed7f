#include "core/predict/prediction.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "core/measurement.h"
#include "core/stats/summary.h"
#include "core/text/text.h"

namespace opcost {

StepMeasurement step_measurement_of(const Measurement& m) {
  StepMeasurement s;
  s.time_us = m.time.per_call_us.mean;
  s.time_ci_us = (m.time.per_call_us.ci95_high - m.time.per_call_us.ci95_low) / 2;
  if (m.energy.available) {
    s.energy_mJ = m.energy.per_call_mJ.mean;
    s.energy_ci_mJ = (m.energy.per_call_mJ.ci95_high - m.energy.per_call_mJ.ci95_low) / 2;
    s.energy_loop_time_us = m.energy.wall_us_per_call;
  } else {
    s.energy_why = m.energy.unavailable_reason;
  }
  s.flags = m.flags;
  s.db_id = m.db_id;
  return s;
}

double active_energy_mJ(const OpCost& c, const PredictionInputs& in) {
  if (!in.on_gpu || !in.gap_power_W) return *c.energy_mJ;
  const double own_gap_us = std::max(0.0, c.loop_wall_us - c.gpu_us);
  return std::max(0.0, *c.energy_mJ - *in.gap_power_W * own_gap_us * 1e-3);
}

bool measured_at_power_cap(const OpCost& c) {
  return std::any_of(c.flags.begin(), c.flags.end(), [](const std::string& f) {
    return f.starts_with("throttled:") && f.find("sw_power_cap") != std::string::npos;
  });
}

OpCost op_cost_from_document(const nlohmann::json& d, bool on_gpu) {
  OpCost c;
  c.db_id = d.value("db_id", int64_t(-1));
  const auto& t = d.at("time_us");
  c.gpu_us = t.at("mean").get<double>();
  c.gpu_ci_us = (t.at("ci95_high").get<double>() - t.at("ci95_low").get<double>()) / 2;
  c.cpu_us = d.at("host_us_per_call").at("wall").get<double>();
  if (!on_gpu) {  // on the CPU the call's time is all host time, and nothing overlaps
    c.cpu_us = c.gpu_us;
    c.gpu_us = 0;
  }
  if (d.contains("energy_mJ") && d["energy_mJ"].is_object()) {
    const auto& e = d["energy_mJ"];
    c.energy_mJ = e.at("per_call").get<double>();
    c.energy_ci_mJ = (e.at("ci95_high").get<double>() - e.at("ci95_low").get<double>()) / 2;
    c.loop_wall_us = e.value("loop_wall_us_per_call", 0.0);
  } else
    c.energy_why = d.value("energy_unavailable", std::string("not measured"));
  c.waits_for_device = d.value("method", std::string()).find(kWaitsForDeviceNote) != std::string::npos;
  if (d.contains("flags")) c.flags = d["flags"].get<std::vector<std::string>>();
  if (d.contains("environment")) c.gpu_uuid = d["environment"].value("gpu_uuid", std::string());
  return c;
}

namespace {

void sort_rows(std::vector<PredictedRow>& rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.time_us > b.time_us; });
}

}  // namespace

ModelHostTimes model_host_times(const Inventory& inv) {
  // Proportional: the observer's cost is per call, but the calibration knows only the total,
  // and where the host time sits matters only where the step turns from host- to GPU-bound.
  const double scale = inv.host_calibration.scale();
  ModelHostTimes t;
  for (const auto& c : inv.sequence) {
    t.before_us.push_back(scale * c.host_gap_us);
    t.in_call_us.push_back(scale * c.host_us);
  }
  t.after_last_us = scale * inv.host_after_last_call_us;
  return t;
}

namespace {
// The host time of call i in the timeline. On a GPU it is the call's own in the model run
// (replayed alone, a call misses the model's caches and Python's argument handling), except
// for calls that wait for the device, whose in-model time is mostly that wait: they take their
// measured wall time after the wait. On the CPU the call's time is its measured wall time.
// A call launches its GPU work where the traced step's calls of its entry did (`launches`).
TimelineOp timeline_op(const ModelHostTimes& host, std::size_t i, const OpCost* c, bool on_gpu,
                       const std::vector<LaunchPoint>* launches) {
  const double before = host.before_us[i];
  if (!c) return {before, 0};  // unmeasured: counts as zero, only the model's code around it stays
  if (!on_gpu) return {before + c->cpu_us, 0};
  if (c->waits_for_device) return {before + c->gpu_us, 0, true};
  return {before + host.in_call_us[i], c->gpu_us, false, before, launches ? *launches : std::vector<LaunchPoint>{}};
}
}  // namespace

Prediction predict(const Inventory& inv, const std::map<std::size_t, OpCost>& costs, const PredictionInputs& in) {
  Prediction p;
  p.on_gpu = in.on_gpu;
  ModelHostTimes host = model_host_times(inv);
  if (in.host_scale != 1) {
    for (auto* v : {&host.before_us, &host.in_call_us})
      for (double& t : *v) t *= in.host_scale;
    host.after_last_us *= in.host_scale;
  }
  std::vector<TimelineOp> ops;
  ops.reserve(inv.sequence.size() + 1);
  for (std::size_t i = 0; i < inv.sequence.size(); ++i) {
    auto it = costs.find(inv.sequence[i].entry);
    const std::size_t entry = inv.sequence[i].entry;
    const auto* launches = entry < in.launches_by_entry.size() ? &in.launches_by_entry[entry] : nullptr;
    ops.push_back(timeline_op(host, i, it == costs.end() ? nullptr : &it->second, in.on_gpu, launches));
  }
  ops.push_back({host.after_last_us, 0});  // the step's own code after its last call
  p.timeline = simulate(ops, in.sync_us, in.launch_latency_us);
  if (!in.launches_by_entry.empty() || in.launch_latency_us > 0)
    p.time_us_launched_at_return = simulate(ops, in.sync_us, 0, false).wall_us;
  p.time_us = p.timeline.wall_us;
  p.calls = inv.sequence.size();

  bool energy = true;
  std::size_t without_energy = 0;
  std::string first_without_energy;  // "signature: reason"
  std::set<std::string> reasons;     // why they have none: one reason for all, or several
  for (std::size_t e = 0; e < inv.entries.size(); ++e) {
    auto it = costs.find(e);
    if (it == costs.end()) {
      p.missing.push_back(e);
      continue;
    }
    if (!it->second.energy_mJ) {
      energy = false;
      if (without_energy++ == 0)
        first_without_energy = fmt::format("{}: {}", inv.entries[e].signature(), it->second.energy_why);
      reasons.insert(it->second.energy_why);
    }
    if (!it->second.matched_args.empty())
      p.matched_ignoring_float_scalars.push_back({e, it->second.matched_args, it->second.db_id});
    if (!it->second.flags.empty()) p.flagged.push_back(inv.entries[e].signature());
    if (measured_at_power_cap(it->second)) ++p.capped_signatures;
    if (!in.gpu_uuid.empty() && !it->second.gpu_uuid.empty() && it->second.gpu_uuid != in.gpu_uuid)
      ++p.from_other_board;
  }
  // One operator is named only where it is the one without energy; a reason every operator
  // shares (energy switched off, no energy counter) is said as the run's.
  if (without_energy == 1)
    p.energy_why = first_without_energy;
  else if (without_energy > 1 && reasons.size() == 1 && without_energy == costs.size())
    p.energy_why = fmt::format("no measured operator has an energy figure: {}", *reasons.begin());
  else if (without_energy > 1)
    p.energy_why = fmt::format("{} of {} measured signatures have no energy figure (the first, {})", without_energy,
                               costs.size(), first_without_energy);
  if (in.on_gpu && !in.gap_power_W) {
    energy = false;
    p.energy_why = "no gap-power measurement: " + in.gap_power_why;
  }
  if (costs.empty()) {  // never "0 mJ ± 0": nothing was predicted
    energy = false;
    p.energy_why = "no operator of the model is measured yet";
  }
  if (in.energy_off) {
    energy = false;
    p.energy_why = "energy was switched off (--no-energy; energy=False in Python)";
  }

  // Per-call attribution: the call's kernels plus the GPU's wait just before them; trailing
  // CPU-only work and the final synchronisation are listed as their own row.
  std::map<std::string, PredictedRow> by_layer, by_op;
  double var_time = 0, var_energy = 0, energy_sum = 0;
  std::map<std::size_t, std::size_t> calls_of;
  for (std::size_t i = 0; i < inv.sequence.size(); ++i) {
    const auto& call = inv.sequence[i];
    const InventoryEntry& entry = inv.entries[call.entry];
    auto it = costs.find(call.entry);
    const std::string layer = call.layer.empty() ? "(top)" : call.layer;
    for (PredictedRow* row : {&by_layer[layer], &by_op[entry.row_name()]}) {
      ++row->calls;
      if (it == costs.end()) {
        ++row->missing_calls;
        continue;
      }
      const OpCost& c = it->second;
      const double stall = p.timeline.stall_us[i];
      row->time_us += in.on_gpu ? ops[i].gpu_us + stall : ops[i].cpu_us;
      row->gpu_us += ops[i].gpu_us;
      row->cpu_us += ops[i].cpu_us;
      if (energy)
        row->energy_mJ =
            row->energy_mJ.value_or(0) + active_energy_mJ(c, in) + (in.on_gpu ? *in.gap_power_W * stall * 1e-3 : 0);
    }
    if (it != costs.end()) {
      ++p.measured_calls;
      ++calls_of[call.entry];
      if (energy) {
        energy_sum += active_energy_mJ(it->second, in);
        if (measured_at_power_cap(it->second)) p.capped_energy_mJ += active_energy_mJ(it->second, in);
      }
    }
  }
  // One measurement serves all calls of a signature: its error repeats (count × half-width);
  // different signatures' errors are independent (root sum of squares).
  for (const auto& [e, n] : calls_of) {
    const OpCost& c = costs.at(e);
    var_time += std::pow(double(n) * c.gpu_ci_us, 2);  // GPU time's CI (on the CPU: wall time's)
    if (c.energy_ci_mJ) var_energy += std::pow(double(n) * *c.energy_ci_mJ, 2);
  }
  p.time_ci_us = std::sqrt(var_time);
  if (energy) {
    p.gap_energy_mJ = in.on_gpu ? *in.gap_power_W * p.timeline.gap_us * 1e-3 : 0;
    p.energy_mJ = energy_sum + p.gap_energy_mJ;
    p.energy_ci_mJ = std::sqrt(var_energy);
  }
  const double tail = p.timeline.tail_us + in.sync_us;
  if (in.on_gpu && tail > 0) {  // on the CPU every call is its own row already
    PredictedRow r;
    r.name = "(CPU tail and final sync)";
    r.time_us = r.cpu_us = tail;
    if (energy && in.on_gpu) r.energy_mJ = *in.gap_power_W * tail * 1e-3;
    by_layer.emplace(r.name, r);
  }
  for (auto& [name, row] : by_layer) {
    row.name = name;
    p.layers.push_back(row);
  }
  for (auto& [name, row] : by_op) {
    row.name = name;
    p.ops.push_back(row);
  }
  sort_rows(p.layers);
  sort_rows(p.ops);
  return p;
}

namespace {

nlohmann::json opt(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

nlohmann::json rows_json(const std::vector<PredictedRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows)
    out.push_back({{"name", r.name},
                   {"calls", r.calls},
                   {"time_us", r.time_us},
                   {"gpu_us", r.gpu_us},
                   {"cpu_us", r.cpu_us},
                   {"energy_mJ", opt(r.energy_mJ)},
                   {"missing_calls", r.missing_calls}});
  return out;
}

// " in layer" (the first of a signature's layers, and how many more), or nothing for none.
std::string layers_text(const std::vector<std::string>& layers) {
  if (layers.empty()) return "";
  const std::string first = layers[0].empty() ? "(top)" : layers[0];
  return layers.size() == 1 ? fmt::format("  in {}", first)
                            : fmt::format("  in {} (+{} more layers)", first, layers.size() - 1);
}

std::string error_pct(double predicted, double measured) {
  return fmt::format("{:+.2f}%", 100 * (predicted - measured) / measured);
}

}  // namespace

std::optional<double> host_scale_matching(const Inventory& inv, const std::map<std::size_t, OpCost>& costs,
                                          PredictionInputs in, double time_us) {
  auto time_at = [&](double scale) {
    in.host_scale = scale;
    return predict(inv, costs, in).time_us;
  };
  double low = 0.25, high = 4;
  if (time_at(low) > time_us * 1.005 || time_at(high) < time_us * 0.995) return std::nullopt;
  for (int i = 0; i < 40 && high / low > 1.0001; ++i) {
    const double mid = std::sqrt(low * high);
    (time_at(mid) < time_us ? low : high) = mid;
  }
  const double scale = std::sqrt(low * high);
  // A GPU-bound step's time moves little with the host: a scale that barely reaches time_us
  // is no measure of the host's speed.
  if (std::abs(time_at(scale) / time_us - 1) > 0.005) return std::nullopt;
  return scale;
}

nlohmann::json to_json(const Prediction& p, const Inventory& inv, const StepMeasurement* m) {
  nlohmann::json missing = nlohmann::json::array();
  for (auto e : p.missing) {
    const auto failed = p.failed.find(e);
    missing.push_back({{"signature", inv.entries[e].signature()},
                       {"count", inv.entries[e].count},
                       {"layers", inv.entries[e].layers},
                       {"error", failed == p.failed.end() ? nlohmann::json(nullptr) : nlohmann::json(failed->second)}});
  }
  nlohmann::json matched = nlohmann::json::array();
  for (const auto& m : p.matched_ignoring_float_scalars)
    matched.push_back(
        {{"signature", inv.entries[m.entry].signature()}, {"stored_args", m.stored_args}, {"db_id", m.db_id}});
  nlohmann::json j = {{"model", inv.model},
                      {"input", inv.input},
                      {"device", inv.device},
                      {"dtype", inv.dtype},
                      {"mode", inv.mode},
                      {"predicted",
                       {{"time_us", p.time_us},
                        {"time_ci95_us", p.time_ci_us},
                        {"time_ci95_covers", p.on_gpu ? "the operators' GPU times only; host costs carry no interval"
                                                      : "the operators' measured times only; the model's own host "
                                                        "code carries no interval"},
                        {"host_bound", p.host_bound()},
                        {"energy_mJ", opt(p.energy_mJ)},
                        {"energy_ci95_mJ", opt(p.energy_ci_mJ)},
                        {"energy_unavailable", p.energy_mJ ? nlohmann::json(nullptr) : nlohmann::json(p.energy_why)},
                        {"timeline",
                         {{"cpu_us", p.timeline.cpu_us},
                          {"gpu_busy_us", p.timeline.gpu_busy_us},
                          {"gap_us", p.timeline.gap_us},
                          {"tail_us", p.timeline.tail_us}}},
                        {"gap_energy_mJ", p.gap_energy_mJ}}},
                      {"complete", p.complete()},
                      {"unmeasured_by_choice", p.unmeasured_by_choice},
                      {"calls", p.calls},
                      {"measured_calls", p.measured_calls},
                      {"missing", missing},
                      {"failed_calls", p.failed.size()},
                      {"matched_ignoring_float_scalars", {{"count", matched.size()}, {"signatures", matched}}},
                      {"flagged", p.flagged},
                      {"from_other_board", p.from_other_board},
                      {"capped", {{"signatures", p.capped_signatures}, {"energy_mJ", p.capped_energy_mJ}}},
                      {"layers", rows_json(p.layers)},
                      {"ops", rows_json(p.ops)}};
  if (p.time_us_launched_at_return) j["predicted"]["time_us_launched_at_return"] = *p.time_us_launched_at_return;
  if (m) {
    j["measured"] = {{"time_us", m->time_us},
                     {"time_ci95_us", m->time_ci_us},
                     {"energy_mJ", opt(m->energy_mJ)},
                     {"energy_ci95_mJ", opt(m->energy_ci_mJ)},
                     {"energy_loop_time_us", opt(m->energy_loop_time_us)},
                     {"flags", m->flags},
                     {"db_id", m->db_id}};
    if (m->before_ops_time_us) {
      j["measured"]["before_ops_time_us"] = *m->before_ops_time_us;
      j["measured"]["drift"] = m->time_us / *m->before_ops_time_us - 1;
    }
    if (p.measured_calls == 0) {  // nothing predicted: no error to speak of
      j["error"] = {{"time", nullptr}, {"energy", nullptr}};
      j["explained"] = {{"time", nullptr}, {"energy", nullptr}};
      return j;
    }
    j["error"] = {
        {"time", (p.time_us - m->time_us) / m->time_us},
        {"energy", p.energy_mJ && m->energy_mJ ? nlohmann::json((*p.energy_mJ - *m->energy_mJ) / *m->energy_mJ)
                                               : nlohmann::json(nullptr)}};
    // What the measured operators explain of the measured step (missing ones count as zero).
    j["explained"] = {{"time", p.time_us / m->time_us},
                      {"energy", p.energy_mJ && m->energy_mJ ? nlohmann::json(*p.energy_mJ / *m->energy_mJ)
                                                             : nlohmann::json(nullptr)}};
  }
  return j;
}

std::string to_table(const Prediction& p, const Inventory& inv, const StepMeasurement* m, std::size_t rows) {
  std::string out = fmt::format("{} input={} on {} ({}, {})\n", inv.model, inv.input, inv.device, inv.dtype, inv.mode);
  auto energy = [](const std::optional<double>& e) { return e ? fmt::format("{:.4g}", *e) : std::string("n/a"); };
  auto table = [&](const char* title, const std::vector<PredictedRow>& v) {
    out += fmt::format("\n{:<58} {:>6} {:>11} {:>7} {:>11} {:>7}\n", title, "calls", "time_us", "share", "energy_mJ",
                       "share");
    for (std::size_t i = 0; i < v.size() && i < rows; ++i) {
      const auto& r = v[i];
      out += fmt::format("{:<58} {:>6} {:>11.2f} {:>6.1f}% {:>11} {:>7}{}\n", fit_label(r.name, 58), r.calls, r.time_us,
                         100 * r.time_us / p.time_us, energy(r.energy_mJ),
                         r.energy_mJ && p.energy_mJ ? fmt::format("{:.1f}%", 100 * *r.energy_mJ / *p.energy_mJ) : "",
                         r.missing_calls ? fmt::format("  ({} calls unmeasured)", r.missing_calls) : "");
    }
    if (v.size() > rows) out += fmt::format("... {} more (--json lists all)\n", v.size() - rows);
  };
  const bool nothing_measured = p.measured_calls == 0;
  if (nothing_measured) {  // tables of zeros would say nothing
    out += fmt::format(
        "\npredicted: nothing: no operator of the model is measured yet ({} signatures, {} calls); run `opcost "
        "validate` with the same model and options to measure them\n",
        inv.entries.size(), p.calls);
  } else {
    table("layer", p.layers);
    table("operator", p.ops);
    // The interval covers the operators' own times: on a GPU their kernels', on the CPU the
    // calls' (where all of the step is host time).
    const std::string covers =
        p.on_gpu ? fmt::format("GPU time only{}; CPU issue {:.1f} µs, GPU busy {:.1f} µs, GPU idle {:.1f} µs",
                               p.host_bound() ? "; the step is host-bound and host costs carry no interval, so the "
                                                "error can be larger"
                                              : "",
                               p.timeline.cpu_us, p.timeline.gpu_busy_us, p.timeline.gap_us)
                 : std::string(
                       "the operators' times only; on the CPU the whole step is host time, and the model's own "
                       "host code carries no interval");
    out += fmt::format("\npredicted: time {:.2f} µs ± {:.2f} µs (95%, {})\n", p.time_us, p.time_ci_us, covers);
    if (p.time_us_launched_at_return)
      out += fmt::format(
          "           ({:.2f} µs had every call launched its kernels as it returned, with no launch latency)\n",
          *p.time_us_launched_at_return);
    out += p.energy_mJ ? fmt::format("           energy {:.4g} mJ ± {:.2g} mJ (95%; {:.3g} mJ of it in GPU gaps)\n",
                                     *p.energy_mJ, *p.energy_ci_mJ, p.gap_energy_mJ)
                       : fmt::format("           energy unavailable: {}\n", p.energy_why);
  }
  if (m && nothing_measured) {  // no prediction to compare: an error of −97% would be no error of it
    out += fmt::format("measured:  time {:.2f} µs ± {:.2f} µs (95%); no prediction to compare it with\n", m->time_us,
                       m->time_ci_us);
  } else if (m) {
    out += fmt::format("measured:  time {:.2f} µs ± {:.2f} µs (95%)   → error {}\n", m->time_us, m->time_ci_us,
                       error_pct(p.time_us, m->time_us));
    if (m->energy_mJ)
      out += fmt::format("           energy {:.4g} mJ ± {:.2g} mJ (95%)   → error {}\n", *m->energy_mJ,
                         m->energy_ci_mJ.value_or(0),
                         p.energy_mJ ? error_pct(*p.energy_mJ, *m->energy_mJ) : std::string("n/a"));
    else
      out += fmt::format("           energy unavailable: {}\n", m->energy_why);
    if (m->before_ops_time_us)
      out += fmt::format("           (before the operator loops the step took {:.2f} µs: drift {})\n",
                         *m->before_ops_time_us, error_pct(m->time_us, *m->before_ops_time_us));
    out += fmt::format(
        "explained: {:.1f}% of the measured time{}\n", 100 * p.time_us / m->time_us,
        p.energy_mJ && m->energy_mJ ? fmt::format(", {:.1f}% of the energy", 100 * *p.energy_mJ / *m->energy_mJ) : "");
    if (!m->flags.empty()) {
      std::string flags;
      for (const auto& f : m->flags) flags += (flags.empty() ? "" : ", ") + f;
      out += fmt::format("whole-step flags: {}\n", flags);
    }
  }
  if (!p.complete()) {
    std::size_t calls = 0;
    for (auto e : p.missing) calls += inv.entries[e].count;
    out += fmt::format("{}: {} of {} signatures ({} of {} calls) have no measurement and count as zero above:\n",
                       p.unmeasured_by_choice ? "target met; left unmeasured" : "INCOMPLETE", p.missing.size(),
                       inv.entries.size(), calls, p.calls);
    // The failed first: each needs its own fix, the others only a run of validate.
    std::vector<std::size_t> listed = p.missing;
    std::stable_partition(listed.begin(), listed.end(), [&](std::size_t e) { return p.failed.count(e) > 0; });
    for (std::size_t i = 0; i < listed.size() && i < rows; ++i) {
      const InventoryEntry& e = inv.entries[listed[i]];
      out += fmt::format("  {} ×{}{}\n", e.signature(), e.count, layers_text(e.layers));
      if (const auto f = p.failed.find(listed[i]); f != p.failed.end())
        out += fmt::format("    failed: {}\n", f->second);
    }
    if (listed.size() > rows) out += fmt::format("  ... {} more (--json lists all)\n", listed.size() - rows);
    if (p.failed.size() < p.missing.size())
      out += "  measure them with `opcost validate` (or `opcost measure --spec` of the inventory)\n";
  }
  if (!p.matched_ignoring_float_scalars.empty())
    out += fmt::format(
        "{} signatures matched ignoring float scalar values: measured with other floating-point scalars (an "
        "optimizer's step size, a scale), which leave the kernel's work as it is (docs/prediction.md)\n",
        p.matched_ignoring_float_scalars.size());
  if (!p.flagged.empty())
    out +=
        fmt::format("{} measured signatures were flagged (throttling, clocks or other processes)\n", p.flagged.size());
  if (p.capped_signatures && p.energy_mJ && *p.energy_mJ > 0)
    out += fmt::format(
        "{} measured signatures ({:.0f}% of the predicted energy) reached the power cap in their own loops: where "
        "the step stays below the cap, their energy may not carry over (on the H100 such steps missed by -12 to +10%: "
        "docs/prediction.md)\n",
        p.capped_signatures, 100 * p.capped_energy_mJ / *p.energy_mJ);
  if (p.from_other_board)
    out += fmt::format(
        "{} measured signatures come from another board of this GPU model: energy sensors differ between boards "
        "by about ±5%, so their energy carries that too\n",
        p.from_other_board);
  return out;
}

}  // namespace opcost
