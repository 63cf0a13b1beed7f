// The SQLite file behind SqlConnection: the embedded default. Every SQLite failure becomes a
// DatabaseError that names the file, what failed and the fix.
#include <fmt/format.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>

#include "core/store/database.h"
#include "core/store/sql_connection.h"

namespace opcost {

namespace {

// Why a write may have failed for want of room, when SQLite reports only an I/O error (its
// own rollback clears the system's error code): the disk has (almost) no space left, or the
// process may not grow files past a limit (ulimit -f).
std::optional<std::string> out_of_room(const std::string& path) {
  const auto parent = std::filesystem::path(path).parent_path();
  struct statvfs fs {};
  if (statvfs(parent.empty() ? "." : parent.c_str(), &fs) == 0 && double(fs.f_bavail) * double(fs.f_frsize) < (1 << 20))
    return fmt::format("{} has {} bytes free", parent.empty() ? "." : parent.string(),
                       uint64_t(fs.f_bavail) * fs.f_frsize);
  rlimit limit{};
  if (getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    return fmt::format("files may not grow past {} bytes here, ulimit -f", uint64_t(limit.rlim_cur));
  return std::nullopt;
}

[[noreturn]] void throw_sqlite(sqlite3* db, const std::string& path, const std::string& doing) {
  using Kind = DatabaseError::Kind;
  const int code = sqlite3_errcode(db) & 0xff;  // the primary result code
  const int sys = sqlite3_system_errno(db);
  const std::string os = sys ? fmt::format(" ({})", std::strerror(sys)) : "";
  Kind kind = Kind::kOther;
  std::string why = sqlite3_errmsg(db), fix = "is it an opcost database?";
  const auto room = code == SQLITE_IOERR ? out_of_room(path) : std::nullopt;
  if (code == SQLITE_FULL || (code == SQLITE_IOERR && (sys == ENOSPC || sys == EFBIG || sys == EDQUOT || room))) {
    kind = Kind::kFull;
    why = "database or disk is full" + (room ? ": " + *room : os);
    fix = "free some space, or use --db PATH on another disk";
  } else if (code == SQLITE_READONLY || code == SQLITE_CANTOPEN || code == SQLITE_PERM) {
    kind = Kind::kReadOnly;
    why += os;
    fix = "check the permissions of the file and of its directory, or use --db PATH";
  } else if (code == SQLITE_IOERR) {
    kind = Kind::kIo;
    why += os;
    fix = "check the disk";
  } else if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT) {
    kind = Kind::kUnusable;
    fix = "the file is damaged or is not an opcost database: use another --db, or restore it from a copy";
  } else if (code == SQLITE_BUSY || code == SQLITE_LOCKED) {
    // Still locked after the busy timeout: another process holds a transaction open.
    why = "it is locked by another process";
    fix =
        "wait for that process (another opcost run, or a sqlite3 shell with a transaction open) to finish, or use "
        "another --db";
  }
  throw DatabaseError(kind, fmt::format("{}: {}: {}; {}", path, doing, why, fix));
}

class SqliteStatement : public SqlStatement {
 public:
  SqliteStatement(sqlite3* db, const std::string& path, const std::string& sql) : db_(db), path_(path) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr) != SQLITE_OK) throw_sqlite(db, path, "cannot query");
  }
  ~SqliteStatement() override { sqlite3_finalize(s_); }

  void bind(int i, const nlohmann::json& v) override {
    int rc;
    if (v.is_null())
      rc = sqlite3_bind_null(s_, i);
    else if (v.is_number_integer() || v.is_boolean())
      rc = sqlite3_bind_int64(s_, i, v.get<int64_t>());
    else if (v.is_number())
      rc = sqlite3_bind_double(s_, i, v.get<double>());
    else
      rc = sqlite3_bind_text(s_, i, v.get<std::string>().c_str(), -1, SQLITE_TRANSIENT);
    if (rc != SQLITE_OK) throw_sqlite(db_, path_, "cannot query");
  }

  bool step() override {
    const int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) {
      changed_ = sqlite3_changes(db_);
      return false;
    }
    throw_sqlite(db_, path_, "cannot read or write");
  }

  nlohmann::json column(int i) override {
    switch (sqlite3_column_type(s_, i)) {
      case SQLITE_INTEGER:
        return sqlite3_column_int64(s_, i);
      case SQLITE_FLOAT:
        return sqlite3_column_double(s_, i);
      case SQLITE_NULL:
        return nullptr;
      default:
        return std::string(reinterpret_cast<const char*>(sqlite3_column_text(s_, i)));
    }
  }
  int column_count() override { return sqlite3_column_count(s_); }
  void reset() override { sqlite3_reset(s_); }
  int64_t changed_rows() override { return changed_; }

 private:
  sqlite3* db_;
  const std::string& path_;
  sqlite3_stmt* s_ = nullptr;
  int64_t changed_ = 0;
};

