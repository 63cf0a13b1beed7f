#include "core/store/database.h"

#include <fmt/format.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "core/io/output_file.h"
#include "core/report/report.h"
#include "core/spec/op_call.h"
#include "core/store/sqlite_statement.h"
#include "core/store/sweep_state.h"

namespace opcost {

namespace {

// 1: the first files (some without the autocast column); 2: every column of columns(), the
// version written once a file is migrated; 3: the sweep tables (core/store/sweep_state.h).
constexpr int kSchemaVersion = 3;

// Columns besides id: name, SQL type. The result document rides along as result_json.
const std::vector<std::pair<const char*, const char*>>& columns() {
  static const std::vector<std::pair<const char*, const char*>> c = {
      {"created_at", "TEXT NOT NULL"},
      {"opcost_version", "TEXT"},
      {"op", "TEXT NOT NULL"},
      {"overload", "TEXT NOT NULL"},
      {"args", "TEXT NOT NULL"},
      {"args_hash", "TEXT NOT NULL"},
      {"dtype", "TEXT"},
      {"device_kind", "TEXT"},
      {"device_name", "TEXT"},
      {"device_uuid", "TEXT"},
      {"driver_version", "TEXT"},
      {"cuda_version", "TEXT"},
      {"torch_version", "TEXT"},
      {"cache_mode", "TEXT"},
      {"method", "TEXT"},
      {"autocast", "TEXT NOT NULL DEFAULT ''"},
      {"time_median_us", "REAL"},
      {"time_mean_us", "REAL"},
      {"time_clipped_mean_us", "REAL"},
      {"time_min_us", "REAL"},
      {"time_stdev_us", "REAL"},
      {"time_ci95_low_us", "REAL"},
      {"time_ci95_high_us", "REAL"},
      {"time_samples", "INTEGER"},
      {"stop_reason", "TEXT"},
      {"host_us_per_call", "REAL"},
      {"host_cpu_us_per_call", "REAL"},
      {"energy_per_call_mJ", "REAL"},
      {"energy_above_idle_mJ", "REAL"},
      {"energy_ci95_low_mJ", "REAL"},
      {"energy_ci95_high_mJ", "REAL"},
      {"energy_unavailable", "TEXT"},
      {"power_W", "REAL"},
      {"idle_power_W", "REAL"},
      {"loop_wall_us_per_call", "REAL"},
      {"sm_clock_MHz", "INTEGER"},
      {"mem_clock_MHz", "INTEGER"},
      {"temperature_C", "INTEGER"},
      {"throttle_reasons", "INTEGER"},
      {"flags", "TEXT"},
      {"calls", "INTEGER"},
      {"seconds", "REAL"},
      {"result_json", "TEXT NOT NULL"},
  };
  return c;
}

template <typename T>
nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json row_values(const Measurement& m) {
  const auto& t = m.time.per_call_us;
  const auto& e = m.energy;
  std::string flags;
  for (const auto& f : m.flags) flags += (flags.empty() ? "" : ",") + f;
  auto energy = [&](double v) { return e.available ? nlohmann::json(v) : nlohmann::json(nullptr); };
  return {{"created_at", m.created_at},
          {"opcost_version", m.env.opcost_version},
          {"op", m.op},
          {"overload", m.overload},
          {"args", m.args},
          {"args_hash", m.args_hash},
          {"dtype", m.dtype},
          {"device_kind", m.env.device_kind},
          {"device_name", m.env.device_name},
          {"device_uuid", m.env.device_uuid},
          {"driver_version", m.env.driver_version},
          {"cuda_version", m.env.cuda_version},
          {"torch_version", m.env.torch_version},
          {"cache_mode", m.cache_mode},
          {"method", m.method},
          {"autocast", m.autocast},
          {"time_median_us", t.median},
          {"time_mean_us", t.mean},
          {"time_clipped_mean_us", t.clipped_mean},
          {"time_min_us", t.min},
          {"time_stdev_us", t.stdev},
          {"time_ci95_low_us", t.ci95_low},
          {"time_ci95_high_us", t.ci95_high},
          {"time_samples", t.n},
          {"stop_reason", m.time.stop_reason},
          {"host_us_per_call", m.time.host_us_per_call},
          {"host_cpu_us_per_call", m.time.host_cpu_us_per_call},
          {"energy_per_call_mJ", energy(e.per_call_mJ.mean)},
          {"energy_above_idle_mJ", energy(e.above_idle_mJ)},
          {"energy_ci95_low_mJ", energy(e.per_call_mJ.ci95_low)},
          {"energy_ci95_high_mJ", energy(e.per_call_mJ.ci95_high)},
          {"energy_unavailable", e.available ? nlohmann::json(nullptr) : nlohmann::json(e.unavailable_reason)},
          {"power_W", energy(e.power_W)},
          {"idle_power_W", opt(e.idle_power_W)},
          {"loop_wall_us_per_call", energy(e.wall_us_per_call)},
          {"sm_clock_MHz", opt(m.after.sm_clock_MHz)},
          {"mem_clock_MHz", opt(m.after.mem_clock_MHz)},
          {"temperature_C", opt(m.after.temperature_C)},
          {"throttle_reasons", m.during.throttle_reasons_seen},
          {"flags", flags},
          {"calls", m.total_calls},
          {"seconds", m.total_seconds}};
}

}  // namespace

std::string Database::default_path() {
  if (const char* p = std::getenv("OPCOST_DB"); p && *p) return p;
  std::filesystem::path base;
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x)
    base = x;
  else if (const char* h = std::getenv("HOME"); h && *h)
    base = std::filesystem::path(h) / ".local/share";
  else
    base = ".";
  return (base / "opcost" / "opcost.db").string();
}

