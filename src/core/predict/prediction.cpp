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

bool is_pooled_flag(const std::string& flag) { return flag.starts_with(kPooledEnergyFlag); }

bool measured_at_power_cap(const OpCost& c) {
  auto has = [&](auto&& pred) { return std::any_of(c.flags.begin(), c.flags.end(), pred); };
  // An energy measured again at a step's duty cycle is not the capped loop's (duty_cycle.h).
  if (has([](const std::string& f) { return f.starts_with("energy_at_duty_cycle:"); })) return false;
  return has(
      [](const std::string& f) { return f.starts_with("throttled:") && f.find("sw_power_cap") != std::string::npos; });
}

OpCost op_cost_from(const Measurement& m, bool on_gpu) {
  OpCost c;
  c.db_id = m.db_id;
  const auto& t = m.time.per_call_us;
  c.gpu_us = t.mean;
  c.gpu_ci_us = (t.ci95_high - t.ci95_low) / 2;
  c.cpu_us = m.time.host_us_per_call;
  if (!on_gpu) {  // on the CPU the call's time is all host time, and nothing overlaps
    c.cpu_us = c.gpu_us;
    c.gpu_us = 0;
  }
  if (m.energy.available) {
    const auto& e = m.energy;
    c.energy_mJ = e.per_call_mJ.mean;
    c.energy_ci_mJ = (e.per_call_mJ.ci95_high - e.per_call_mJ.ci95_low) / 2;
    c.loop_wall_us = e.wall_us_per_call;
  } else
    c.energy_why = m.energy.unavailable_reason;
  c.waits_for_device = m.waits_for_device;
  c.device_work = m.device_work;
  c.flags = m.flags;
  c.gpu_uuid = m.env.device_uuid;
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

namespace {

// A prediction built in steps over the same state: the timeline from the model's host times
// and the costs, a review of the inventory's entries (what is missing, flagged, without
// energy), whether there is an energy figure at all, then each call's share of the time and
// energy by layer and by operator, and the intervals.
class PredictionBuilder {
 public:
  PredictionBuilder(const Inventory& inv, const std::map<std::size_t, OpCost>& costs, const PredictionInputs& in)
      : inv_(inv), costs_(costs), in_(in) {
    p_.on_gpu = in.on_gpu;
  }

  Prediction build() && {
    simulate_timeline();
    review_entries();
    decide_energy();
    attribute_calls();
    add_intervals();
    add_tail_row();
    p_.layers = sorted_rows(std::move(by_layer_));
    p_.ops = sorted_rows(std::move(by_op_));
    return std::move(p_);
  }

 private:
  const OpCost* cost_of(std::size_t entry) const {
    const auto it = costs_.find(entry);
    return it == costs_.end() ? nullptr : &it->second;
  }

  // The model's host times at this host's speed (PredictionInputs::host_scale).
  ModelHostTimes scaled_host_times() const {
    ModelHostTimes host = model_host_times(inv_);
    if (in_.host_scale != 1) {
      for (auto* v : {&host.before_us, &host.in_call_us})
        for (double& t : *v) t *= in_.host_scale;
      host.after_last_us *= in_.host_scale;
    }
    return host;
  }

  void simulate_timeline() {
    const ModelHostTimes host = scaled_host_times();
    ops_.reserve(inv_.sequence.size() + 1);
    for (std::size_t i = 0; i < inv_.sequence.size(); ++i) {
      const std::size_t entry = inv_.sequence[i].entry;
      const auto* launches = entry < in_.launches_by_entry.size() ? &in_.launches_by_entry[entry] : nullptr;
      ops_.push_back(timeline_op(host, i, cost_of(entry), in_.on_gpu, launches));
    }
    ops_.push_back({host.after_last_us, 0});  // the step's own code after its last call
    p_.timeline = simulate(ops_, in_.sync_us, in_.launch_latency_us);
    if (!in_.launches_by_entry.empty() || in_.launch_latency_us > 0)
      p_.time_us_launched_at_return = simulate(ops_, in_.sync_us, 0, false).wall_us;
    p_.time_us = p_.timeline.wall_us;
    p_.calls = inv_.sequence.size();
  }

  // Per signature: missing, without energy (and why), matched ignoring float scalars,
  // flagged, measured at the power cap, measured on another board.
  void review_entries() {
    std::size_t without_energy = 0;
    std::string first_without_energy;  // "signature: reason"
    std::set<std::string> reasons;     // why they have none: one reason for all, or several
    for (std::size_t e = 0; e < inv_.entries.size(); ++e) {
      const OpCost* c = cost_of(e);
      if (!c) {
        p_.missing.push_back(e);
        continue;
      }
      if (!c->energy_mJ) {
        energy_ = false;
        if (without_energy++ == 0)
          first_without_energy = fmt::format("{}: {}", inv_.entries[e].signature(), c->energy_why);
        reasons.insert(c->energy_why);
      }
      if (!c->matched_args.empty()) p_.matched_ignoring_float_scalars.push_back({e, c->matched_args, c->db_id});
      // An estimate's flag says it lies outside the fit's data (workflow/predict_estimates.h).
      if (c->estimated) {
        p_.estimated.push_back(inv_.entries[e].signature());
        if (!c->flags.empty()) ++p_.estimated_outside_fit;
        if (!c->anchor_args.empty()) ++p_.estimated_anchored;
      } else if (std::any_of(c->flags.begin(), c->flags.end(),
                             [](const std::string& f) { return !is_pooled_flag(f); })) {
        p_.flagged.push_back(inv_.entries[e].signature());
      }
      if (!c->estimated && std::any_of(c->flags.begin(), c->flags.end(), is_pooled_flag)) ++p_.pooled_energy;
      if (measured_at_power_cap(*c)) ++p_.capped_signatures;
      if (!in_.gpu_uuid.empty() && !c->gpu_uuid.empty() && c->gpu_uuid != in_.gpu_uuid) ++p_.from_other_board;
    }
    // One operator is named only where it is the one without energy; a reason every operator
    // shares (energy switched off, no energy counter) is said as the run's.
    if (without_energy == 1)
      p_.energy_why = first_without_energy;
    else if (without_energy > 1 && reasons.size() == 1 && without_energy == costs_.size())
      p_.energy_why = fmt::format("no measured operator has an energy figure: {}", *reasons.begin());
    else if (without_energy > 1)
      p_.energy_why = fmt::format("{} of {} measured signatures have no energy figure (the first, {})", without_energy,
                                  costs_.size(), first_without_energy);
  }

  // Reasons that concern the whole run override the operators' (the last that applies is said).
  void decide_energy() {
    if (in_.on_gpu && !in_.gap_power_W) {
      energy_ = false;
      p_.energy_why = "no gap-power measurement: " + in_.gap_power_why;
    }
    if (costs_.empty()) {  // never "0 mJ ± 0": nothing was predicted
      energy_ = false;
      p_.energy_why = "no operator of the model is measured yet";
    }
    if (in_.energy_off) {
      energy_ = false;
      p_.energy_why = "energy was switched off (--no-energy; energy=False in Python)";
    }
  }

  // Per-call attribution: the call's kernels plus the GPU's wait just before them.
  void attribute_calls() {
    for (std::size_t i = 0; i < inv_.sequence.size(); ++i) {
      const auto& call = inv_.sequence[i];
      const InventoryEntry& entry = inv_.entries[call.entry];
      const OpCost* c = cost_of(call.entry);
      const std::string layer = call.layer.empty() ? "(top)" : call.layer;
      for (PredictedRow* row : {&by_layer_[layer], &by_op_[entry.row_name()]}) add_call(*row, i, c);
      if (c) {
        ++p_.measured_calls;
        if (c->estimated) ++p_.estimated_calls;
        ++calls_of_[call.entry];
        if (energy_) {
          energy_sum_ += active_energy_mJ(*c, in_);
          if (measured_at_power_cap(*c)) p_.capped_energy_mJ += active_energy_mJ(*c, in_);
        }
      }
    }
  }

  void add_call(PredictedRow& row, std::size_t i, const OpCost* c) const {
    ++row.calls;
    if (!c) {
      ++row.missing_calls;
      return;
    }
    if (c->estimated) ++row.estimated_calls;
    const double stall = p_.timeline.stall_us[i];
    row.time_us += in_.on_gpu ? ops_[i].gpu_us + stall : ops_[i].cpu_us;
    row.gpu_us += ops_[i].gpu_us;
    row.cpu_us += ops_[i].cpu_us;
    if (energy_)
      row.energy_mJ =
          row.energy_mJ.value_or(0) + active_energy_mJ(*c, in_) + (in_.on_gpu ? *in_.gap_power_W * stall * 1e-3 : 0);
  }

  // One measurement serves all calls of a signature: its error repeats (count × half-width);
  // different signatures' errors are independent (root sum of squares).
  void add_intervals() {
    double var_time = 0, var_energy = 0;
    for (const auto& [e, n] : calls_of_) {
      const OpCost& c = costs_.at(e);
      var_time += std::pow(double(n) * c.gpu_ci_us, 2);  // GPU time's CI (on the CPU: wall time's)
      if (c.energy_ci_mJ) var_energy += std::pow(double(n) * *c.energy_ci_mJ, 2);
    }
    p_.time_ci_us = std::sqrt(var_time);
    if (energy_) {
      p_.gap_energy_mJ = in_.on_gpu ? *in_.gap_power_W * p_.timeline.gap_us * 1e-3 : 0;
      p_.energy_mJ = energy_sum_ + p_.gap_energy_mJ;
      p_.energy_ci_mJ = std::sqrt(var_energy);
    }
  }

  // Trailing CPU-only work and the final synchronisation are a layer row of their own.
  void add_tail_row() {
    const double tail = p_.timeline.tail_us + in_.sync_us;
    if (!in_.on_gpu || tail <= 0) return;  // on the CPU every call is its own row already
    PredictedRow r;
    r.name = "(CPU tail and final sync)";
    r.time_us = r.cpu_us = tail;
    if (energy_) r.energy_mJ = *in_.gap_power_W * tail * 1e-3;
    by_layer_.emplace(r.name, r);
  }

  static std::vector<PredictedRow> sorted_rows(std::map<std::string, PredictedRow> by_name) {
    std::vector<PredictedRow> rows;
    for (auto& [name, row] : by_name) {
      row.name = name;
      rows.push_back(row);
    }
    sort_rows(rows);
    return rows;
  }

  const Inventory& inv_;
  const std::map<std::size_t, OpCost>& costs_;
  const PredictionInputs& in_;
  Prediction p_;
  std::vector<TimelineOp> ops_;  // per call, then the step's code after the last
  bool energy_ = true;           // an energy figure can be given
  std::map<std::string, PredictedRow> by_layer_, by_op_;
  std::map<std::size_t, std::size_t> calls_of_;  // entry -> its measured calls
  double energy_sum_ = 0;
};

}  // namespace

Prediction predict(const Inventory& inv, const std::map<std::size_t, OpCost>& costs, const PredictionInputs& in) {
  return PredictionBuilder(inv, costs, in).build();
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
                   {"missing_calls", r.missing_calls},
                   {"estimated_calls", r.estimated_calls}});
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
                      {"traced_device_us", p.coverage.traced_device_us},
                      {"untied_device_us", p.coverage.untied_device_us},
                      {"uncovered", p.uncovered()},  // past kUncoveredShare: what makes it incomplete
                      {"unmeasured_by_choice", p.unmeasured_by_choice},
                      {"calls", p.calls},
                      {"measured_calls", p.measured_calls},
                      {"estimated_calls", p.estimated_calls},
                      {"missing", missing},
                      {"failed_calls", p.failed.size()},
                      {"matched_ignoring_float_scalars", {{"count", matched.size()}, {"signatures", matched}}},
                      {"flagged", p.flagged},
                      {"estimated",
                       {{"count", p.estimated.size()},
                        {"outside_fit", p.estimated_outside_fit},
                        {"anchored", p.estimated_anchored},
                        {"signatures", p.estimated}}},
                      {"from_other_board", p.from_other_board},
                      {"pooled_energy", p.pooled_energy},
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

