#include "core/store/database.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "core/report/report.h"

namespace opcost {

namespace {

constexpr int kSchemaVersion = 1;

// Columns besides id: name, SQL type. The result document rides along as result_json.
const std::vector<std::pair<const char*, const char*>>& columns() {
  static const std::vector<std::pair<const char*, const char*>> c = {
      {"created_at", "TEXT NOT NULL"},  {"opcost_version", "TEXT"}, {"op", "TEXT NOT NULL"},
      {"overload", "TEXT NOT NULL"},    {"args", "TEXT NOT NULL"},  {"args_hash", "TEXT NOT NULL"},
      {"dtype", "TEXT"},                {"device_kind", "TEXT"},    {"device_name", "TEXT"},
      {"device_uuid", "TEXT"},          {"driver_version", "TEXT"}, {"cuda_version", "TEXT"},
      {"torch_version", "TEXT"},        {"cache_mode", "TEXT"},     {"method", "TEXT"},
      {"autocast", "TEXT NOT NULL DEFAULT ''"},
      {"time_median_us", "REAL"},       {"time_mean_us", "REAL"},   {"time_clipped_mean_us", "REAL"},
      {"time_min_us", "REAL"},          {"time_stdev_us", "REAL"},  {"time_ci95_low_us", "REAL"},
      {"time_ci95_high_us", "REAL"},    {"time_samples", "INTEGER"}, {"stop_reason", "TEXT"},
      {"host_us_per_call", "REAL"},     {"host_cpu_us_per_call", "REAL"},
      {"energy_per_call_mJ", "REAL"},   {"energy_above_idle_mJ", "REAL"},
      {"energy_ci95_low_mJ", "REAL"},   {"energy_ci95_high_mJ", "REAL"},
      {"energy_unavailable", "TEXT"},   {"power_W", "REAL"},        {"idle_power_W", "REAL"},
      {"loop_wall_us_per_call", "REAL"},
      {"sm_clock_MHz", "INTEGER"},      {"mem_clock_MHz", "INTEGER"},
      {"temperature_C", "INTEGER"},     {"throttle_reasons", "INTEGER"}, {"flags", "TEXT"},
      {"calls", "INTEGER"},             {"seconds", "REAL"},        {"result_json", "TEXT NOT NULL"},
  };
  return c;
}

class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr) != SQLITE_OK)
      throw std::runtime_error(fmt::format("SQLite: {} in: {}", sqlite3_errmsg(db), sql));
  }
  ~Stmt() { sqlite3_finalize(s_); }
  sqlite3_stmt* get() { return s_; }
  void bind(int i, const nlohmann::json& v) {
    if (v.is_null()) sqlite3_bind_null(s_, i);
    else if (v.is_number_integer() || v.is_boolean()) sqlite3_bind_int64(s_, i, v.get<int64_t>());
    else if (v.is_number()) sqlite3_bind_double(s_, i, v.get<double>());
    else sqlite3_bind_text(s_, i, v.get<std::string>().c_str(), -1, SQLITE_TRANSIENT);
  }
  bool step() {
    const int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw std::runtime_error(std::string("SQLite: ") + sqlite3_errmsg(sqlite3_db_handle(s_)));
  }
  nlohmann::json column(int i) {
    switch (sqlite3_column_type(s_, i)) {
      case SQLITE_INTEGER: return sqlite3_column_int64(s_, i);
      case SQLITE_FLOAT: return sqlite3_column_double(s_, i);
      case SQLITE_NULL: return nullptr;
      default: return std::string(reinterpret_cast<const char*>(sqlite3_column_text(s_, i)));
    }
  }

 private:
  sqlite3_stmt* s_ = nullptr;
};

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
  return {
      {"created_at", m.created_at}, {"opcost_version", m.env.opcost_version}, {"op", m.op},
      {"overload", m.overload}, {"args", m.args}, {"args_hash", m.args_hash}, {"dtype", m.dtype},
      {"device_kind", m.env.device_kind}, {"device_name", m.env.device_name},
      {"device_uuid", m.env.device_uuid}, {"driver_version", m.env.driver_version},
      {"cuda_version", m.env.cuda_version}, {"torch_version", m.env.torch_version},
      {"cache_mode", m.cache_mode}, {"method", m.method}, {"autocast", m.autocast}, {"time_median_us", t.median},
      {"time_mean_us", t.mean}, {"time_clipped_mean_us", t.clipped_mean}, {"time_min_us", t.min},
      {"time_stdev_us", t.stdev}, {"time_ci95_low_us", t.ci95_low},
      {"time_ci95_high_us", t.ci95_high}, {"time_samples", t.n}, {"stop_reason", m.time.stop_reason},
      {"host_us_per_call", m.time.host_us_per_call},
      {"host_cpu_us_per_call", m.time.host_cpu_us_per_call},
      {"energy_per_call_mJ", energy(e.per_call_mJ.mean)},
      {"energy_above_idle_mJ", energy(e.above_idle_mJ)},
      {"energy_ci95_low_mJ", energy(e.per_call_mJ.ci95_low)},
      {"energy_ci95_high_mJ", energy(e.per_call_mJ.ci95_high)},
      {"energy_unavailable", e.available ? nlohmann::json(nullptr) : nlohmann::json(e.unavailable_reason)},
      {"power_W", energy(e.power_W)}, {"idle_power_W", opt(e.idle_power_W)},
      {"loop_wall_us_per_call", energy(e.wall_us_per_call)},
      {"sm_clock_MHz", opt(m.after.sm_clock_MHz)}, {"mem_clock_MHz", opt(m.after.mem_clock_MHz)},
      {"temperature_C", opt(m.after.temperature_C)},
      {"throttle_reasons", m.during.throttle_reasons_seen}, {"flags", flags},
      {"calls", m.total_calls}, {"seconds", m.total_seconds}};
}

}  // namespace

