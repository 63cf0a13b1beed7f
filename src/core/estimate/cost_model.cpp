#include "core/estimate/cost_model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace opcost {

namespace {

using json = nlohmann::json;

[[noreturn]] void bad(const std::string& where, const std::string& why) {
  throw std::invalid_argument(fmt::format("cost model, {}: {}", where, why));
}

const json& member(const json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) bad(where, fmt::format("'{}' is missing", key));
  return j[key];
}

double finite(const json& j, const std::string& where) {
  if (!j.is_number() || !std::isfinite(j.get<double>())) bad(where, "expected a finite number");
  return j.get<double>();
}

template <typename T>
std::vector<T> numbers(const json& j, const std::string& where) {
  if (!j.is_array()) bad(where, "expected an array");
  std::vector<T> out;
  out.reserve(j.size());
  for (std::size_t k = 0; k < j.size(); ++k) {
    const double v = finite(j[k], fmt::format("{}[{}]", where, k));
    if constexpr (std::is_integral_v<T>) {
      if (v != std::floor(v) || std::abs(v) > 1e9) bad(fmt::format("{}[{}]", where, k), "expected an integer");
    }
    out.push_back(T(v));
  }
  return out;
}

std::size_t count(const json& j, const std::string& where) {
  const int64_t n = numbers<int64_t>(json::array({j}), where)[0];
  if (n < 0) bad(where, "must not be negative");
  return std::size_t(n);
}

// A tree read back is walked without bounds checks, so everything a walk relies on is checked
// here: the arrays agree in length, a split's children come after it (so every walk ends), and
// each feature index is one the model has.
RegressionTree tree_from_json(const json& j, std::size_t n_features, const std::string& where) {
  RegressionTree t;
  t.feature = numbers<int>(member(j, "feature", where), where + ".feature");
  t.left = numbers<int>(member(j, "left", where), where + ".left");
  t.right = numbers<int>(member(j, "right", where), where + ".right");
  t.threshold = numbers<double>(member(j, "threshold", where), where + ".threshold");
  t.value = numbers<double>(member(j, "value", where), where + ".value");
  for (double v : t.value)
    if (std::abs(v) > kMaxLogValue) bad(where + ".value", fmt::format("{} is beyond ±{} (log space)", v, kMaxLogValue));
  const std::size_t n = t.feature.size();
  if (n == 0 || t.left.size() != n || t.right.size() != n || t.threshold.size() != n || t.value.size() != n)
    bad(where, "its arrays (feature, left, right, threshold, value) must be non-empty and of one length");
  for (std::size_t k = 0; k < n; ++k) {
    const bool leaf = t.left[k] == -1;
    if (leaf != (t.right[k] == -1)) bad(fmt::format("{} node {}", where, k), "one child only");
    if (leaf) continue;
    if (t.feature[k] < 0 || std::size_t(t.feature[k]) >= n_features)
      bad(fmt::format("{} node {}", where, k),
          fmt::format("feature {} is not one of the {}", t.feature[k], n_features));
    for (int child : {t.left[k], t.right[k]})
      if (child <= int(k) || std::size_t(child) >= n)
        bad(fmt::format("{} node {}", where, k), fmt::format("child {} is not a later node of the {}", child, n));
  }
  return t;
}

// A half-width in log space at `key` and the held-out errors beside it.
template <typename Fit>
Fit held_out_from_json(const json& j, const char* key, double Fit::*halfwidth, const std::string& where) {
  if (!j.is_object()) bad(where, "expected an object");
  Fit h;
  h.*halfwidth = finite(member(j, key, where), fmt::format("{}.{}", where, key));
  if (h.*halfwidth < 0 || h.*halfwidth > kMaxLogValue)
    bad(fmt::format("{}.{}", where, key), fmt::format("must lie between 0 and {}", kMaxLogValue));
  const json& held = member(j, "held_out", where);
  h.median_abs_error = finite(member(held, "median_abs_error", where), where + ".held_out.median_abs_error");
  h.p90_abs_error = finite(member(held, "p90_abs_error", where), where + ".held_out.p90_abs_error");
  h.n_test = count(member(held, "n_test", where), where + ".held_out.n_test");
  return h;
}