namespace {

// The prediction as text: the tables of layers and operators, the predicted figures, the
// comparison with a measured step, what is missing, and notes on what the figures rest on.
class PredictionText {
 public:
  PredictionText(const Prediction& p, const Inventory& inv, const StepMeasurement* m, std::size_t rows)
      : p_(p), inv_(inv), m_(m), rows_(rows) {}

  std::string render() {
    out_ = fmt::format("{} input={} on {} ({}, {})\n", inv_.model, inv_.input, inv_.device, inv_.dtype, inv_.mode);
    const bool nothing_measured = p_.measured_calls == 0;
    if (nothing_measured) {  // tables of zeros would say nothing
      out_ += fmt::format(
          "\npredicted: nothing: no operator of the model is measured yet ({} signatures, {} calls); run `opcost "
          "validate` with the same model and options to measure them\n",
          inv_.entries.size(), p_.calls);
    } else {
      table("layer", p_.layers);
      table("operator", p_.ops);
      predicted();
    }
    if (m_ && nothing_measured) {  // no prediction to compare: an error of −97% would be no error of it
      out_ += fmt::format("measured:  time {:.2f} µs ± {:.2f} µs (95%); no prediction to compare it with\n",
                          m_->time_us, m_->time_ci_us);
    } else if (m_) {
      compared_with(*m_);
    }
    if (!p_.missing.empty()) missing();
    if (p_.uncovered()) uncovered();
    notes();
    return std::move(out_);
  }

