#include "workflow/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "core/report/report.h"
#include "core/trace/table.h"
#include "torch/model_call.h"
#include "torch/runner.h"
#include "torch/trace_recorder.h"
#include "workflow/measure.h"  // kMaxBudgetSeconds
#include "workflow/options.h"
#include "workflow/predict.h"
#include "workflow/trace.h"

namespace opcost {

namespace {

// Each variant's step loop in one round: validate's step loop (a step synchronises itself: wall
// clock), its budgets the round's.
MeasureConfig round_config(const CompareOptions& o) {
  MeasureConfig c = PredictOptions::validate().step_config;
  c.time.max_seconds = o.round_max_time;
  c.energy = o.energy;
  c.energy_max_s = c.energy_max_capped_s = o.round_max_time;
  c.energy_settle_s = std::min(c.energy_settle_s, o.round_max_time / 4);
  return c;
}

void check_variants(const std::vector<CompareVariant>& variants) {
  if (variants.size() < 2)
    throw std::invalid_argument(
        fmt::format("compare: {} variant given; give at least two (the first is the baseline)", variants.size()));
  std::set<std::string> names;
  for (const auto& v : variants) {
    if (!v.model) throw std::invalid_argument(fmt::format("compare: variant '{}' has no model", v.name));
    if (!names.insert(v.name).second)
      throw std::invalid_argument(fmt::format("compare: the variant name '{}' is given twice; name each once", v.name));
    const RunnableModel& first = *variants.front().model;
    if (v.model->device_kind() != first.device_kind() || v.model->device_index() != first.device_index())
      throw std::invalid_argument(fmt::format(
          "compare: variant '{}' runs on {}:{}, the baseline on {}:{}; put every "
          "variant on one device",
          v.name, v.model->device_kind(), v.model->device_index(), first.device_kind(), first.device_index()));
  }
}

// Every variant once per round, the order turned by one each round; the warm-up rounds first,
// measured the same way and dropped.
void measure_rounds(const std::vector<CompareVariant>& variants, const CompareOptions& o, CompareReport& r,
                    const Notes& notes) {
  const RunnableModel& first = *variants.front().model;
  Runner runner(first.device_kind(), first.device_index(), round_config(o));
  const std::size_t n = variants.size();
  for (std::size_t round = 0; round < o.warmup_rounds + o.rounds; ++round) {
    const bool warmup = round < o.warmup_rounds;
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t v = (round + k) % n;
      if (notes.progress)
        notes.progress(
            warmup
                ? fmt::format("compare: warm-up round {} of {}, {}", round + 1, o.warmup_rounds, variants[v].name)
                : fmt::format("compare: round {} of {}, {}", round - o.warmup_rounds + 1, o.rounds, variants[v].name));
      ModelCall call(*variants[v].model, variants[v].options.in);
      Measurement m = runner.measure(call);
      if (!warmup) r.variants[v].rounds.push_back(std::move(m));
    }
  }
  if (notes.progress_done) notes.progress_done();
}

void summarize_rounds(CompareReport& r) {
  auto times = [](const VariantResult& v) {
    std::vector<double> t;
    for (const auto& m : v.rounds) t.push_back(m.time.per_call_us.mean);
    return t;
  };
  // Energy for every variant only when every round of every variant has it: a difference needs
  // both sides, and a partial figure would mislead.
  bool energy = true;
  for (const auto& v : r.variants)
    for (const auto& m : v.rounds)
      if (!m.energy.available) {
        energy = false;
        if (r.energy_why.empty())
          r.energy_why =
              m.energy.unavailable_reason.empty() ? "the device has no energy counter" : m.energy.unavailable_reason;
      }
  auto energies = [](const VariantResult& v) {
    std::vector<double> e;
    for (const auto& m : v.rounds) e.push_back(m.energy.per_call_mJ.mean);
    return e;
  };
  const VariantResult& base = r.variants[r.baseline];
  for (std::size_t i = 0; i < r.variants.size(); ++i) {
    VariantResult& v = r.variants[i];
    v.time_us = summarize(times(v));
    if (energy) v.energy_mJ = summarize(energies(v));
    std::set<std::string> flags;
    for (const auto& m : v.rounds) flags.insert(m.flags.begin(), m.flags.end());
    v.flags.assign(flags.begin(), flags.end());
    if (i == r.baseline) continue;
    v.time_vs_baseline = paired_difference(times(v), times(base));
    if (energy) v.energy_vs_baseline = paired_difference(energies(v), energies(base));
  }
}

void trace_layers(const std::vector<CompareVariant>& variants, const CompareOptions& o, CompareReport& r,
                  const Notes& notes) {
  TraceRecordOptions record;
  record.schedule = TraceSchedule{0, 1, int(o.layer_steps), 1};
  std::vector<std::string> names;
  std::vector<TraceRun> runs;
  try {
    for (const auto& v : variants) {
      if (notes.progress) notes.progress(fmt::format("compare: tracing {} steps of {}", o.layer_steps, v.name));
      runs.push_back(trace_model(*v.model, v.options, record, nullptr, notes));
      names.push_back(v.name);
    }
    if (notes.progress_done) notes.progress_done();
    r.layers = compare_layers(names, runs, r.baseline, variants.front().model->device_kind() == "cuda");
  } catch (const std::exception& e) {
    if (notes.progress_done) notes.progress_done();
    const std::string which =
        runs.size() < variants.size() ? "the trace of " + variants[runs.size()].name : "matching the traces' layers";
    r.layers_why = fmt::format("{} failed: {}", which, e.what());
  }
}

}  // namespace

