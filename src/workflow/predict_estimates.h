#pragma once
// predict --estimate: the costs the database has, and for a call it has no row of, the fitted
// cost model's estimate (core/estimate/cost_model.h) in a measurement's shape, so that the
// prediction's stages use it as they use a row, and mark it estimated. Nothing is stored.
// Torch-free.
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/estimate/cost_model.h"
#include "core/predict/extent_match.h"
#include "workflow/predict_stages.h"

namespace opcost {

class Database;
struct PredictOptions;

class EstimatingCosts final : public StoredCosts {
 public:
  // `gpu`: the device's name, as its rows and the model's rates name it.
  EstimatingCosts(StoredCosts& stored, const CostModel& model, std::string gpu)
      : stored_(stored), model_(model), gpu_(std::move(gpu)) {}
  std::optional<Measurement> newest(const StoredCallKey& key) override { return stored_.newest(key); }
  std::optional<NearRow> ignoring_float_scalars(const InventoryEntry& e, const StoredCallKey& key) override {
    return stored_.ignoring_float_scalars(e, key);
  }
  // None where the model cannot answer (an operator whose work is not counted, a family it has
  // no rows of): the call stays missing, as without --estimate.
  // Where the database has rows of the call at other sizes, the estimate is scaled from the
  // nearest (core/predict/extent_match.h): that row's time and energy times the ratio of the two
  // calls' roofline figures (predict_estimates.cpp says why not the trees').
  std::optional<Estimate> estimated(const InventoryEntry& e, const StoredCallKey& key) override;
  std::vector<NearRow> at_other_sizes(const InventoryEntry& e, const StoredCallKey& key) override {
    return stored_.at_other_sizes(e, key);
  }

 private:
  StoredCosts& stored_;
  const CostModel& model_;
  std::string gpu_;
};

// The row an estimate was scaled from, and by how much its time was (core/predict/extent_match.h).
struct EstimateAnchor {
  std::string row_args;                              // as stored
  ExtentPair extents;                                // the extent that differs: the call's and the row's
  double row_time_us = 0;                            // the row's median time per call
  double row_time_low_us = 0, row_time_high_us = 0;  // its 95% interval (the stored half-width, about the median)
  double time_ratio = 0;  // the two calls' base times (roofline with the launch floor), call over row
  // Which interval the scaled time and energy carry: the fit's for scaled estimates
  // (TargetModel::scaled), or the trees' relative width (false; energy also where it was not
  // scaled).
  bool time_interval_fitted = false, energy_interval_fitted = false;
};

// How an anchor's figure got its interval, in words for the text line.
const char* anchor_interval_words(bool fitted);

// `est`, the model's estimate of `call`, scaled from the nearest of `rows` (the call's rows at
// other sizes: StoredCosts::at_other_sizes); none where no row serves (`est` as it was).
std::optional<EstimateAnchor> scale_to_nearest_row(CostEstimate& est, const OpCall& call,
                                                   std::vector<StoredCosts::NearRow> rows, const CostModel& model,
                                                   const std::string& gpu, const std::string& cache_mode);

// One call's estimate as `opcost estimate` and opcost.estimate give it: scaled from `db`'s rows
// of the call at other sizes on `gpu` where it has some (`db` may be null: the model's alone;
// rows that cannot be read leave the model's figure, with a note). Throws std::invalid_argument
// where the model has no estimate.
struct CallEstimate {
  CostEstimate estimate;
  std::optional<EstimateAnchor> anchor;
};
CallEstimate estimate_call(const CostModel& model, const OpCall& call, const std::string& cache_mode,
                           const std::string& gpu, const Database* db);
// The same from the database at `db_location`, opened read-only where it exists ("" or none:
// the model's alone). A database that cannot be opened or read leaves the model's figure, with
// a note that says why (never an error: the rows only refine the estimate).
CallEstimate estimate_call(const CostModel& model, const OpCall& call, const std::string& cache_mode,
                           const std::string& gpu, const std::string& db_location);
// estimate_document with "anchor": {row_args, row_extent, call_extent, row_time_us (the row's
// median, with its interval as {estimate, low, high}), time_ratio, interval ({time, energy}:
// "fitted" for the fit's interval of scaled estimates, "relative" for the model's relative
// width)} or null.
nlohmann::json call_estimate_document(const OpCall& call, const std::string& gpu, const CallEstimate& e);

// The cost model --estimate uses: --cost-model's file, else the newest stored in `db` (none
// open: none stored). Throws std::invalid_argument naming the option and the fix where there
// is none, or where it knows no rates of `gpu`.
CostModel cost_model_for(const PredictOptions& o, Database* db, const std::string& gpu);

}  // namespace opcost
