#pragma once
// Fitted cost models kept in the measurement database, beside the rows they were fitted from,
// in their own table (cost_models): an estimate never becomes a measurement. Each fit is a new
// row; the newest is the one used. Torch-free.
#include <cstdint>
#include <optional>
#include <string>

#include "core/estimate/cost_model.h"

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

// The model a command uses: the file `option` names (`file`), else the newest stored in `db`
// (`db_location` names it; none open: none stored), with what messages call it. Throws
// std::invalid_argument saying where none was found and the fix (fit one, or give `option`).
struct LoadedCostModel {
  CostModel model;
  std::string source;  // "FILE", or "DB (cost model ID, WHEN)"
};
LoadedCostModel load_cost_model(const std::string& file, Database* db, const std::string& db_location,
                                const std::string& option);

}  // namespace opcost