std::string Database::default_path() {
  if (const char* p = std::getenv("OPCOST_DB"); p && *p) return p;
  std::filesystem::path base;
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) base = x;
  else if (const char* h = std::getenv("HOME"); h && *h) base = std::filesystem::path(h) / ".local/share";
  else base = ".";
  return (base / "opcost" / "opcost.db").string();
}

Database::Database(const std::string& path) : path_(path) {
  const auto parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    const std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw std::runtime_error(fmt::format("{}: cannot open the database: {} (use --db PATH)", path, msg));
  }
  sqlite3_busy_timeout(db_, 5000);
  try {
    // Rollback journal with full sync: every committed row survives a killed process, and
    // the database stays one self-contained file.
    exec("PRAGMA journal_mode=DELETE; PRAGMA synchronous=FULL;");
    std::string cols;
    for (const auto& [name, type] : columns()) cols += fmt::format(", {} {}", name, type);
    exec(fmt::format("CREATE TABLE IF NOT EXISTS measurements (id INTEGER PRIMARY KEY AUTOINCREMENT{});", cols));
    // A file from an older opcost lacks the newer columns: add them (old rows get the default).
    std::set<std::string> present;
    for (Stmt info(db_, "PRAGMA table_info(measurements)"); info.step();) present.insert(info.column(1).get<std::string>());
    for (const auto& [name, type] : columns())
      if (!present.count(name)) exec(fmt::format("ALTER TABLE measurements ADD COLUMN {} {};", name, type));
    exec("CREATE INDEX IF NOT EXISTS measurements_key ON measurements(op, overload, args_hash, device_name, cache_mode);");
    exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);");
    Stmt v(db_, "SELECT value FROM meta WHERE key='schema_version'");
    if (v.step()) {
      const int found = std::stoi(v.column(0).get<std::string>());
      if (found > kSchemaVersion)
        throw std::runtime_error(fmt::format("{}: written by a newer opcost (schema {} > {})", path, found, kSchemaVersion));
    } else {
      exec(fmt::format("INSERT INTO meta VALUES ('schema_version', '{}');", kSchemaVersion));
    }
  } catch (const std::runtime_error& e) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw std::runtime_error(fmt::format("{}: {} (is it an opcost database?)", path, e.what()));
  }
}

