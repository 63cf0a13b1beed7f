#include "workflow/predict_estimates.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/estimate/call_work.h"
#include "core/spec/spec_file.h"
#include "core/store/cost_model_store.h"
#include "core/store/database.h"
#include "workflow/predict.h"

namespace opcost {

std::optional<Measurement> EstimatingCosts::estimated(const InventoryEntry& e, const StoredCallKey& key) {
  CostEstimate est;
  OpCall call;
  try {
    call = parse_call_line(e.signature(), "inventory");
    est = model_.estimate(call, key.cache_mode, gpu_);
  } catch (const std::exception&) {  // no estimate: the call stays missing, and is listed so
    return std::nullopt;
  }
  Measurement m;
  m.op = e.op;
  m.overload = e.overload;
  m.args = e.args;
  m.cache_mode = key.cache_mode;
  m.autocast = key.autocast;
  m.env.device_name = gpu_;
  m.method = fmt::format("estimated by the cost model {} (docs/estimate.md), not measured", model_.data_hash());
  m.time.host_us_per_call = m.time.host_cpu_us_per_call = est.host_us.value_or(0);
  // A view moves nothing and launches no kernel: its cost is the host's alone, as a measured
  // view's row says it (GPU time 0; energy 0 above the gap power the timeline charges).
  const auto work = call_work(call);
  if (work && work->flops == 0 && work->bytes == 0) {
    m.device_work = "none-view";
    m.time.per_call_us.n = 1;
    m.time.host_us.mean = m.time.host_us.median = m.time.host_us_per_call;
    if (est.energy_mJ) {
      m.energy.available = true;
      m.energy.source = "no-device-work";
    } else {
      m.energy.unavailable_reason = est.energy_unavailable;
    }
    return m;
  }
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
  return m;
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
