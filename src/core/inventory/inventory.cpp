#include "core/inventory/inventory.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "core/stats/summary.h"
#include "core/text/text.h"

namespace opcost {

std::size_t Inventory::layer_count() const {
  std::set<std::string> layers;
  for (const auto& c : sequence) layers.insert(c.layer);
  return layers.size();
}

std::string InventoryEntry::cache_mode() const {
  return cold_args.empty() ? "warm" : fmt::format("cold:{}", fmt::join(cold_args, ","));
}

std::string InventoryEntry::row_name() const {
  return cold_args.empty() ? signature() : fmt::format("{} (from memory: {})", signature(), fmt::join(cold_args, ", "));
}

void InventoryBuilder::add(const std::string& op, const std::string& overload, const std::string& args,
                           const std::string& layer, const std::vector<std::string>& nested, const std::string& phase,
                           const std::vector<std::string>& cold_args, bool returns_views) {
  const std::string key =
      fmt::format("{} {} {} {}", phase, overload.empty() ? op : op + "." + overload, args, fmt::join(cold_args, ","));
  auto [it, fresh] = index_.try_emplace(key, inv_.entries.size());
  if (fresh) inv_.entries.push_back({op, overload, args, phase, 0, {}, {}, cold_args, returns_views});
  InventoryEntry& e = inv_.entries[it->second];
  ++e.count;
  if (std::find(e.layers.begin(), e.layers.end(), layer) == e.layers.end()) e.layers.push_back(layer);
  for (const auto& n : nested) ++e.nested[n];
  inv_.sequence.push_back({it->second, layer});
}

void InventoryBuilder::time_last(double host_us, double host_gap_us) {
  if (inv_.sequence.empty()) return;
  inv_.sequence.back().host_us = host_us;
  inv_.sequence.back().host_gap_us = host_gap_us;
}

bool same_calls(const Inventory& a, const Inventory& b) {
  if (a.sequence.size() != b.sequence.size()) return false;
  for (std::size_t i = 0; i < a.sequence.size(); ++i)
    if (a.entries[a.sequence[i].entry].display_name() != b.entries[b.sequence[i].entry].display_name()) return false;
  return true;
}

namespace {
// The step's host time as its observer saw it: every call, every gap before one, and the
// time after the last.
double observed_host_us(const Inventory& r) {
  double sum = r.host_after_last_call_us;
  for (const auto& c : r.sequence) sum += c.host_us + c.host_gap_us;
  return sum;
}
}  // namespace

std::size_t take_median_host_times(Inventory& inv, const std::vector<Inventory>& runs, bool timing_runs_only) {
  std::vector<const Inventory*> used;
  for (const auto& r : runs)
    if (same_calls(inv, r)) used.push_back(&r);
  if (used.empty() || !timing_runs_only) used.push_back(&inv);
  std::vector<double> host, gap, after, step, total;
  for (const Inventory* r : used) {
    after.push_back(r->host_after_last_call_us);
    step.push_back(r->host_step_us);
    total.push_back(observed_host_us(*r));
  }
  inv.host_after_last_call_us = median_of(after);
  inv.host_step_us = median_of(step);
  for (std::size_t i = 0; i < inv.sequence.size(); ++i) {
    host.clear();
    gap.clear();
    for (const Inventory* r : used) {
      host.push_back(r->sequence[i].host_us);
      gap.push_back(r->sequence[i].host_gap_us);
    }
    inv.sequence[i].host_us = median_of(host);
    inv.sequence[i].host_gap_us = median_of(gap);
  }
  // Each call's median is its typical time, but their sum is not a typical step's: a call's
  // slow samples (right-skewed) seldom fall in the same step, so the sum of the medians falls
  // short of the median step (by 2-5% over the H100 grid, bench/results/2026-11-22-h100-grid).
  // The medians keep their shares and are scaled to the median step.
  const double sum_of_medians = observed_host_us(inv);
  if (sum_of_medians > 0) {
    const double scale = median_of(total) / sum_of_medians;
    for (auto& c : inv.sequence) {
      c.host_us *= scale;
      c.host_gap_us *= scale;
    }
    inv.host_after_last_call_us *= scale;
  }
  return used.size();
}

nlohmann::json to_json(const Inventory& inv) {
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& e : inv.entries)
    ops.push_back({{"op", e.op},
                   {"overload", e.overload},
                   {"args", e.args},
                   {"signature", e.signature()},
                   {"phase", e.phase},
                   {"count", e.count},
                   {"layers", e.layers},
                   {"nested", e.nested},
                   {"cold_args", e.cold_args}});
  nlohmann::json seq = nlohmann::json::array();
  for (const auto& c : inv.sequence)
    seq.push_back({c.entry, c.layer, std::round(c.host_us * 100) / 100, std::round(c.host_gap_us * 100) / 100});
  return {{"model", inv.model},
          {"input", inv.input},
          {"device", inv.device},
          {"dtype", inv.dtype},
          {"mode", inv.mode},
          {"autocast", inv.autocast.empty() ? nlohmann::json() : nlohmann::json(inv.autocast)},
          {"parameters", inv.parameters},
          {"cache_bytes", inv.cache_bytes},
          {"totals",
           {{"calls", inv.sequence.size()}, {"unique_signatures", inv.entries.size()}, {"layers", inv.layer_count()}}},
          {"ops", ops},
          {"sequence_columns", {"entry", "layer", "host_us", "host_gap_us"}},
          {"host_step_us", std::round(inv.host_step_us * 100) / 100},
          {"host_after_last_call_us", std::round(inv.host_after_last_call_us * 100) / 100},
          {"host_calibration",
           {{"plain_step_us", inv.host_calibration.plain_step_us},
            {"observed_step_us", inv.host_calibration.observed_step_us},
            {"rounds", inv.host_calibration.rounds},
            {"scale", inv.host_calibration.scale()}}},
          {"sequence", seq}};
}

