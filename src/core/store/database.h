#pragma once
// The measurement database: one SQLite file, one row per measurement. Each insert is its own
// transaction, so a process killed mid-run loses at most the measurement in flight. Queryable
// fields are columns; the full result document is kept beside them as JSON.
#include <nlohmann/json.hpp>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/measurement.h"

struct sqlite3;

namespace opcost {

class Database {
 public:
  // $OPCOST_DB, else $XDG_DATA_HOME/opcost/opcost.db, else ~/.local/share/opcost/opcost.db.
  static std::string default_path();

  explicit Database(const std::string& path);  // creates the file and schema if needed
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  const std::string& path() const { return path_; }
  int64_t insert(const Measurement& m);  // returns the row id

  struct Key {
    std::string op, overload, args_hash, device_name, cache_mode;
    std::string autocast;  // "" when the op ran without autocast
  };
  // The newest unflagged row for the key; with allow_flagged, the newest row of any kind
  // when no unflagged one exists. The JSON is the stored result document with db_id set.
  std::optional<nlohmann::json> lookup(const Key& key, bool allow_flagged = false) const;
  std::optional<nlohmann::json> get(int64_t id) const;

  struct Summary {
    int64_t id;
    std::string created_at, op, overload, args, device_name, cache_mode, flags;
    double time_us, time_rel_ci;
    std::optional<double> energy_mJ, energy_rel_ci;
  };
  std::vector<Summary> list(const std::string& op_filter = "", int limit = 50) const;
  std::size_t count() const;

  void export_csv(std::ostream& out) const;
  void export_json(std::ostream& out) const;

 private:
  void exec(const std::string& sql) const;
  sqlite3* db_ = nullptr;
  std::string path_;
};

}  // namespace opcost