Database::Key Database::Key::of(const std::string& op, const std::string& overload, const std::string& canonical_args,
                                const std::string& device_name, const std::string& cache_mode,
                                const std::string& autocast) {
  return {op, overload, signature_hash(op, overload, canonical_args), device_name, cache_mode, autocast};
}

Database::Database(const std::string& path, Access access, bool create_parent) : path_(path), access_(access) {
  namespace fs = std::filesystem;
  if (path.empty())
    throw std::invalid_argument(
        fmt::format("--db: the path is empty; give a file, or leave --db out for {}", default_path()));
  std::error_code ec;
  const fs::path parent = fs::path(path).parent_path();
  if (access == Access::kReadOnly) {
    if (!fs::exists(path, ec))
      throw std::invalid_argument(
          fmt::format("{}: no database there (nothing was measured into it; check --db or $OPCOST_DB)", path));
  } else if (!parent.empty() && !fs::is_directory(parent, ec)) {
    if (!create_parent)
      throw std::invalid_argument(fmt::format("{}: the directory {} does not exist (create it, or choose another --db)",
                                              path, parent.string()));
    fs::create_directories(parent, ec);
    if (ec)
      throw DatabaseError(DatabaseError::Kind::kReadOnly,
                          fmt::format("{}: cannot create the directory {}: {}", path, parent.string(), ec.message()));
  }
  const int flags = access == Access::kReadOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    const std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw DatabaseError(DatabaseError::Kind::kReadOnly,
                        fmt::format("{}: cannot open the database: {} (use --db PATH)", path, msg));
  }
  sqlite3_busy_timeout(db_, 5000);
  try {
    if (access == Access::kReadWrite) {
      migrate();
      check_writable();
    } else {
      const auto present = present_columns();
      if (present.empty())
        throw DatabaseError(DatabaseError::Kind::kOther,
                            fmt::format("{}: has no measurements table (is it an opcost database?)", path));
      check_schema_version();
    }
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

std::vector<std::string> Database::present_columns() const {
  std::vector<std::string> present;
  for (Stmt info(db_, path_, "PRAGMA table_info(measurements)"); info.step();)
    present.push_back(info.column(1).get<std::string>());
  return present;
}

void Database::migrate() {
  // Rollback journal with full sync: every committed row survives a killed process, and
  // the database stays one self-contained file.
  exec("PRAGMA journal_mode=DELETE; PRAGMA synchronous=FULL;");
  std::string cols;
  for (const auto& [name, type] : columns()) cols += fmt::format(", {} {}", name, type);
  exec(fmt::format("CREATE TABLE IF NOT EXISTS measurements (id INTEGER PRIMARY KEY AUTOINCREMENT{});", cols));
  // A file from an older opcost lacks the newer columns: add them (old rows get the default).
  // They land at the end of the table, so everything reads columns by name.
  const auto present = present_columns();
  for (const auto& [name, type] : columns())
    if (std::find(present.begin(), present.end(), name) == present.end())
      exec(fmt::format("ALTER TABLE measurements ADD COLUMN {} {};", name, type));
  exec(
      "CREATE INDEX IF NOT EXISTS measurements_key ON measurements(op, overload, args_hash, device_name, "
      "cache_mode);");
  exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);");
  create_sweep_tables(db_, path_);
  if (check_schema_version() != kSchemaVersion)
    exec(fmt::format("INSERT OR REPLACE INTO meta VALUES ('schema_version', '{}');", kSchemaVersion));
}