const SqlDialect kSqliteDialect{
    "INTEGER", "REAL", "INTEGER PRIMARY KEY AUTOINCREMENT", "", "",
};

class SqliteConnection : public SqlConnection {
 public:
  SqliteConnection(const std::string& path, SqlAccess access) : SqlConnection(path), access_(access) {
    const int flags =
        access == SqlAccess::kReadOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
      const std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      throw DatabaseError(DatabaseError::Kind::kReadOnly,
                          fmt::format("{}: cannot open the database: {} (use --db PATH)", path, msg));
    }
    sqlite3_busy_timeout(db_, 5000);
    // Rollback journal with full sync: every committed row survives a killed process, and the
    // database stays one self-contained file.
    if (access == SqlAccess::kReadWrite) {
      try {
        exec("PRAGMA journal_mode=DELETE; PRAGMA synchronous=FULL;");
      } catch (...) {
        sqlite3_close(db_);
        throw;
      }
    }
  }
  ~SqliteConnection() override { sqlite3_close(db_); }

  const SqlDialect& dialect() const override { return kSqliteDialect; }
  std::unique_ptr<SqlStatement> prepare(const std::string& sql) override {
    return std::make_unique<SqliteStatement>(db_, location(), sql);
  }
  void exec(const std::string& sql) override {
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK)
      throw_sqlite(db_, location(), access_ == SqlAccess::kReadOnly ? "cannot read" : "cannot write");
  }
  void begin() override {
    if (sqlite3_exec(db_, "BEGIN IMMEDIATE;", nullptr, nullptr, nullptr) != SQLITE_OK)
      throw_sqlite(db_, location(), "cannot write");
  }
  void commit() override {
    if (sqlite3_exec(db_, "COMMIT;", nullptr, nullptr, nullptr) != SQLITE_OK)
      throw_sqlite(db_, location(), "cannot write");
  }
  void rollback() noexcept override {
    // SQLite may have rolled back by itself (a full disk does): a second rollback would
    // replace the real error with "no transaction is active".
    if (!sqlite3_get_autocommit(db_)) sqlite3_exec(db_, "ROLLBACK;", nullptr, nullptr, nullptr);
  }
  std::vector<std::string> columns(const std::string& table) override {
    std::vector<std::string> names;
    SqliteStatement info(db_, location(), fmt::format("PRAGMA table_info({})", table));
    while (info.step()) names.push_back(info.column(1).get<std::string>());
    return names;
  }
  int64_t inserted_id(SqlStatement& insert) override {
    while (insert.step()) {}
    return sqlite3_last_insert_rowid(db_);
  }
  void with_schema_lock(const std::function<void()>& body) override { body(); }  // the file lock suffices

 private:
  sqlite3* db_ = nullptr;
  SqlAccess access_;
};

}  // namespace

std::unique_ptr<SqlConnection> open_sqlite(const std::string& path, SqlAccess access) {
  return std::make_unique<SqliteConnection>(path, access);
}

}  // namespace opcost
