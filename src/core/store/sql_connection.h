#pragma once
// One connection to the measurement database, whichever engine holds it: a SQLite file (the
// embedded default) or a PostgreSQL server (a team's shared database, a cluster's sweep).
// Database and SweepState speak SQL through this and never name an engine: statements are
// written once, with numbered parameters (?1, ?2, …) and the few words that differ taken from
// the dialect. Values cross as JSON (null, integer, real, text). Internal to core/store.
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/store/database.h"  // is_postgres_url, display_location, DatabaseError

namespace opcost {

// What differs between the engines' SQL.
struct SqlDialect {
  const char* integer;       // a 64-bit integer column
  const char* real;          // a double column
  const char* id_column;     // the measurements' row id: an increasing integer key, never reused
  const char* returning_id;  // appended to an INSERT whose new id inserted_id() reads
  // Appended to a SELECT that claims a row of sweep_items (aliased i): PostgreSQL locks it and
  // skips rows other workers hold; SQLite's write transaction already excludes them.
  const char* claim_lock;
};

class SqlStatement {
 public:
  virtual ~SqlStatement() = default;
  virtual void bind(int index, const nlohmann::json& value) = 0;  // 1-based, as ?N
  void bind_all(const std::vector<nlohmann::json>& values) {      // to ?1, ?2, … in order
    for (std::size_t i = 0; i < values.size(); ++i) bind(int(i) + 1, values[i]);
  }
  virtual bool step() = 0;                       // true: a row is there
  virtual nlohmann::json column(int index) = 0;  // 0-based
  virtual int column_count() = 0;
  virtual void reset() = 0;            // to run again; the bound values stay
  virtual int64_t changed_rows() = 0;  // by the statement just run (UPDATE, INSERT, DELETE)
};

class SqlConnection {
 public:
  virtual ~SqlConnection() = default;
  // The file, or the URL without its password: what every message names.
  const std::string& location() const { return location_; }
  virtual const SqlDialect& dialect() const = 0;
  virtual std::unique_ptr<SqlStatement> prepare(const std::string& sql) = 0;
  // Prepared and bound to ?1, ?2, … in order, ready to step.
  std::unique_ptr<SqlStatement> query(const std::string& sql, const std::vector<nlohmann::json>& values) {
    auto s = prepare(sql);
    s->bind_all(values);
    return s;
  }
  // Runs a statement that returns no rows (UPDATE, INSERT, DELETE); the rows it changed.
  int64_t execute(const std::string& sql, const std::vector<nlohmann::json>& values) {
    auto s = query(sql, values);
    s->step();
    return s->changed_rows();
  }
  virtual void exec(const std::string& sql) = 0;  // statements without parameters
  // A write transaction: SQLite takes the file's write lock at once (BEGIN IMMEDIATE).
  virtual void begin() = 0;
  virtual void commit() = 0;
  virtual void rollback() noexcept = 0;  // of a transaction still open; never masks the error
  virtual std::vector<std::string> columns(const std::string& table) = 0;  // none: no such table
  bool has_table(const std::string& table) { return !columns(table).empty(); }
  // The id of the row an INSERT ending in dialect().returning_id just made.
  virtual int64_t inserted_id(SqlStatement& insert) = 0;
  // Runs `body` while no other connection changes the schema (PostgreSQL: an advisory lock,
  // since workers starting together would race to create the same tables).
  virtual void with_schema_lock(const std::function<void()>& body) = 0;

 protected:
  explicit SqlConnection(std::string location) : location_(std::move(location)) {}

 private:
  std::string location_;
};

enum class SqlAccess { kReadWrite, kReadOnly };
// Throws DatabaseError (cannot open or connect) or std::invalid_argument (a bad location).
std::unique_ptr<SqlConnection> open_sqlite(const std::string& path, SqlAccess access);
std::unique_ptr<SqlConnection> open_postgres(const std::string& url, SqlAccess access);

// A write transaction around `body`; rolled back when it throws.
template <typename Body>
auto in_transaction(SqlConnection& c, Body&& body) {
  c.begin();
  try {
    auto result = body();
    c.commit();
    return result;
  } catch (...) {
    c.rollback();
    throw;
  }
}

}  // namespace opcost