void CompareOptions::check() const { check_options(*this); }

CompareReport run_compare(const std::vector<CompareVariant>& variants, const CompareOptions& o, const Notes& notes) {
  o.check();
  check_variants(variants);
  CompareReport r;
  r.options = o;
  r.model = variants.front().model->name();
  r.train = variants.front().model->trains();
  for (const auto& v : variants) {
    VariantResult result;
    result.name = v.name;
    result.description = v.description;
    result.input = v.model->input_signature();
    r.variants.push_back(std::move(result));
  }
  measure_rounds(variants, o, r, notes);
  r.env = r.variants.front().rounds.front().env;
  summarize_rounds(r);
  if (o.layers)
    trace_layers(variants, o, r, notes);
  else
    r.layers_why = "not asked for (layers off)";
  return r;
}

namespace {

nlohmann::json summary_json(const Summary& s) {
  return {{"mean", s.mean}, {"ci95", s.n >= 2 ? nlohmann::json(s.ci95_half_width()) : nullptr}, {"samples", s.n}};
}

}  // namespace

nlohmann::json to_json(const CompareReport& r) {
  nlohmann::json variants = nlohmann::json::array();
  for (const auto& v : r.variants) {
    nlohmann::json rounds = nlohmann::json::array();
    for (const auto& m : v.rounds)
      rounds.push_back(
          {{"time_us", m.time.per_call_us.mean},
           {"time_ci95_us",
            m.time.per_call_us.n >= 2 ? nlohmann::json(m.time.per_call_us.ci95_half_width()) : nlohmann::json(nullptr)},
           {"steps", m.total_calls},
           {"energy_mJ", m.energy.available ? nlohmann::json(m.energy.per_call_mJ.mean) : nullptr},
           {"flags", m.flags}});
    auto diff = [](const std::optional<Difference>& d) { return d ? to_json(*d) : nlohmann::json(nullptr); };
    variants.push_back({{"name", v.name},
                        {"description", v.description},
                        {"input", v.input},
                        {"time_us", summary_json(v.time_us)},
                        {"energy_mJ", v.energy_mJ ? summary_json(*v.energy_mJ) : nlohmann::json(nullptr)},
                        {"time_vs_baseline", diff(v.time_vs_baseline)},
                        {"energy_vs_baseline", diff(v.energy_vs_baseline)},
                        {"flags", v.flags},
                        {"rounds", std::move(rounds)}});
  }
  return {{"kind", "compare"},
          {"model", r.model},
          {"train", r.train},
          {"device", r.env.device_name},
          {"device_kind", r.env.device_kind},
          {"torch_version", r.env.torch_version},
          {"driver_version", r.env.driver_version},
          {"opcost_version", r.env.opcost_version},
          {"options",
           {{"rounds", r.options.rounds},
            {"warmup_rounds", r.options.warmup_rounds},
            {"round_max_time", r.options.round_max_time},
            {"energy", r.options.energy},
            {"layers", r.options.layers},
            {"layer_steps", r.options.layer_steps}}},
          {"baseline", r.variants[r.baseline].name},
          {"variants", std::move(variants)},
          {"energy_why", r.energy_why},
          {"layers", r.layers ? to_json(*r.layers) : nlohmann::json(nullptr)},
          {"layers_why", r.layers_why}};
}

