#include "core/store/database_copy.h"

#include <map>

#include "core/store/database.h"
#include "core/store/sql_connection.h"

namespace opcost {

CopyCounts copy_database(const Database& from, Database& to, const std::function<void(std::size_t)>& progress) {
  CopyCounts counts;
  std::map<int64_t, int64_t> new_id;  // source row id → destination row id
  from.each_row([&](const nlohmann::json& row) {
    const auto copied = to.insert_row(row);
    new_id[row.at("id").get<int64_t>()] = copied.id;
    ++(copied.added ? counts.rows_added : counts.rows_present);
    if (progress) progress(counts.rows_added + counts.rows_present);
  });
  SqlConnection& src = from.connection();
  SqlConnection& dst = to.connection();
  if (!src.has_table("sweep_items") || !src.has_table("sweep_members")) return counts;  // from before sweeps
  auto mapped = [&](const nlohmann::json& id) -> nlohmann::json {
    if (!id.is_number_integer()) return nullptr;
    const auto it = new_id.find(id.get<int64_t>());
    return it == new_id.end() ? nlohmann::json(nullptr) : nlohmann::json(it->second);
  };
  in_transaction(dst, [&] {
    // An item running in the source has its worker there, not here: it is pending here. A done
    // item replaces one not done here; anything else here stays as it is.
    auto item = dst.prepare(
        "INSERT INTO sweep_items (key, call, autocast, status, reason, measurement_id, attempts, worker, updated_at) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT(key) DO UPDATE SET status = excluded.status, "
        "reason = excluded.reason, measurement_id = excluded.measurement_id, worker = excluded.worker, "
        "updated_at = excluded.updated_at WHERE excluded.status = 'done' AND sweep_items.status != 'done'");
    for (auto s = src.prepare(
             "SELECT key, call, autocast, status, reason, measurement_id, attempts, worker, updated_at FROM "
             "sweep_items ORDER BY key");
         s->step();) {
      item->reset();
      const std::string status = s->column(3).get<std::string>();
      item->bind_all({s->column(0), s->column(1), s->column(2), status == "running" ? "pending" : status, s->column(4),
                      mapped(s->column(5)), s->column(6), s->column(7), s->column(8)});
      item->step();
      counts.items += std::size_t(item->changed_rows());
    }
    auto member = dst.prepare(
        "INSERT INTO sweep_members (sweep, key, position, axes, scope) VALUES (?1, ?2, ?3, ?4, ?5) "
        "ON CONFLICT(sweep, key) DO NOTHING");
    for (auto s = src.prepare("SELECT sweep, key, position, axes, scope FROM sweep_members ORDER BY sweep, position");
         s->step();) {
      member->reset();
      for (int i = 0; i < 5; ++i) member->bind(i + 1, s->column(i));
      member->step();
      counts.memberships += std::size_t(member->changed_rows());
    }
    if (src.has_table("sweep_results")) {
      auto result = dst.prepare(
          "INSERT INTO sweep_results (measurement_id, key) VALUES (?1, ?2) ON CONFLICT(measurement_id) DO NOTHING");
      for (auto s = src.prepare("SELECT measurement_id, key FROM sweep_results ORDER BY measurement_id"); s->step();) {
        const auto id = mapped(s->column(0));
        if (id.is_null()) continue;
        result->reset();
        result->bind_all({id, s->column(1)});
        result->step();
      }
    }
    return 0;
  });
  return counts;
}

}  // namespace opcost