 private:
  static std::string energy(const std::optional<double>& e) {
    return e ? fmt::format("{:.4g}", *e) : std::string("n/a");
  }

  void table(const char* title, const std::vector<PredictedRow>& v) {
    out_ += fmt::format("\n{:<58} {:>6} {:>11} {:>7} {:>11} {:>7}\n", title, "calls", "time_us", "share", "energy_mJ",
                        "share");
    for (std::size_t i = 0; i < v.size() && i < rows_; ++i) {
      const auto& r = v[i];
      out_ += fmt::format("{:<58} {:>6} {:>11.2f} {:>6.1f}% {:>11} {:>7}{}\n", fit_label(r.name, 58), r.calls,
                          r.time_us, 100 * r.time_us / p_.time_us, energy(r.energy_mJ),
                          r.energy_mJ && p_.energy_mJ ? fmt::format("{:.1f}%", 100 * *r.energy_mJ / *p_.energy_mJ) : "",
                          r.missing_calls     ? fmt::format("  ({} calls unmeasured)", r.missing_calls)
                          : r.estimated_calls ? fmt::format("  ({} calls estimated)", r.estimated_calls)
                                              : "");
    }
    if (v.size() > rows_) out_ += fmt::format("... {} more (--json lists all)\n", v.size() - rows_);
  }

