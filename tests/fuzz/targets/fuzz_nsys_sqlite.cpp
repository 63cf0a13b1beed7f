// nsys SQLite export import (core/trace/nsys_import.h). An input that begins as an SQLite file
// does ("SQLite format 3\0") is the file itself: damaged pages and headers. Any other input is
// SQL run statement by statement on an empty database, which then becomes the file: the
// seeds are `sqlite3 .dump`s of real exports, so that mutations reach the importer's own
// reading (odd types, NULLs, huge or negative times, long names for its regular expressions)
// rather than stopping at SQLite's checks. A file it cannot read is refused with
// std::invalid_argument naming it, in one line; an export it reads has no range that ends
// before it starts.
#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "core/trace/nsys_import.h"
#include "fuzz_support.h"

namespace {

// Building the database is the harness, not the test: it may not touch other files (ATTACH)
// or change how the database is kept (PRAGMA), and each statement and the file are bounded.
int authorize(void*, int action, const char*, const char*, const char*, const char*) {
  return action == SQLITE_ATTACH || action == SQLITE_DETACH || action == SQLITE_PRAGMA ? SQLITE_DENY : SQLITE_OK;
}

int steps_left = 0;
int count_steps(void*) { return --steps_left < 0; }  // non-zero interrupts the statement

// The database the SQL builds, as the bytes of its file; empty when it builds none.
std::string database_from_sql(const std::string& sql) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    opcost::fuzz::fail("cannot open an in-memory SQLite database");
  }
  sqlite3_exec(db, "PRAGMA max_page_count = 4096", nullptr, nullptr, nullptr);  // 16 MiB at 4 KiB pages
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, 4 << 20);
  sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0);
  sqlite3_set_authorizer(db, authorize, nullptr);
  sqlite3_progress_handler(db, 1000, count_steps, nullptr);
  // Bounded as a whole too: a statement that does not parse is retried from its next ';', and
  // an unclosed quote makes each retry read on to the end; over a megabyte of SQL that is
  // quadratic and took 9 s (a "hang" of the harness, not of the importer). The importer's
  // paths need neither that much SQL nor that many statements.
  const char* at = sql.c_str();
  const char* const end = at + std::min<std::size_t>(sql.size(), 256 << 10);
  for (int statements = 0; at < end && statements < 4000; ++statements) {
    sqlite3_stmt* stmt = nullptr;
    const char* tail = nullptr;
    steps_left = 10'000;  // about ten million virtual-machine steps per statement
    if (sqlite3_prepare_v2(db, at, int(end - at), &stmt, &tail) == SQLITE_OK && stmt) {
      while (sqlite3_step(stmt) == SQLITE_ROW) {}
    }
    sqlite3_finalize(stmt);
    // A statement that does not parse is skipped to its ';', as a NUL byte is.
    if (!tail || tail <= at || *tail == '\0') {
      const char* semicolon = static_cast<const char*>(std::memchr(at, ';', std::size_t(end - at)));
      tail = semicolon ? semicolon + 1 : end;
      if (tail <= at) tail = at + 1;
    }
    at = tail;
  }
  sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);  // a dump's transaction, if a mutation cut its end
  sqlite3_set_authorizer(db, nullptr, nullptr);           // serialising asks PRAGMA page_count
  sqlite3_progress_handler(db, 0, nullptr, nullptr);
  sqlite3_int64 size = 0;
  unsigned char* bytes = sqlite3_serialize(db, "main", &size, 0);
  std::string out(reinterpret_cast<const char*>(bytes), bytes ? std::size_t(size) : 0);
  sqlite3_free(bytes);
  sqlite3_close(db);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static opcost::fuzz::InputFile file(".sqlite");
  static const char kMagic[] = "SQLite format 3";  // with its NUL: 16 bytes
  const bool is_file = size >= sizeof kMagic && std::memcmp(data, kMagic, sizeof kMagic) == 0;
  const std::string db = is_file ? "" : database_from_sql(std::string(reinterpret_cast<const char*>(data), size));
  const std::string& path =
      is_file ? file.write(data, size) : file.write(reinterpret_cast<const uint8_t*>(db.data()), db.size());
  opcost::fuzz::check_trace_import(path, [](const std::string& file) { return opcost::import_nsys_sqlite(file); });
  return 0;
}
