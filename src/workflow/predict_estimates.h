#pragma once
// predict --estimate: the costs the database has, and for a call it has no row of, the fitted
// cost model's estimate (core/estimate/cost_model.h) in a measurement's shape, so that the
// prediction's stages use it as they use a row, and mark it estimated. Nothing is stored.
// Torch-free.
#include <optional>
#include <string>

#include "core/estimate/cost_model.h"
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

// The cost model --estimate uses: --cost-model's file, else the newest stored in `db` (none
// open: none stored). Throws std::invalid_argument naming the option and the fix where there
// is none, or where it knows no rates of `gpu`.
CostModel cost_model_for(const PredictOptions& o, Database* db, const std::string& gpu);

}  // namespace opcost
