#include "core/store/sqlite_statement.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>

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

}  // namespace

void throw_sqlite(sqlite3* db, const std::string& path, const std::string& doing) {
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
  }
  throw DatabaseError(kind, fmt::format("{}: {}: {}; {}", path, doing, why, fix));
}

Stmt::Stmt(sqlite3* db, const std::string& path, const std::string& sql) : db_(db), path_(path) {
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr) != SQLITE_OK) throw_sqlite(db, path, "cannot query");
}

Stmt::~Stmt() { sqlite3_finalize(s_); }

void Stmt::bind(int i, const nlohmann::json& v) {
  if (v.is_null())
    sqlite3_bind_null(s_, i);
  else if (v.is_number_integer() || v.is_boolean())
    sqlite3_bind_int64(s_, i, v.get<int64_t>());
  else if (v.is_number())
    sqlite3_bind_double(s_, i, v.get<double>());
  else
    sqlite3_bind_text(s_, i, v.get<std::string>().c_str(), -1, SQLITE_TRANSIENT);
}

bool Stmt::step() {
  const int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  throw_sqlite(db_, path_, "cannot read or write");
}

nlohmann::json Stmt::column(int i) {
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

}  // namespace opcost
