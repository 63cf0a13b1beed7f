#include "core/compare/layer_comparison.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "core/trace/step_selection.h"
#include "core/trace/table.h"

namespace opcost {

namespace {

// Per layer, one sample per traced step. A layer missing from a step (a branch not taken in
// it) counts 0 there: it ran, but not in that step.
std::map<std::string, LayerFigures> layer_figures(const TraceRun& run, bool gpu_time) {
  struct Samples {
    std::vector<double> time_us, energy_mJ;
    std::size_t calls = 0;
  };
  std::map<std::string, Samples> by_layer;
  const std::size_t steps = run.steps.size();
  for (std::size_t s = 1; s <= steps; ++s) {
    const TraceTable t = layer_table(only_steps(run, {s, s}));
    for (const TraceRow& row : t.rows) {
      Samples& x = by_layer[row.name];
      x.time_us.resize(s - 1, 0.0);  // steps before this one that lacked the layer
      x.time_us.push_back(gpu_time ? row.gpu_total_us : row.cpu_total_us);
      if (t.energy) {
        x.energy_mJ.resize(s - 1, 0.0);
        x.energy_mJ.push_back(row.energy_total_mJ);
      }
      x.calls = std::max(x.calls, row.calls);
    }
  }
  std::map<std::string, LayerFigures> out;
  for (auto& [name, x] : by_layer) {
    x.time_us.resize(steps, 0.0);
    LayerFigures f;
    f.time_us = summarize(x.time_us);
    if (!x.energy_mJ.empty()) {
      x.energy_mJ.resize(steps, 0.0);
      f.energy_mJ = summarize(x.energy_mJ);
    }
    f.calls_per_step = x.calls;
    out.emplace(name, std::move(f));
  }
  return out;
}

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

LayerComparison compare_layers(const std::vector<std::string>& names, const std::vector<TraceRun>& runs,
                               std::size_t baseline, bool gpu_time) {
  if (names.size() != runs.size())
    throw std::invalid_argument(fmt::format("compare_layers: {} names for {} traces", names.size(), runs.size()));
  if (baseline >= names.size())
    throw std::invalid_argument(fmt::format("compare_layers: baseline {} of {} variants", baseline, names.size()));
  LayerComparison c;
  c.time_kind = gpu_time ? "gpu" : "cpu";
  c.variants = names;
  c.baseline = baseline;
  std::vector<std::map<std::string, LayerFigures>> figures;
  for (const TraceRun& run : runs) figures.push_back(layer_figures(run, gpu_time));

  // The baseline's layers costliest first, then the others' own layers in name order.
  std::vector<std::string> order;
  for (const auto& [name, f] : figures[baseline]) order.push_back(name);
  std::stable_sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) {
    return figures[baseline].at(a).time_us.mean > figures[baseline].at(b).time_us.mean;
  });
  std::map<std::string, bool> elsewhere;
  for (std::size_t v = 0; v < figures.size(); ++v)
    for (const auto& [name, f] : figures[v])
      if (!figures[baseline].count(name)) elsewhere[name] = true;
  for (const auto& [name, yes] : elsewhere) order.push_back(name);

  for (const std::string& layer : order) {
    LayerComparisonRow row;
    row.layer = layer;
    std::vector<std::string> lacking, having;
    for (std::size_t v = 0; v < figures.size(); ++v) {
      auto it = figures[v].find(layer);
      row.figures.push_back(it == figures[v].end() ? std::nullopt : std::optional<LayerFigures>(it->second));
      (row.figures.back() ? having : lacking).push_back(names[v]);
    }
    const auto& base = row.figures[baseline];
    for (std::size_t v = 0; v < figures.size(); ++v) {
      const auto& f = row.figures[v];
      const bool both = v != baseline && f && base;
      row.time_vs_baseline.push_back(both && base->time_us.mean > 0
                                         ? std::optional<Difference>(welch_difference(f->time_us, base->time_us))
                                         : std::nullopt);
      row.energy_vs_baseline.push_back(
          both && f->energy_mJ && base->energy_mJ && base->energy_mJ->mean > 0
              ? std::optional<Difference>(welch_difference(*f->energy_mJ, *base->energy_mJ))
              : std::nullopt);
    }
    if (!lacking.empty())
      row.presence =
          base ? fmt::format("fused away or not called in {}", join(lacking)) : fmt::format("only in {}", join(having));
    c.rows.push_back(std::move(row));
  }
  return c;
}

nlohmann::json to_json(const LayerComparison& c) {
  auto summary = [](const Summary& s) {
    return nlohmann::json{
        {"mean", s.mean}, {"ci95", s.n >= 2 ? nlohmann::json(s.ci95_half_width()) : nullptr}, {"samples", s.n}};
  };
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : c.rows) {
    nlohmann::json by_variant = nlohmann::json::object();
    for (std::size_t v = 0; v < c.variants.size(); ++v) {
      if (!r.figures[v]) {
        by_variant[c.variants[v]] = nullptr;
        continue;
      }
      nlohmann::json f = {{"time_us", summary(r.figures[v]->time_us)},
                          {"calls_per_step", r.figures[v]->calls_per_step}};
      f["energy_mJ"] = r.figures[v]->energy_mJ ? summary(*r.figures[v]->energy_mJ) : nlohmann::json(nullptr);
      f["time_vs_baseline"] = r.time_vs_baseline[v] ? to_json(*r.time_vs_baseline[v]) : nlohmann::json(nullptr);
      f["energy_vs_baseline"] = r.energy_vs_baseline[v] ? to_json(*r.energy_vs_baseline[v]) : nlohmann::json(nullptr);
      by_variant[c.variants[v]] = std::move(f);
    }
    rows.push_back({{"layer", r.layer}, {"presence", r.presence}, {"variants", std::move(by_variant)}});
  }
  return {{"time_kind", c.time_kind},
          {"variants", c.variants},
          {"baseline", c.variants[c.baseline]},
          {"rows", std::move(rows)}};
}

}  // namespace opcost