  void predicted() {
    // The interval covers the operators' own times: on a GPU their kernels', on the CPU the
    // calls' (where all of the step is host time).
    const std::string covers =
        p_.on_gpu ? fmt::format("GPU time only{}; CPU issue {:.1f} µs, GPU busy {:.1f} µs, GPU idle {:.1f} µs",
                                p_.host_bound() ? "; the step is host-bound and host costs carry no interval, so the "
                                                  "error can be larger"
                                                : "",
                                p_.timeline.cpu_us, p_.timeline.gpu_busy_us, p_.timeline.gap_us)
                  : std::string(
                        "the operators' times only; on the CPU the whole step is host time, and the model's own "
                        "host code carries no interval");
    out_ += fmt::format("\npredicted: time {:.2f} µs ± {:.2f} µs (95%, {})\n", p_.time_us, p_.time_ci_us, covers);
    if (p_.time_us_launched_at_return)
      out_ += fmt::format(
          "           ({:.2f} µs had every call launched its kernels as it returned, with no launch latency)\n",
          *p_.time_us_launched_at_return);
    out_ += p_.energy_mJ ? fmt::format("           energy {:.4g} mJ ± {:.2g} mJ (95%; {:.3g} mJ of it in GPU gaps)\n",
                                       *p_.energy_mJ, *p_.energy_ci_mJ, p_.gap_energy_mJ)
                         : fmt::format("           energy unavailable: {}\n", p_.energy_why);
  }

  void compared_with(const StepMeasurement& m) {
    out_ += fmt::format("measured:  time {:.2f} µs ± {:.2f} µs (95%)   → error {}\n", m.time_us, m.time_ci_us,
                        error_pct(p_.time_us, m.time_us));
    if (m.energy_mJ)
      out_ += fmt::format("           energy {:.4g} mJ ± {:.2g} mJ (95%)   → error {}\n", *m.energy_mJ,
                          m.energy_ci_mJ.value_or(0),
                          p_.energy_mJ ? error_pct(*p_.energy_mJ, *m.energy_mJ) : std::string("n/a"));
    else
      out_ += fmt::format("           energy unavailable: {}\n", m.energy_why);
    if (m.before_ops_time_us)
      out_ += fmt::format("           (before the operator loops the step took {:.2f} µs: drift {})\n",
                          *m.before_ops_time_us, error_pct(m.time_us, *m.before_ops_time_us));
    out_ += fmt::format(
        "explained: {:.1f}% of the measured time{}\n", 100 * p_.time_us / m.time_us,
        p_.energy_mJ && m.energy_mJ ? fmt::format(", {:.1f}% of the energy", 100 * *p_.energy_mJ / *m.energy_mJ) : "");
    if (!m.flags.empty()) {
      std::string flags;
      for (const auto& f : m.flags) flags += (flags.empty() ? "" : ", ") + f;
      out_ += fmt::format("whole-step flags: {}\n", flags);
    }
  }

