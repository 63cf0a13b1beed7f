#pragma once
// Fitted cost models kept in the measurement database, beside the rows they were fitted from,
// in their own table (cost_models): an estimate never becomes a measurement. Each fit is a new
// row; the newest is the one used. Torch-free.
#include <cstdint>
#include <optional>
#include <string>

namespace opcost {

class Database;

struct StoredCostModel {
  int64_t id = 0;
  std::string created_at, data_hash, model_json;
};

// Checks the text is a cost model this opcost reads (CostModel::from_text) before storing it;
// returns the new row's id.
int64_t store_cost_model(Database& db, const std::string& model_json);
// The newest stored model; nullopt when none was stored.
std::optional<StoredCostModel> latest_cost_model(Database& db);

}  // namespace opcost
