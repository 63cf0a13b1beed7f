#include "core/trace/trace_import.h"

#include "core/trace/chrome_import.h"
#include "core/trace/nsys_import.h"
#include "core/trace/trace_bytes.h"

namespace opcost {

namespace {
// SQLite's header string with its NUL: a database file's first 16 bytes.
constexpr std::string_view kSqliteMagic("SQLite format 3\0", 16);
bool is_sqlite(std::string_view head) { return head.substr(0, kSqliteMagic.size()) == kSqliteMagic; }
}  // namespace

TraceRun import_trace(const std::string& path, const TraceImportLimits& limits) {
  TraceBytes bytes = TraceBytes::open_file(path);
  if (is_sqlite(bytes.head())) return import_nsys_sqlite(path, limits);
  return import_chrome_trace(bytes, limits);
}

TraceRun import_trace_bytes(std::string_view data, const std::string& name, const TraceImportLimits& limits) {
  if (is_sqlite(data)) return import_nsys_sqlite_bytes(data, name, limits);
  TraceBytes bytes = TraceBytes::in_memory(data, name);
  return import_chrome_trace(bytes, limits);
}

}  // namespace opcost