  void uncovered() {
    out_ += fmt::format(
        "INCOMPLETE: {:.1f} µs of the traced step's {:.1f} µs of GPU time ({:.1f}%) ran in kernels no operator call "
        "launched, and count as zero above: a CUDA graph's replay (torch.compile's mode=\"reduce-overhead\", or "
        "the model's own graphs) launches its kernels outside any call. Compile without it to predict the step\n",
        p_.coverage.untied_device_us, p_.coverage.traced_device_us,
        100 * p_.coverage.untied_device_us / p_.coverage.traced_device_us);
  }

  void missing() {
    std::size_t calls = 0;
    for (auto e : p_.missing) calls += inv_.entries[e].count;
    out_ += fmt::format("{}: {} of {} signatures ({} of {} calls) have no measurement and count as zero above:\n",
                        p_.unmeasured_by_choice ? "target met; left unmeasured" : "INCOMPLETE", p_.missing.size(),
                        inv_.entries.size(), calls, p_.calls);
    // The failed first: each needs its own fix, the others only a run of validate.
    std::vector<std::size_t> listed = p_.missing;
    std::stable_partition(listed.begin(), listed.end(), [&](std::size_t e) { return p_.failed.count(e) > 0; });
    for (std::size_t i = 0; i < listed.size() && i < rows_; ++i) {
      const InventoryEntry& e = inv_.entries[listed[i]];
      out_ += fmt::format("  {} ×{}{}\n", e.signature(), e.count, layers_text(e.layers));
      if (const auto f = p_.failed.find(listed[i]); f != p_.failed.end())
        out_ += fmt::format("    failed: {}\n", f->second);
    }
    if (listed.size() > rows_) out_ += fmt::format("  ... {} more (--json lists all)\n", listed.size() - rows_);
    if (p_.failed.size() < p_.missing.size())
      out_ += "  measure them with `opcost validate` (or `opcost measure --spec` of the inventory)\n";
  }

  // What the figures rest on: rows matched loosely, flagged, capped, or from another board.
  void notes() {
    if (!p_.matched_ignoring_float_scalars.empty())
      out_ += fmt::format(
          "{} signatures matched ignoring float scalar values: measured with other floating-point scalars (an "
          "optimizer's step size, a scale), which leave the kernel's work as it is (docs/prediction.md)\n",
          p_.matched_ignoring_float_scalars.size());
    if (!p_.flagged.empty())
      out_ += fmt::format("{} measured signatures were flagged (throttling, clocks or other processes)\n",
                          p_.flagged.size());
    if (p_.pooled_energy)
      out_ += fmt::format(
          "{} measured signatures of tiny shares have pooled energies: their power shared with calls of their kind "
          "in one loop, each ±50% or wider (docs/energy-method.md, \"Pooled columns\")\n",
          p_.pooled_energy);
    if (!p_.estimated.empty())
      out_ += fmt::format(
          "{} signatures were estimated by the cost model, not measured (docs/estimate.md){}: the step's interval "
          "carries their intervals\n",
          p_.estimated.size(),
          (p_.estimated_anchored
               ? fmt::format("; {} of them scaled from a row measured at another size", p_.estimated_anchored)
               : std::string()) +
              (p_.estimated_outside_fit
                   ? fmt::format("; {} of them lie outside the fit's data, extrapolated", p_.estimated_outside_fit)
                   : std::string()));
    if (p_.capped_signatures && p_.energy_mJ && *p_.energy_mJ > 0)
      out_ += fmt::format(
          "{} measured signatures ({:.0f}% of the predicted energy) reached the power cap in their own loops: where "
          "the step stays below the cap, their energy may not carry over (on the H100 such steps missed by -12 to "
          "+10%: docs/prediction.md)\n",
          p_.capped_signatures, 100 * p_.capped_energy_mJ / *p_.energy_mJ);
    if (p_.from_other_board)
      out_ += fmt::format(
          "{} measured signatures come from another board of this GPU model: energy sensors differ between boards "
          "by about ±5%, so their energy carries that too\n",
          p_.from_other_board);
  }

  const Prediction& p_;
  const Inventory& inv_;
  const StepMeasurement* m_;
  const std::size_t rows_;
  std::string out_;
};

}  // namespace

std::string to_table(const Prediction& p, const Inventory& inv, const StepMeasurement* m, std::size_t rows) {
  return PredictionText(p, inv, m, rows).render();
}

}  // namespace opcost
