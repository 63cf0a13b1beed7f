#pragma once
// A fitted cost model (issue 26): per operator family, gradient-boosted regression trees for a
// call's time, energy, power and host time, fitted by `python -m opcost fit` (scikit-learn) from the
// database's measurements and stored as JSON (its trees' arrays, the GPUs' achieved rates, the
// data's hash, the held-out errors, and the features' ranges). Here it is read back, checked as
// hostile input, and evaluated: an estimate, with its interval, and the reasons it may be out of
// its depth. Estimates are never measurements: nothing here writes a row. Torch-free.
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/estimate/cost_features.h"
#include "core/estimate/gpu_profile.h"
#include "core/spec/op_call.h"

namespace opcost {

// One regression tree as scikit-learn stores it: node k splits on feature[k] at threshold[k]
// (left when the value, as a float32, is ≤ the threshold), a leaf has left[k] = -1.
struct RegressionTree {
  std::vector<int> feature, left, right;
  std::vector<double> threshold, value;
  double evaluate(const std::vector<double>& x) const;
};

// scikit-learn's GradientBoostingRegressor: init + learning_rate · Σ trees, in log space.
struct BoostedTrees {
  double init = 0, learning_rate = 0;
  std::vector<RegressionTree> trees;
  double evaluate(const std::vector<double>& x) const;
};

// An estimator's errors on rows it did not use, as fractions.
struct HeldOutErrors {
  double median_abs_error = 0, p90_abs_error = 0;
  std::size_t n_test = 0;
};

// And its interval, from the log residuals of those estimates.
struct HeldOutFit : HeldOutErrors {
  double interval_log_halfwidth = 0;  // the conformal quantile of |log residual| at `coverage`
};

// The same for an estimate scaled from a row of the call at another size
// (workflow/predict_estimates.h): each distinct configuration of the fit's rows estimated from its
// nearest other size. Its error grows with the distance to the row, from a floor at the nearest
// sizes, so the interval is per unit of scaled_estimate_distance: the conformal quantile of
// |log residual| / distance, times the estimate's own distance.
struct ScaledFit : HeldOutErrors {  // the errors at the rows' own distances
  double log_halfwidth_per_distance = 0;
};

// A target's fitted trees and what its held-out configurations said of them; `scaled` absent
// where the rows had too few calls at several sizes (a scaled estimate then keeps the trees'
// relative width).
struct TargetModel : HeldOutFit {
  BoostedTrees trees;
  std::optional<ScaledFit> scaled;
};

struct FamilyModel {
  std::vector<std::string> ops;                   // the operators its rows had
  std::vector<std::pair<double, double>> ranges;  // each feature's [min, max] in its rows
  std::size_t n_train = 0;
  // The GPUs whose rows fitted it, with their rows' counts; empty in a model that does not say.
  // An estimate for another GPU is carried from the one with the most (CostModel::estimate).
  std::map<std::string, std::size_t> rows_by_gpu;
  std::map<std::string, TargetModel> targets;  // "time" always; "energy", "power", "host" where rows had them
};

// An estimate: figures, each with its interval at the model's coverage, and why to doubt it.
struct CostEstimate {
  std::string family;
  double time_us = 0, time_low_us = 0, time_high_us = 0;
  std::optional<double> energy_mJ, energy_low_mJ, energy_high_mJ, power_W;
  std::optional<double> power_low_W, power_high_W;
  std::optional<double> host_us, host_low_us, host_high_us;
  // What the trees' figures are relative to (cost_features.h): the roofline time with the
  // launch floor, and that time at the roofline side's draw (none without a draw).
  double base_us = 0;
  std::optional<double> base_energy_mJ;
  double coverage = 0;  // the intervals' coverage (the fit's, 0.95 by default)
  // For time and energy scaled from another size: the interval's half-width (log space) per unit
  // of scaled_estimate_distance, where the fit had one (TargetModel::scaled).
  std::optional<double> scaled_time_halfwidth_per_distance, scaled_energy_halfwidth_per_distance;
  std::vector<std::string> out_of_range;  // where the call lies outside the fit's data
  std::vector<std::string> notes;         // where a figure stands on less (cost_features' notes)
  std::string energy_unavailable;         // why energy_mJ is empty, when it is
};

class CostModel {
 public:
  // Throws std::invalid_argument naming the place of the first thing that is wrong (a model of
  // another format or feature set, an index out of its tree, a non-finite number).
  static CostModel from_json(const nlohmann::json& j);
  static CostModel from_text(std::string_view text, const std::string& source);