int Database::check_schema_version() const {
  Stmt v(db_, path_, "SELECT value FROM meta WHERE key='schema_version'");
  if (!v.step()) return 0;  // a new file
  const auto value = v.column(0);
  const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
  int found = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), found);
  if (ec != std::errc() || end != text.data() + text.size())
    throw DatabaseError(DatabaseError::Kind::kOther,
                        fmt::format("{}: its schema_version is '{}', not a number (a damaged file, or not an "
                                    "opcost database)",
                                    path_, text));
  if (found > kSchemaVersion)
    throw DatabaseError(
        DatabaseError::Kind::kOther,
        fmt::format("{}: written by a newer opcost (schema {} > {}); upgrade opcost", path_, found, kSchemaVersion));
  return found;
}

void Database::check_writable() {
  // A change rolled back at once: it needs the write lock and the journal beside the file, as
  // every insert does, so a file or directory that cannot be written fails here, before a
  // single measurement is made and thrown away.
  exec("BEGIN IMMEDIATE;");
  try {
    exec("UPDATE meta SET value = value WHERE key = 'schema_version';");
  } catch (...) {
    if (!sqlite3_get_autocommit(db_)) sqlite3_exec(db_, "ROLLBACK;", nullptr, nullptr, nullptr);
    throw;
  }
  exec("ROLLBACK;");
}

Database::~Database() { sqlite3_close(db_); }

void Database::exec(const std::string& sql) const {
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK)
    throw_sqlite(db_, path_, access_ == Access::kReadOnly ? "cannot read" : "cannot write");
}

int64_t Database::insert(const Measurement& m, const std::function<void(int64_t)>& also) {
  const nlohmann::json values = row_values(m);
  std::string names, marks;
  for (const auto& [name, type] : columns()) {
    names += (names.empty() ? "" : ", ") + std::string(name);
    marks += marks.empty() ? "?" : ", ?";
  }
  return in_transaction(db_, path_, [&] {
    Stmt s(db_, path_, fmt::format("INSERT INTO measurements ({}) VALUES ({});", names, marks));
    int i = 1;
    for (const auto& [name, type] : columns()) {
      if (std::string(name) == "result_json")
        s.bind(i++, to_json(m).dump());
      else
        s.bind(i++, values.at(name));
    }
    s.step();
    const int64_t id = sqlite3_last_insert_rowid(db_);
    if (also) also(id);
    return id;
  });
}

static nlohmann::json document_of(Stmt& s, int id_col, int json_col) {
  auto doc = nlohmann::json::parse(s.column(json_col).get<std::string>());
  doc["db_id"] = s.column(id_col);
  return doc;
}

std::optional<nlohmann::json> Database::get(int64_t id) const {
  Stmt s(db_, path_, "SELECT id, result_json FROM measurements WHERE id = ?");
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return document_of(s, 0, 1);
}

std::optional<nlohmann::json> Database::lookup(const Key& k, bool allow_flagged) const {
  // A file opened read-only is not migrated: one from before autocast has no such column.
  const auto present = present_columns();
  const bool has_autocast = std::find(present.begin(), present.end(), "autocast") != present.end();
  Stmt s(db_, path_,
         fmt::format("SELECT id, result_json FROM measurements WHERE op=? AND overload=? AND args_hash=? "
                     "AND device_name=? AND cache_mode=? AND {}=? ORDER BY (flags = '') DESC, id DESC LIMIT 1",
                     has_autocast ? "autocast" : "''"));
  s.bind(1, k.op);
  s.bind(2, k.overload);
  s.bind(3, k.args_hash);
  s.bind(4, k.device_name);
  s.bind(5, k.cache_mode);
  s.bind(6, k.autocast);
  if (!s.step()) return std::nullopt;
  auto doc = document_of(s, 0, 1);
  if (!allow_flagged && !doc["flags"].empty()) return std::nullopt;
  return doc;
}