ScaledFit scaled_from_json(const json& j, const std::string& where) {
  return held_out_from_json(j, "log_halfwidth_per_distance", &ScaledFit::log_halfwidth_per_distance, where);
}

TargetModel target_from_json(const json& j, std::size_t n_features, const std::string& where) {
  TargetModel t;
  t.trees.init = finite(member(j, "init", where), where + ".init");
  if (std::abs(t.trees.init) > kMaxLogValue) bad(where + ".init", fmt::format("beyond ±{} (log space)", kMaxLogValue));
  t.trees.learning_rate = finite(member(j, "learning_rate", where), where + ".learning_rate");
  const json& trees = member(j, "trees", where);
  if (!trees.is_array() || trees.empty()) bad(where + ".trees", "expected a non-empty array");
  for (std::size_t k = 0; k < trees.size(); ++k)
    t.trees.trees.push_back(tree_from_json(trees[k], n_features, fmt::format("{}.trees[{}]", where, k)));
  static_cast<HeldOutFit&>(t) =
      held_out_from_json(j, "interval_log_halfwidth", &HeldOutFit::interval_log_halfwidth, where);
  if (const auto scaled = j.find("scaled"); scaled != j.end()) t.scaled = scaled_from_json(*scaled, where + ".scaled");
  return t;
}

}  // namespace

double RegressionTree::evaluate(const std::vector<double>& x) const {
  std::size_t k = 0;
  // scikit-learn compares the features as float32 against float64 thresholds: so do we, or a
  // value on a threshold would go the other way.
  while (left[k] != -1) k = double(float(x[feature[k]])) <= threshold[k] ? left[k] : right[k];
  return value[k];
}

double BoostedTrees::evaluate(const std::vector<double>& x) const {
  double sum = 0;
  for (const auto& t : trees) sum += t.evaluate(x);
  return init + learning_rate * sum;
}

CostModel CostModel::from_json(const json& j) {
  if (!j.is_object() || j.value("format", json()) != kCostModelFormat)
    bad("format", fmt::format("not an opcost cost model (its \"format\" must be \"{}\")", kCostModelFormat));
  if (j.value("version", json()) != 1) bad("version", "this opcost reads version 1; refit with this opcost");
  const auto& names = cost_feature_names();
  if (j.value("features_version", json()) != kCostFeaturesVersion || j.value("features", json()) != json(names))
    bad("features", fmt::format("fitted on other features than this opcost computes (version {}); refit it "
                                "(python -m opcost fit)",
                                kCostFeaturesVersion));
  CostModel m;
  const json& hash = member(j, "data_hash", "data_hash");
  if (!hash.is_string()) bad("data_hash", "expected text");
  m.data_hash_ = hash.get<std::string>().substr(0, 200);
  m.coverage_ = finite(member(j, "coverage", "coverage"), "coverage");
  if (!(m.coverage_ > 0 && m.coverage_ < 1)) bad("coverage", "must lie between 0 and 1");
  if (finite(member(j, "time_floor_us", "time_floor_us"), "time_floor_us") != kTimeFloorUs)
    bad("time_floor_us",
        fmt::format("fitted with another time floor than this opcost's {} µs; refit it", kTimeFloorUs));
  const json& gpus = member(j, "gpus", "gpus");
  if (!gpus.is_object() || gpus.empty()) bad("gpus", "expected an object of GPU name → rates");
  for (const auto& [name, p] : gpus.items()) m.gpus_[name] = gpu_profile_from_json(name, p);
  const json& families = member(j, "families", "families");
  if (!families.is_object()) bad("families", "expected an object");
  for (const auto& [family, fj] : families.items()) {
    const std::string where = fmt::format("families.{}", family.substr(0, 60));
    FamilyModel f;
    const json& ops = member(fj, "ops", where);
    if (!ops.is_array()) bad(where + ".ops", "expected an array of operator names");
    for (const auto& op : ops) {
      if (!op.is_string()) bad(where + ".ops", "expected operator names");
      f.ops.push_back(op.get<std::string>());
    }
    const json& ranges = member(fj, "ranges", where);
    if (!ranges.is_array() || ranges.size() != names.size())
      bad(where + ".ranges", fmt::format("expected {} [min, max] pairs", names.size()));
    for (std::size_t k = 0; k < ranges.size(); ++k) {
      const auto pair = numbers<double>(ranges[k], fmt::format("{}.ranges[{}]", where, k));
      if (pair.size() != 2 || pair[0] > pair[1]) bad(fmt::format("{}.ranges[{}]", where, k), "expected [min, max]");
      f.ranges.emplace_back(pair[0], pair[1]);
    }
    f.n_train = count(member(fj, "n_train", where), where + ".n_train");
    if (const auto gpus_of = fj.find("gpus"); gpus_of != fj.end()) {
      if (!gpus_of->is_object()) bad(where + ".gpus", "expected an object of GPU name → rows");
      for (const auto& [name, rows] : gpus_of->items()) {
        if (!m.gpus_.contains(name))
          bad(where + ".gpus", fmt::format("{} has no rates in \"gpus\"", name.substr(0, 200)));
        const std::string place = fmt::format("{}.gpus.\"{}\"", where, name.substr(0, 200));
        f.rows_by_gpu[name] = count(rows, place);
        if (f.rows_by_gpu[name] == 0) bad(place, "expected at least 1 row");
      }
    }
    const json& targets = member(fj, "targets", where);
    for (const char* name : {"time", "power", "energy", "host"}) {
      if (!targets.contains(name)) {
        if (std::string_view(name) == "time") bad(where + ".targets", "'time' is missing");
        continue;
      }
      f.targets[name] = target_from_json(targets[name], names.size(), where + ".targets." + name);
    }
    m.families_[family] = std::move(f);
  }
  return m;
}

