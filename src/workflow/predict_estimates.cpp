#include "workflow/predict_estimates.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "core/estimate/call_work.h"
#include "core/predict/extent_match.h"
#include "core/spec/spec_file.h"
#include "core/store/cost_model_store.h"
#include "core/store/database.h"
#include "workflow/predict.h"
#include "workflow/predict_stages_database.h"

namespace opcost {

namespace {

// A row's time (µs) or energy (mJ) at or above this is no anchor: 10^12 µs is 11 days a call.
constexpr double kMaxAnchorFigure = 1e12;

// The row at the size nearest the call's, with the model's estimate of it: what an estimate
// scales from. Nearest in ratio; of rows as near, an unflagged one, then the larger size (its
// kernels as busy or busier), then the newest (rows come newest first). None where no row has a
// time and device work, or the model can estimate none.
struct Anchor {
  StoredCosts::NearRow row;
  CostEstimate row_estimate;
  ExtentPair extents;
  bool flagged = false;
};

// Whether `a` is a nearer anchor than `b`, or as near and preferred: exact, in whole numbers
// (the ratios max/min compared by cross-multiplying; extents are int64, so their products fit
// 128 bits).
bool preferred(const ExtentPair& a, bool a_flagged, const ExtentPair& b, bool b_flagged) {
  using Wide = __int128;
  const auto hi = [](const ExtentPair& p) { return Wide(std::max(p.call, p.row)); };
  const auto lo = [](const ExtentPair& p) { return Wide(std::min(p.call, p.row)); };
  const Wide left = hi(a) * lo(b), right = hi(b) * lo(a);  // a's ratio against b's
  if (left != right) return left < right;
  if (a_flagged != b_flagged) return !a_flagged;
  return a.row > b.row;
}

std::optional<Anchor> nearest_anchor(std::vector<StoredCosts::NearRow> rows, const OpCall& call,
                                     const std::string& cache_mode, const CostModel& model, const std::string& gpu) {
  std::optional<Anchor> best;
  for (auto& row : rows) {
    const Measurement& m = row.measurement;
    // A figure past any real one (a hostile row's 1e308) would scale to infinity.
    const bool energy_sane = !m.energy.available || (std::isfinite(m.energy.per_call_mJ.median) &&
                                                     m.energy.per_call_mJ.median < kMaxAnchorFigure);
    if (!m.device_work.empty() || !(m.time.per_call_us.median > 0) || !(m.time.per_call_us.median < kMaxAnchorFigure) ||
        !energy_sane || !(m.time.host_us_per_call < kMaxAnchorFigure))
      continue;
    try {
      OpCall row_call = parse_call_line(fmt::format("{} {}", call.display_name(), row.stored_args), "database");
      const auto pair = extent_pair(call.args, row_call.args);
      if (!pair || pair->call <= 0 || pair->row <= 0) continue;
      const bool flagged = !m.flags.empty();
      if (best && !preferred(*pair, flagged, best->extents, best->flagged)) continue;
      CostEstimate row_estimate = model.estimate(row_call, cache_mode, gpu);
      if (!(row_estimate.base_us > 0) || !(row_estimate.time_us > 0)) continue;
      best = Anchor{std::move(row), std::move(row_estimate), *pair, flagged};
    } catch (const std::exception&) {  // a row that does not read back, or the model cannot estimate
    }
  }
  return best;
}

// `value` and its interval times `factor`: the interval keeps its relative width, unless the
// fit measured the width of estimates scaled this way at this distance (`log_halfwidth`).
void scale(double& value, double& low, double& high, double factor, std::optional<double> log_halfwidth = {}) {
  value *= factor;
  low *= factor;
  high *= factor;
  if (log_halfwidth) {
    low = value * std::exp(-*log_halfwidth);
    high = value * std::exp(*log_halfwidth);
  }
}

// The estimate scaled to the anchor: the time the row measured times the ratio of the two
// calls' base times (their roofline times with the launch floor), the energy likewise with their
// base energies, the host time by the model's ratio of the two. Not the trees' ratio for time
// and energy: beyond the sizes of the fit's rows the trees are flat, and their ratio of
// resnet50's batch-128 to batch-64 stem convolution came out at 0.85. Over the operators of three
// H100 cases scaled from batch 64 (bench/results/2026-11-26-fit), their device time summed to
// +0.1, -2.2 and +3.7% of the traced kernels' by the roofline's ratio, to -6.7, -5.0 and +1.9%
// by the trees'. Time's and energy's intervals are the fit's for estimates scaled from another
// size (TargetModel::scaled: each configuration of its rows estimated from its nearest other
// size), at this estimate's distance, where it has them; else, and for host time, the model's
// relative width.
EstimateAnchor scale_to_anchor(CostEstimate& est, const Anchor& a) {
  const Measurement& row = a.row.measurement;
  const CostEstimate& re = a.row_estimate;
  // The row's interval is its mean's; it is drawn about the median the estimate scales (on a
  // loaded host the two part by more than the half-width, and the median fell outside it).
  const Summary& row_time = row.time.per_call_us;
  EstimateAnchor out{a.row.stored_args,
                     a.extents,
                     row_time.median,
                     row_time.median - row_time.ci95_half_width(),
                     row_time.median + row_time.ci95_half_width(),
                     est.base_us / re.base_us};
  // The scaled estimates' intervals widen with the distance to the row (TargetModel::scaled).
  const double distance = scaled_estimate_distance(a.extents.call, a.extents.row);
  const auto at_distance = [&](std::optional<double> per_distance) -> std::optional<double> {
    if (!per_distance) return std::nullopt;
    return std::min(*per_distance * distance, kMaxLogValue);
  };
  scale(est.time_us, est.time_low_us, est.time_high_us, out.row_time_us * out.time_ratio / est.time_us,
        at_distance(est.scaled_time_halfwidth_per_distance));
  out.time_interval_fitted = est.scaled_time_halfwidth_per_distance.has_value();
  const double row_energy = row.energy.per_call_mJ.median;
  const bool energy_scaled = est.energy_mJ && est.base_energy_mJ && re.base_energy_mJ && *re.base_energy_mJ > 0 &&
                             *est.energy_mJ > 0 && row.energy.available && row_energy > 0;
  out.energy_interval_fitted = energy_scaled && est.scaled_energy_halfwidth_per_distance.has_value();
  if (energy_scaled)
    scale(*est.energy_mJ, *est.energy_low_mJ, *est.energy_high_mJ,
          row_energy * *est.base_energy_mJ / (*re.base_energy_mJ * *est.energy_mJ),
          at_distance(est.scaled_energy_halfwidth_per_distance));
  if (est.host_us && re.host_us && *re.host_us > 0 && row.time.host_us_per_call > 0)
    scale(*est.host_us, *est.host_low_us, *est.host_high_us, row.time.host_us_per_call / *re.host_us);
  // Where the energy was scaled, the draw follows from it: energy over the loop's wall time per
  // call (mJ/µs = 1000 W). Else the energy and the draw stay the model's, together.
  if (energy_scaled && est.power_W && *est.power_W > 0) {
    const double wall_us = std::max(est.time_us, est.host_us.value_or(0));
    const double power_W = 1000 * *est.energy_mJ / wall_us;
    if (est.power_low_W) *est.power_low_W *= power_W / *est.power_W;
    if (est.power_high_W) *est.power_high_W *= power_W / *est.power_W;
    est.power_W = power_W;
  }
  return out;
}

}  // namespace

std::optional<EstimateAnchor> scale_to_nearest_row(CostEstimate& est, const OpCall& call,
                                                   std::vector<StoredCosts::NearRow> rows, const CostModel& model,
                                                   const std::string& gpu, const std::string& cache_mode) {
  const auto anchor = nearest_anchor(std::move(rows), call, cache_mode, model, gpu);
  if (!anchor) return std::nullopt;
  return scale_to_anchor(est, *anchor);
}

CallEstimate estimate_call(const CostModel& model, const OpCall& call, const std::string& cache_mode,
                           const std::string& gpu, const Database* db) {
  CallEstimate out{model.estimate(call, cache_mode, gpu), std::nullopt};
  if (!db) return out;
  const std::string args = format_args(call.args);
  InventoryEntry entry;
  entry.op = call.op;
  entry.overload = call.overload;
  entry.args = args;
  try {
    DatabaseCosts rows(db, gpu);
    out.anchor = scale_to_nearest_row(
        out.estimate, call, rows.at_other_sizes(entry, {call.op, call.overload, args, call.autocast, cache_mode}),
        model, gpu, cache_mode);
  } catch (const std::exception& e) {  // the model's figure stands; the note says why it was not scaled
    out.estimate.notes.push_back(
        fmt::format("not scaled from the database's rows at other sizes: they could not be read ({})", e.what()));
  }
  return out;
}

CallEstimate estimate_call(const CostModel& model, const OpCall& call, const std::string& cache_mode,
                           const std::string& gpu, const std::string& db_location) {
  std::optional<Database> db;
  std::string why;
  try {
    if (!db_location.empty() && Database::exists(db_location)) db.emplace(db_location, Database::Access::kReadOnly);
  } catch (const std::exception& e) {
    why = e.what();
  }
  CallEstimate out = estimate_call(model, call, cache_mode, gpu, db ? &*db : nullptr);
  if (!why.empty())
    out.estimate.notes.push_back(fmt::format("not scaled from {}'s rows at other sizes: it could not be opened ({})",
                                             display_location(db_location), why));
  return out;
}

const char* anchor_interval_words(bool fitted) {
  return fitted ? "fitted to estimates scaled from other sizes" : "the cost model's relative width";
}

nlohmann::json call_estimate_document(const OpCall& call, const std::string& gpu, const CallEstimate& e) {
  nlohmann::json j = estimate_document(call, gpu, e.estimate);
  j["anchor"] = e.anchor ? nlohmann::json{{"row_args", e.anchor->row_args},
                                          {"row_extent", e.anchor->extents.row},
                                          {"call_extent", e.anchor->extents.call},
                                          {"row_time_us",
                                           {{"estimate", e.anchor->row_time_us},
                                            {"low", e.anchor->row_time_low_us},
                                            {"high", e.anchor->row_time_high_us}}},
                                          {"time_ratio", e.anchor->time_ratio},
                                          {"interval",
                                           {{"time", e.anchor->time_interval_fitted ? "fitted" : "relative"},
                                            {"energy", e.anchor->energy_interval_fitted ? "fitted" : "relative"}}}}
                         : nlohmann::json(nullptr);
  return j;
}

std::optional<StoredCosts::Estimate> EstimatingCosts::estimated(const InventoryEntry& e, const StoredCallKey& key) {
  CostEstimate est;
  OpCall call;
  try {
    call = parse_call_line(e.signature(), "inventory");
    est = model_.estimate(call, key.cache_mode, gpu_);
  } catch (const std::exception&) {  // no estimate: the call stays missing, and is listed so
    return std::nullopt;
  }
  Estimate out;
  Measurement& m = out.measurement;
  m.op = e.op;
  m.overload = e.overload;
  m.args = e.args;
  m.cache_mode = key.cache_mode;
  m.autocast = key.autocast;
  m.env.device_name = gpu_;
  m.method = fmt::format("estimated by the cost model {} (docs/estimate.md), not measured", model_.data_hash());
  // A view moves nothing and launches no kernel: its cost is the host's alone, as a measured
  // view's row says it (GPU time 0; energy 0 above the gap power the timeline charges).
  const auto work = call_work(call);
  if (work && work->flops == 0 && work->bytes == 0) {
    m.time.host_us_per_call = m.time.host_cpu_us_per_call = est.host_us.value_or(0);
    m.device_work = "none-view";
    m.time.per_call_us.n = 1;
    m.time.host_us.mean = m.time.host_us.median = m.time.host_us_per_call;
    if (est.energy_mJ) {
      m.energy.available = true;
      m.energy.source = "no-device-work";
    } else {
      m.energy.unavailable_reason = est.energy_unavailable;
    }
    return out;
  }
  if (auto anchor = scale_to_nearest_row(est, call, stored_.at_other_sizes(e, key), model_, gpu_, key.cache_mode)) {
    out.anchor_args = anchor->row_args;
    m.method = fmt::format(
        "estimated by the cost model {} as the row measured at {} where the call has {} ({}) times the ratio of "
        "the two calls' roofline times (docs/estimate.md), not measured",
        model_.data_hash(), anchor->extents.row, anchor->extents.call, anchor->row_args);
  }
  m.time.host_us_per_call = m.time.host_cpu_us_per_call = est.host_us.value_or(0);
  Summary& t = m.time.per_call_us;
  t.n = 1;
  t.mean = t.median = t.clipped_mean = t.min = t.max = est.time_us;
  t.ci95_low = est.time_low_us;
  t.ci95_high = est.time_high_us;
  if (est.energy_mJ) {
    m.energy.available = true;
    m.energy.source = "cost model";
    Summary& j = m.energy.per_call_mJ;
    j.n = 1;
    j.mean = j.median = j.clipped_mean = j.min = j.max = *est.energy_mJ;
    j.ci95_low = *est.energy_low_mJ;
    j.ci95_high = *est.energy_high_mJ;
    m.energy.power_W = est.power_W.value_or(0);
    // The energy was fitted as rows measure it: over the loop's wall time per call, which a
    // host-bound call's host time sets (the prediction takes the gap power of that wall out).
    m.energy.wall_us_per_call = std::max(est.time_us, est.host_us.value_or(0));
  } else {
    m.energy.unavailable_reason = est.energy_unavailable;
  }
  if (!est.out_of_range.empty()) m.flags.push_back("estimated outside the fit's data");
  return out;
}

CostModel cost_model_for(const PredictOptions& o, Database* db, const std::string& gpu) {
  std::optional<LoadedCostModel> loaded;
  try {
    loaded.emplace(load_cost_model(o.cost_model, db, o.db, "--cost-model"));
  } catch (const std::invalid_argument& e) {
    if (!o.cost_model.empty()) throw;  // the file's own error names it
    throw std::invalid_argument(fmt::format("--estimate: {}", e.what()));
  }
  auto& [model, source] = *loaded;
  if (!model.gpus().count(gpu))
    throw std::invalid_argument(fmt::format(
        "--estimate: the cost model of {} knows the rates of {} only, not of {}; sweep the calibration grids here "
        "(bench/grids/fit/calibrate-*.yaml) and refit",
        source, fmt::join(model.gpu_names(), ", "), gpu));
  return std::move(model);
}

}  // namespace opcost
