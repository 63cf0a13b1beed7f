#pragma once
// One prepared SQLite statement with JSON-valued binds and columns, and the one way every
// SQLite failure becomes a DatabaseError that names the file, what failed and the fix.
// Internal to core/store.
#include <sqlite3.h>

#include <nlohmann/json.hpp>
#include <string>

#include "core/store/database.h"

namespace opcost {

[[noreturn]] void throw_sqlite(sqlite3* db, const std::string& path, const std::string& doing);

class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& path, const std::string& sql);
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  sqlite3_stmt* get() { return s_; }
  void bind(int i, const nlohmann::json& v);
  bool step();  // true: a row is there
  nlohmann::json column(int i);

 private:
  sqlite3* db_;
  const std::string& path_;
  sqlite3_stmt* s_ = nullptr;
};

// BEGIN IMMEDIATE … COMMIT around `body`; rolled back when it throws.
template <typename Body>
auto in_transaction(sqlite3* db, const std::string& path, Body&& body) {
  if (sqlite3_exec(db, "BEGIN IMMEDIATE;", nullptr, nullptr, nullptr) != SQLITE_OK)
    throw_sqlite(db, path, "cannot write");
  try {
    auto result = body();
    if (sqlite3_exec(db, "COMMIT;", nullptr, nullptr, nullptr) != SQLITE_OK) throw_sqlite(db, path, "cannot write");
    return result;
  } catch (...) {
    // SQLite may have rolled back by itself (a full disk does): a second rollback would
    // replace the real error with "no transaction is active".
    if (!sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK;", nullptr, nullptr, nullptr);
    throw;
  }
}

}  // namespace opcost