std::vector<std::string> CostModel::gpu_names() const {
  std::vector<std::string> names;
  for (const auto& [name, p] : gpus_) names.push_back(name);
  return names;
}

CostModel CostModel::from_text(std::string_view text, const std::string& source) {
  if (text.size() > kCostModelMaxBytes)
    throw std::invalid_argument(fmt::format("{}: {} bytes, more than the {} MiB a cost model may have", source,
                                            text.size(), kCostModelMaxBytes >> 20));
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw std::invalid_argument(fmt::format("{}: not JSON (at byte {})", source, e.byte));
  }
  try {
    return from_json(j);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("{}: {}", source, e.what()));
  }
}

bool alike_compute(const GpuProfile& a, const GpuProfile& b) {
  bool any = false;
  for (const auto& [dtype, tflops] : a.achieved_tflops) {
    const auto other = b.tflops_for(dtype);
    if (!other) continue;
    any = true;
    if (std::max(tflops, *other) > kAlikeComputeRatio * std::min(tflops, *other)) return false;
  }
  return any;
}

std::optional<std::string> CostModel::transfer_source(const FamilyModel& f, const std::string& gpu) const {
  if (f.rows_by_gpu.empty() || f.rows_by_gpu.contains(gpu)) return std::nullopt;
  const auto most = std::max_element(f.rows_by_gpu.begin(), f.rows_by_gpu.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
  return most->first;
}

CostEstimate CostModel::estimate(const OpCall& call, std::string_view cache_mode, const std::string& gpu) const {
  const auto profile = gpus_.find(gpu);
  if (profile == gpus_.end()) {
    std::vector<std::string> known;
    for (const auto& [name, p] : gpus_) known.push_back(name);
    throw std::invalid_argument(
        fmt::format("--gpu {}: the cost model knows the rates of {} only; measure the calibration grid there "
                    "(opcost sweep bench/grids/fit/calibrate.yaml) and refit",
                    gpu.substr(0, 200), fmt::join(known, ", ")));
  }
  const auto features = cost_features(call, cache_mode, profile->second);
  if (!features)
    throw std::invalid_argument(
        fmt::format("{}: no estimate: its work is not counted (an operator call_work does not "
                    "know, or shapes that do not fit together)",
                    call.op));
  const std::string family(family_name(features->family));
  const auto fit = families_.find(family);
  if (fit == families_.end()) {
    // Its families named by a loop: clang with libstdc++ 12 cannot join a std::views::keys
    // (bench/run_fuzz builds this file with clang).
    std::vector<std::string> known;
    for (const auto& [name, model] : families_) known.push_back(name);
    throw std::invalid_argument(fmt::format("{}: no estimate: the cost model has no {} rows (its families: {})",
                                            call.op, family, fmt::join(known, ", ")));
  }
  const FamilyModel& f = fit->second;
  CostEstimate e;
  e.family = family;
  e.coverage = coverage_;
  e.notes = features->notes;
  const auto& names = cost_feature_names();
  // On a GPU the family's rows were not measured on, the trees read the call's features on the
  // GPU they were fitted on (the rows' ranges are that GPU's): the figures' bases (the roofline,
  // the draws) stay this GPU's. On the 2026-11-26 rows, H100 → H200, the energies' median error
  // went 8.7% → 6.8% for convolutions, the other families within ±0.6 points of before.
  const std::optional<std::string> source = transfer_source(f, gpu);
  std::optional<CostFeatures> at_source;
  if (source) {
    at_source = cost_features(call, cache_mode, gpus_.at(*source));
    if (!at_source)
      e.notes.push_back(fmt::format("no features at the rates of {}, whose rows fitted the trees: they read {}'s",
                                    source->substr(0, 200), gpu.substr(0, 200)));
    else
      for (const auto& note : at_source->notes)
        if (std::find(e.notes.begin(), e.notes.end(), note) == e.notes.end()) e.notes.push_back(note);
  }
  const auto& x = at_source ? at_source->values : features->values;
  const std::string at_rates = at_source ? fmt::format(" (at {}'s rates)", source->substr(0, 200)) : "";
  if (std::find(f.ops.begin(), f.ops.end(), call.op) == f.ops.end())
    e.out_of_range.push_back(fmt::format("{} is not among the operators its {} rows had", call.op, family));
  for (std::size_t k = 0; k < names.size(); ++k) {
    if (names[k] == "operator_code") continue;  // said above, by name
    const auto [lo, hi] = f.ranges[k];
    // A hair of slack: a size on the edge of the data is inside it.
    const double slack = 1e-9 * std::max(1.0, std::abs(hi - lo));
    if (x[k] < lo - slack || x[k] > hi + slack)
      e.out_of_range.push_back(
          fmt::format("{} = {:.4g}{} outside the rows' [{:.4g}, {:.4g}]", names[k], x[k], at_rates, lo, hi));
  }
  const TargetModel& time = f.targets.at("time");
  const double base = features->base_us;
  e.base_us = base;
  if (features->base_power_W) e.base_energy_mJ = base * *features->base_power_W * 1e-3;  // µs × W = µJ
  e.time_us = base * std::exp(time.trees.evaluate(x));
  if (at_source) {
    const std::string from = fmt::format(
        "estimated by trees fitted on {}'s rows, at its rates (its roofline {:.3g} µs), for {} (its roofline {:.3g} "
        "µs)",
        source->substr(0, 200), at_source->roofline_us, gpu.substr(0, 200), features->roofline_us);
    if (alike_compute(gpus_.at(*source), gpus_.at(gpu))) {
      // Time, between GPUs of alike compute, is not scaled by the rooflines' ratio: the trees
      // learnt the time beyond the roofline on their own GPU's rates, where a kernel's latency,
      // tails and launch do not move with the memory's bandwidth. So the roofline part of the
      // source's time is replaced by this GPU's and the rest is kept. Scaled, H100 → H200,
      // normalisations read −14.4% and poolings −17.1% (median, signed); −5.0% and −6.9% this
      // way (bench/results/2026-11-27-fit-causal).
      const double source_us = at_source->base_us * std::exp(time.trees.evaluate(x));
      const double beyond_us = source_us - at_source->roofline_us;
      e.time_us = beyond_us >= 0 ? features->roofline_us + beyond_us
                                 // Faster than the source's achieved roofline: all of it moves with the rates.
                                 : source_us * features->roofline_us / at_source->roofline_us;
      e.notes.push_back(from +
                        ": the time beyond the roofline kept, the GPUs' FLOP rates alike; the interval is the fit's "
                        "on its own GPU");
    } else {
      e.notes.push_back(from +
                        ": the time scaled by the rooflines' ratio, the GPUs' FLOP rates unlike; the interval is the "
                        "fit's on its own GPU");
    }
  }
  e.time_low_us = e.time_us * std::exp(-time.interval_log_halfwidth);
  e.time_high_us = e.time_us * std::exp(time.interval_log_halfwidth);
  if (time.scaled) e.scaled_time_halfwidth_per_distance = time.scaled->log_halfwidth_per_distance;
  // Energy is fitted on its own, as time is: relative to the base time × the base power
  // (cost_features.h). Not time × power: the energy a row
  // measured is charged over its loop's wall time, which for a host-bound call is longer than its
  // kernel's.
  const auto energy = f.targets.find("energy");
  const auto power = f.targets.find("power");
  if (energy == f.targets.end()) {
    e.energy_unavailable = fmt::format("the cost model's {} rows had no energy", family);
  } else if (!features->base_power_W) {
    e.energy_unavailable = fmt::format(
        "no energy estimate: the rows of {} gave no draw at the roofline (sweep "
        "bench/grids/fit/calibrate-*.yaml with energy there, and refit)",
        gpu.substr(0, 200));
    e.notes.push_back(e.energy_unavailable);
  }
  if (features->base_power_W) {
    const double watts = *features->base_power_W;
    if (energy != f.targets.end()) {
      e.energy_mJ = base * watts * std::exp(energy->second.trees.evaluate(x)) * 1e-3;  // µs × W = µJ
      const double q = energy->second.interval_log_halfwidth;
      e.energy_low_mJ = *e.energy_mJ * std::exp(-q);
      e.energy_high_mJ = *e.energy_mJ * std::exp(q);
      if (energy->second.scaled)
        e.scaled_energy_halfwidth_per_distance = energy->second.scaled->log_halfwidth_per_distance;
    }
    if (power != f.targets.end()) {  // the board's mean draw in the energy loop
      e.power_W = watts * std::exp(power->second.trees.evaluate(x));
      e.power_low_W = *e.power_W * std::exp(-power->second.interval_log_halfwidth);
      e.power_high_W = *e.power_W * std::exp(power->second.interval_log_halfwidth);
    }
  }
  if (const auto host = f.targets.find("host"); host != f.targets.end()) {
    e.host_us = std::exp(host->second.trees.evaluate(x));
    e.host_low_us = *e.host_us * std::exp(-host->second.interval_log_halfwidth);
    e.host_high_us = *e.host_us * std::exp(host->second.interval_log_halfwidth);
  }
  return e;
}

double scaled_estimate_distance(int64_t call_extent, int64_t row_extent) {
  if (call_extent <= 0 || row_extent <= 0)
    throw std::invalid_argument(
        fmt::format("scaled_estimate_distance: extents {} and {} must be positive", call_extent, row_extent));
  return scaled_distance(std::abs(std::log(double(call_extent) / double(row_extent))));
}

double scaled_distance(double abs_ln_ratio) { return std::log(2.0) + abs_ln_ratio; }

json estimate_document(const OpCall& call, const std::string& gpu, const CostEstimate& e) {
  auto interval = [](double v, double lo, double hi) { return json{{"estimate", v}, {"low", lo}, {"high", hi}}; };
  json j{{"estimated", true},
         {"op", call.op},
         {"args", format_args(call.args)},
         {"gpu", gpu},
         {"family", e.family},
         {"coverage", e.coverage},
         {"time_us", interval(e.time_us, e.time_low_us, e.time_high_us)},
         {"out_of_range", e.out_of_range},
         {"notes", e.notes}};
  j["energy_mJ"] = e.energy_mJ ? interval(*e.energy_mJ, *e.energy_low_mJ, *e.energy_high_mJ) : json(nullptr);
  j["power_W"] = e.power_W ? json(*e.power_W) : json(nullptr);
  j["power_W_interval"] = e.power_W ? json{*e.power_low_W, *e.power_high_W} : json(nullptr);
  j["host_us"] = e.host_us ? json(*e.host_us) : json(nullptr);
  j["host_us_interval"] = e.host_us ? json{*e.host_low_us, *e.host_high_us} : json(nullptr);
  return j;
}

}  // namespace opcost