std::string to_table(const Inventory& inv) {
  std::string out = fmt::format("{} input={} on {} ({}{}, {})\n", inv.model, inv.input, inv.device, inv.dtype,
                                inv.autocast.empty() ? "" : ", autocast " + inv.autocast, inv.mode);
  if (inv.cache_bytes > 0) {
    const auto cold =
        std::count_if(inv.entries.begin(), inv.entries.end(), [](const auto& e) { return !e.cold_args.empty(); });
    out += fmt::format("inputs classed against a {} cache: {} of {} signatures read some from memory\n",
                       format_bytes(double(inv.cache_bytes)), cold, inv.entries.size());
  }
  out += fmt::format("{:>4} {:>6}  {:<32} {}\n", "#", "calls", "operator", "arguments / layers / nested");
  for (std::size_t i = 0; i < inv.entries.size(); ++i) {
    const auto& e = inv.entries[i];
    out += fmt::format("{:>4} {:>6}  {:<32} {}\n", i + 1, e.count,
                       e.phase == "forward" ? e.display_name() : e.display_name() + " (bwd)", e.args);
    std::string layers;
    for (std::size_t k = 0; k < e.layers.size() && k < 4; ++k)
      layers += (k ? ", " : "") + (e.layers[k].empty() ? "(top)" : e.layers[k]);
    if (e.layers.size() > 4) layers += fmt::format(", +{} more", e.layers.size() - 4);
    out += fmt::format("{:>44}layers: {}\n", "", layers);
    if (!e.cold_args.empty()) out += fmt::format("{:>44}from memory, not L2: {}\n", "", fmt::join(e.cold_args, ", "));
    if (!e.nested.empty()) {
      std::string nested;
      for (const auto& [name, n] : e.nested)
        nested += fmt::format("{}{} ×{:g}", nested.empty() ? "" : ", ", name, double(n) / double(e.count));
      out += fmt::format("{:>44}nested per call: {}\n", "", nested);
    }
  }
  out += fmt::format("totals: {} operator calls, {} unique signatures, {} layers\n", inv.sequence.size(),
                     inv.entries.size(), inv.layer_count());
  return out;
}

}  // namespace opcost