namespace {

// "-12.3% ±1.1%", "~+0.4% ±0.9%" where the interval includes 0; coloured on a terminal.
std::string relative_cell(const std::optional<Difference>& d, bool color) {
  if (!d) return "";
  if (d->samples < 2 || !std::isfinite(d->relative_ci95)) return fmt::format("{:+.1f}% (n<2)", 100 * d->relative);
  std::string text =
      fmt::format("{}{:+.1f}% ±{:.1f}%", d->significant() ? "" : "~", 100 * d->relative, 100 * d->relative_ci95);
  if (!color || !d->significant()) return text;
  return fmt::format("\x1b[{}m{}\x1b[0m", d->delta < 0 ? 32 : 31, text);
}

std::size_t visible_width(const std::string& s) {
  std::size_t w = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\x1b') {
      while (i < s.size() && s[i] != 'm') ++i;
      continue;
    }
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) ++w;  // count UTF-8 lead bytes only
  }
  return w;
}

std::string pad(const std::string& s, std::size_t width) {
  const std::size_t w = visible_width(s);
  return s + std::string(w < width ? width - w : 0, ' ');
}

std::string render_rows(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows)
    for (std::size_t c = 0; c < row.size(); ++c) {
      if (widths.size() <= c) widths.push_back(0);
      widths[c] = std::max(widths[c], visible_width(row[c]));
    }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) line += pad(row[c], widths[c] + 2);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string figure(const Summary& s, const char* unit) {
  return s.n >= 2 ? with_ci(s.mean, s.ci95_low, s.ci95_high, unit) : human(s.mean, unit) + " (no interval)";
}

}  // namespace

std::string render_compare(const CompareReport& r, bool color, std::size_t layer_rows) {
  const std::string& base = r.variants[r.baseline].name;
  std::string out = fmt::format(
      "compare: {} ({}, {}) on {}, {} interleaved rounds of {} s a variant after {} warm-up round{}; baseline {}\n",
      r.model, r.train ? "training step" : "inference", r.variants[r.baseline].input,
      r.env.device_name.empty() ? r.env.device_kind : r.env.device_name, r.options.rounds, r.options.round_max_time,
      r.options.warmup_rounds, r.options.warmup_rounds == 1 ? "" : "s", base);
  std::vector<std::vector<std::string>> rows = {
      {"variant", "step time", "vs " + base, "energy", "vs " + base, "flags"}};
  for (const auto& v : r.variants) {
    std::string flags;
    for (const auto& f : v.flags) flags += (flags.empty() ? "" : ",") + f;
    rows.push_back({v.name, figure(v.time_us, "us"), relative_cell(v.time_vs_baseline, color),
                    v.energy_mJ ? figure(*v.energy_mJ, "mJ") : "n/a", relative_cell(v.energy_vs_baseline, color),
                    flags});
  }
  out += render_rows(rows);
  if (!r.energy_why.empty()) out += fmt::format("energy: none ({})\n", r.energy_why);
  for (const auto& v : r.variants)
    if (!v.description.empty()) out += fmt::format("  {}: {}\n", v.name, v.description);
  out += "~: the 95% interval includes 0 (no significant difference)\n";
  if (!r.layers) {
    out += fmt::format("per layer: none ({})\n", r.layers_why);
    return out;
  }
  const LayerComparison& c = *r.layers;
  out += fmt::format("\nper layer ({} time, inclusive, over {} traced steps a variant; relative to {}):\n",
                     c.time_kind == "gpu" ? "GPU" : "host", r.options.layer_steps, base);
  std::vector<std::vector<std::string>> lrows;
  std::vector<std::string> head = {"layer", base};
  for (std::size_t v = 0; v < c.variants.size(); ++v)
    if (v != c.baseline) head.push_back(c.variants[v]);
  lrows.push_back(head);
  std::size_t shown = 0;
  for (const auto& row : c.rows) {
    if (layer_rows && shown++ >= layer_rows) break;
    std::vector<std::string> cells = {row.layer};
    const auto& b = row.figures[c.baseline];
    cells.push_back(b ? figure(b->time_us, "us") : "absent");
    for (std::size_t v = 0; v < c.variants.size(); ++v) {
      if (v == c.baseline) continue;
      if (!row.figures[v])
        cells.push_back("absent");
      else if (!b)
        cells.push_back(figure(row.figures[v]->time_us, "us") + " (new)");
      else
        cells.push_back(relative_cell(row.time_vs_baseline[v], color));
    }
    lrows.push_back(std::move(cells));
  }
  out += render_rows(lrows);
  if (layer_rows && c.rows.size() > layer_rows)
    out += fmt::format("({} more layers: the JSON has them all)\n", c.rows.size() - layer_rows);
  out += "absent: the variant has no such layer (fused away by compile, or not called)\n";
  return out;
}

}  // namespace opcost