Database::~Database() { sqlite3_close(db_); }

void Database::exec(const std::string& sql) const {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw std::runtime_error("SQLite: " + msg);
  }
}

int64_t Database::insert(const Measurement& m) {
  const nlohmann::json values = row_values(m);
  std::string names, marks;
  for (const auto& [name, type] : columns()) {
    names += (names.empty() ? "" : ", ") + std::string(name);
    marks += marks.empty() ? "?" : ", ?";
  }
  exec("BEGIN IMMEDIATE;");
  try {
    Stmt s(db_, fmt::format("INSERT INTO measurements ({}) VALUES ({});", names, marks));
    int i = 1;
    for (const auto& [name, type] : columns()) {
      if (std::string(name) == "result_json") s.bind(i++, to_json(m).dump());
      else s.bind(i++, values.at(name));
    }
    s.step();
    const int64_t id = sqlite3_last_insert_rowid(db_);
    exec("COMMIT;");
    return id;
  } catch (...) {
    exec("ROLLBACK;");
    throw;
  }
}

static nlohmann::json document_of(Stmt& s, int id_col, int json_col) {
  auto doc = nlohmann::json::parse(s.column(json_col).get<std::string>());
  doc["db_id"] = s.column(id_col);
  return doc;
}

std::optional<nlohmann::json> Database::get(int64_t id) const {
  Stmt s(db_, "SELECT id, result_json FROM measurements WHERE id = ?");
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return document_of(s, 0, 1);
}

std::optional<nlohmann::json> Database::lookup(const Key& k, bool allow_flagged) const {
  Stmt s(db_,
         "SELECT id, result_json FROM measurements WHERE op=? AND overload=? AND args_hash=? "
         "AND device_name=? AND cache_mode=? AND autocast=? ORDER BY (flags = '') DESC, id DESC LIMIT 1");
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
  Stmt s(db_,
         "SELECT id, created_at, op, overload, args, device_name, cache_mode, flags, time_mean_us, "
         "time_ci95_low_us, time_ci95_high_us, energy_per_call_mJ, energy_ci95_low_mJ, "
         "energy_ci95_high_mJ FROM measurements WHERE (?1 = '' OR op LIKE '%' || ?1 || '%') "
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
    r.time_rel_ci = r.time_us > 0 ? (s.column(10).get<double>() - s.column(9).get<double>()) / 2 / r.time_us : 0;
    if (!s.column(11).is_null()) {
      r.energy_mJ = s.column(11).get<double>();
      r.energy_rel_ci = (s.column(13).get<double>() - s.column(12).get<double>()) / 2 / *r.energy_mJ;
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::size_t Database::count() const {
  Stmt s(db_, "SELECT COUNT(*) FROM measurements");
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

void Database::export_csv(std::ostream& out) const {
  out << "id";
  for (const auto& [name, type] : columns())
    if (std::string(name) != "result_json") out << "," << name;
  out << "\n";
  Stmt s(db_, "SELECT * FROM measurements ORDER BY id");
  const int n = sqlite3_column_count(s.get());
  while (s.step()) {
    bool first = true;
    for (int i = 0; i < n; ++i) {
      if (std::string(sqlite3_column_name(s.get(), i)) == "result_json") continue;
      out << (first ? "" : ",") << csv_field(s.column(i));
      first = false;
    }
    out << "\n";
  }
}

void Database::export_json(std::ostream& out) const {
  Stmt s(db_, "SELECT id, result_json FROM measurements ORDER BY id");
  nlohmann::json all = nlohmann::json::array();
  while (s.step()) all.push_back(document_of(s, 0, 1));
  out << all.dump(2) << "\n";
}

}  // namespace opcost