std::vector<Database::Summary> Database::list(const std::string& op_filter, int limit) const {
  Stmt s(db_, path_,
         "SELECT id, created_at, op, overload, args, device_name, cache_mode, flags, time_mean_us, "
         "time_ci95_low_us, time_ci95_high_us, energy_per_call_mJ, energy_ci95_low_mJ, "
         "energy_ci95_high_mJ, time_samples FROM measurements WHERE (?1 = '' OR op LIKE '%' || ?1 || '%') "
         "ORDER BY id DESC LIMIT ?2");
  s.bind(1, op_filter);
  s.bind(2, limit);
  std::vector<Summary> out;
  while (s.step()) {
    Summary r;
    r.id = s.column(0).get<int64_t>();
    r.created_at = s.column(1).get<std::string>();
    r.op = s.column(2).get<std::string>();
    r.overload = s.column(3).get<std::string>();
    r.args = s.column(4).get<std::string>();
    r.device_name = s.column(5).is_null() ? "" : s.column(5).get<std::string>();
    r.cache_mode = s.column(6).is_null() ? "" : s.column(6).get<std::string>();
    r.flags = s.column(7).is_null() ? "" : s.column(7).get<std::string>();
    r.time_us = s.column(8).get<double>();
    // One sample has no interval: none, never a misleading 0.
    if (s.column(14).is_number() && s.column(14).get<int64_t>() >= 2 && r.time_us > 0)
      r.time_rel_ci = (s.column(10).get<double>() - s.column(9).get<double>()) / 2 / r.time_us;
    if (!s.column(11).is_null()) {
      r.energy_mJ = s.column(11).get<double>();
      r.energy_rel_ci = (s.column(13).get<double>() - s.column(12).get<double>()) / 2 / *r.energy_mJ;
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::size_t Database::count() const {
  Stmt s(db_, path_, "SELECT COUNT(*) FROM measurements");
  s.step();
  return std::size_t(s.column(0).get<int64_t>());
}

static std::string csv_field(const nlohmann::json& v) {
  if (v.is_null()) return "";
  std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

void Database::export_csv(OutputFile& out, const ExtraColumns& extra) const {
  // By name, in columns() order: ALTER TABLE appends a migrated file's newer columns at the
  // end, so SELECT * would put values under the wrong header. A column an unmigrated
  // (read-only) file lacks is written empty.
  const auto present = present_columns();
  std::string header = "id", select = "id";
  for (const auto& [name, type] : columns()) {
    if (std::string(name) == "result_json") continue;
    header += fmt::format(",{}", name);
    const bool has = std::find(present.begin(), present.end(), name) != present.end();
    select += has ? fmt::format(", {}", name) : ", NULL";
  }
  for (const auto& name : extra.names) header += "," + csv_field(name);
  out.write(header + "\n");
  Stmt s(db_, path_, fmt::format("SELECT {} FROM measurements ORDER BY id", select));
  const int n = sqlite3_column_count(s.get());
  std::string line;
  while (s.step()) {
    std::optional<std::vector<nlohmann::json>> more;
    if (extra.values && !(more = extra.values(s.column(0).get<int64_t>()))) continue;
    line.clear();
    for (int i = 0; i < n; ++i) line += (i ? "," : "") + csv_field(s.column(i));
    if (more)
      for (const auto& v : *more) line += "," + csv_field(v);
    out.write(line + "\n");
  }
}

void Database::export_json(OutputFile& out, const ExtraColumns& extra) const {
  // Streamed a document at a time: a large database never has to fit in memory twice.
  Stmt s(db_, path_, "SELECT id, result_json FROM measurements ORDER BY id");
  bool first = true;
  out.write("[");
  while (s.step()) {
    std::optional<std::vector<nlohmann::json>> more;
    if (extra.values && !(more = extra.values(s.column(0).get<int64_t>()))) continue;
    nlohmann::json doc = document_of(s, 0, 1);
    if (more)
      for (std::size_t i = 0; i < extra.names.size() && i < more->size(); ++i) doc[extra.names[i]] = (*more)[i];
    out.write(first ? "\n" : ",\n");
    out.write(doc.dump());
    first = false;
  }
  out.write(first ? "]\n" : "\n]\n");
}

}  // namespace opcost