  // Throws std::invalid_argument when the call's work has no figure (an operator not counted),
  // its family has no model, or the GPU is not one the fit read rates of; else an estimate.
  // On a GPU whose rows the family was not fitted on, the trees read the call's features at the
  // rates of the fitted GPU with the most rows, and the figures' bases are this GPU's. Its time,
  // where the two GPUs' FLOP rates are alike (alike_compute), is the trees' time there with the
  // roofline's part replaced by this GPU's (all of it scaled where it is below that roofline);
  // elsewhere it is scaled by the rooflines' ratio.
  CostEstimate estimate(const OpCall& call, std::string_view cache_mode, const std::string& gpu) const;

  const std::map<std::string, GpuProfile>& gpus() const { return gpus_; }
  const std::map<std::string, FamilyModel>& families() const { return families_; }
  const std::string& data_hash() const { return data_hash_; }
  double coverage() const { return coverage_; }
  std::vector<std::string> gpu_names() const;

 private:
  // The GPU a family's time is carried from to `gpu`: the one of its rows with the most, where
  // the family knows its GPUs and `gpu` is not among them.
  std::optional<std::string> transfer_source(const FamilyModel& f, const std::string& gpu) const;

  std::map<std::string, GpuProfile> gpus_;
  std::map<std::string, FamilyModel> families_;
  std::string data_hash_;
  double coverage_ = 0.95;
};

// Two GPUs of alike compute (the same SMs at the same clocks, as the H100's and the H200's): every
// FLOP rate both have within kAlikeComputeRatio of each other, and at least one in common.
inline constexpr double kAlikeComputeRatio = 1.15;
bool alike_compute(const GpuProfile& a, const GpuProfile& b);

// An estimate as the command line's --json and Python's dict give it: marked "estimated", with
// the call, the GPU, each figure's interval and the out-of-range reasons.
nlohmann::json estimate_document(const OpCall& call, const std::string& gpu, const CostEstimate& e);

// How far a scaled estimate reaches: ln 2 + |ln(call's extent / row's extent)|. The ln 2 is a
// floor for the nearest sizes, whose errors (noise, a kernel chosen for one size) do not shrink
// with the distance. On issue 26's rows the forms tried (this, |ln ratio| alone, its square
// root, none) covered within 0.5 points of each other, less than the spread between random
// splits (bench/scaled_interval_check.py); this one grows as the errors do and stays finite at
// the nearest sizes. python/opcost/_fit.py fits its interval by the same distance (through
// _core.scaled_distance, of |ln ratio|).
// Throws std::invalid_argument for an extent that is not positive.
double scaled_estimate_distance(int64_t call_extent, int64_t row_extent);
// The same of |ln(call's extent / row's extent)| (≥ 0).
double scaled_distance(double abs_ln_ratio);

// The cost model's JSON's format name and the largest text read (a hostile file is refused
// before it is parsed).
inline constexpr const char* kCostModelFormat = "opcost-cost-model";
// A model of 9 families × 4 targets is about 4 MB with small trees; 12 MB with the H100's dense
// rows, whose largest targets get 400 trees of depth 5 (at most ~50 MB were every target's so).
inline constexpr std::size_t kCostModelMaxBytes = std::size_t(64) << 20;
// A tree's value, an init or an interval's half-width in log space: e^50 is far past any cost, so a
// larger one is hostile (its exp would overflow to infinity).
inline constexpr double kMaxLogValue = 50;

}  // namespace opcost
