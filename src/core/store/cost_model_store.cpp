#include "core/store/cost_model_store.h"

#include <fmt/format.h>

#include "core/estimate/cost_model.h"
#include "core/io/input_file.h"
#include "core/measurement.h"
#include "core/store/database.h"
#include "core/store/sql_connection.h"

namespace opcost {

namespace {
void create_table(SqlConnection& c) {
  c.with_schema_lock([&] {
    c.exec(
        fmt::format("CREATE TABLE IF NOT EXISTS cost_models (id {}, created_at TEXT NOT NULL, "
                    "data_hash TEXT NOT NULL, model_json TEXT NOT NULL);",
                    c.dialect().id_column));
  });
}
}  // namespace

int64_t store_cost_model(Database& db, const std::string& model_json) {
  const CostModel checked = CostModel::from_text(model_json, "the fitted model");
  SqlConnection& c = db.connection();
  create_table(c);
  auto insert = c.query(fmt::format("INSERT INTO cost_models (created_at, data_hash, model_json) VALUES (?1, ?2, ?3){}",
                                    c.dialect().returning_id),
                        {utc_timestamp(), checked.data_hash(), model_json});
  return c.inserted_id(*insert);
}

std::optional<StoredCostModel> latest_cost_model(Database& db) {
  SqlConnection& c = db.connection();
  if (!c.has_table("cost_models")) return std::nullopt;
  auto q = c.query("SELECT id, created_at, data_hash, model_json FROM cost_models ORDER BY id DESC LIMIT 1", {});
  if (!q->step()) return std::nullopt;
  return StoredCostModel{q->column(0).get<int64_t>(), q->column(1).get<std::string>(), q->column(2).get<std::string>(),
                         q->column(3).get<std::string>()};
}

LoadedCostModel load_cost_model(const std::string& file, Database* db, const std::string& db_location,
                                const std::string& option) {
  if (!file.empty()) return {CostModel::from_text(read_text_file(file, option, kCostModelMaxBytes), file), file};
  const auto stored = db ? latest_cost_model(*db) : std::nullopt;
  const std::string shown = display_location(db_location);
  if (!stored)
    throw std::invalid_argument(
        fmt::format("{} has no cost model; fit one (opcost fit --db {}) or give one ({} FILE)", shown, shown, option));
  std::string source = fmt::format("{} (cost model {}, {})", shown, stored->id, stored->created_at);
  return {CostModel::from_text(stored->model_json, source), source};
}

}  // namespace opcost
