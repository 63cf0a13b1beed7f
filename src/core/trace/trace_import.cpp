#include "core/trace/trace_import.h"

#include <cstring>
#include <fstream>

#include "core/trace/chrome_import.h"
#include "core/trace/nsys_import.h"

namespace opcost {

TraceRun import_trace(const std::string& path) {
  static const char kSqliteMagic[] = "SQLite format 3";  // with its NUL: the file's first 16 bytes
  char head[sizeof kSqliteMagic] = {};
  std::ifstream(path, std::ios::binary).read(head, sizeof head);
  return std::memcmp(head, kSqliteMagic, sizeof head) == 0 ? import_nsys_sqlite(path) : import_chrome_trace(path);
}

}  // namespace opcost
