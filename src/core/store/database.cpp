#include "core/store/database.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <strings.h>
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
#include "core/store/measurement_record.h"
#include "core/store/sql_connection.h"
#include "core/store/sweep_state.h"

namespace opcost {

namespace {

// 1: the first files (some without the autocast column); 2: every column of the record's
// table, the version written once a file is migrated; 3: the sweep tables
// (core/store/sweep_state.h); 4: waits_for_device (read once from the method's note), settings
// and settings_key (core/store/measurement_record.h); 5: device_work and the host time's
// interval (host_ci95_low_us, host_ci95_high_us), NULL in older rows.
constexpr int kSchemaVersion = 5;

bool has_column(const std::vector<std::string>& present, const std::string& name) {
  return std::find(present.begin(), present.end(), name) != present.end();
}

// The measurements' columns as the database lists them, in measurement_columns()' spelling: PostgreSQL
// folds unquoted names to lower case (energy_per_call_mJ is energy_per_call_mj there).
std::vector<std::string> stored_columns(SqlConnection& c) {
  std::vector<std::string> names;
  for (std::string name : c.columns("measurements")) {
    for (const auto& known : measurement_columns())
      if (strcasecmp(known.name.c_str(), name.c_str()) == 0) name = known.name;
    names.push_back(std::move(name));
  }
  return names;
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
                                const std::string& autocast, std::optional<std::string> settings_key) {
  return {op,
          overload,
          signature_hash(op, overload, canonical_args),
          device_name,
          cache_mode,
          autocast,
          std::move(settings_key)};
}

Database::Database(const std::string& location, Access access, bool create_parent) : path_(display_location(location)) {
  namespace fs = std::filesystem;
  if (location.empty())
    throw std::invalid_argument(fmt::format("--db: the path is empty; give a file, or leave --db out for {}",
                                            display_location(default_path())));
  const SqlAccess sql_access = access == Access::kReadOnly ? SqlAccess::kReadOnly : SqlAccess::kReadWrite;
  if (is_postgres_url(location)) {
    conn_ = open_postgres(location, sql_access);
  } else {
    std::error_code ec;
    const fs::path parent = fs::path(location).parent_path();
    if (access == Access::kReadOnly) {
      if (!fs::exists(location, ec))
        throw std::invalid_argument(
            fmt::format("{}: no database there (nothing was measured into it; check --db or $OPCOST_DB)", location));
    } else if (!parent.empty() && !fs::is_directory(parent, ec)) {
      if (!create_parent)
        throw std::invalid_argument(fmt::format(
            "{}: the directory {} does not exist (create it, or choose another --db)", location, parent.string()));
      fs::create_directories(parent, ec);
      if (ec)
        throw DatabaseError(DatabaseError::Kind::kReadOnly, fmt::format("{}: cannot create the directory {}: {}",
                                                                        location, parent.string(), ec.message()));
    }
    conn_ = open_sqlite(location, sql_access);
  }
  if (access == Access::kReadWrite) {
    conn_->with_schema_lock([&] { migrate(); });
    check_writable();
  } else {
    present_ = stored_columns(*conn_);
    if (present_.empty())
      throw DatabaseError(DatabaseError::Kind::kUnusable,
                          fmt::format("{}: has no measurements table (is it an opcost database?)", path_));
    check_schema_version();
  }
}

bool Database::exists(const std::string& location) {
  if (!is_postgres_url(location)) return std::filesystem::exists(location);
  return open_postgres(location, SqlAccess::kReadOnly)->has_table("measurements");
}

namespace {

// A column's type in the engine's words: 64-bit integers and doubles on both.
std::string column_type(const std::string& type, const SqlDialect& d) {
  if (type.rfind("INTEGER", 0) == 0) return d.integer + type.substr(7);
  if (type.rfind("REAL", 0) == 0) return d.real + type.substr(4);
  return type;
}

}  // namespace

void Database::migrate() {
  const SqlDialect& d = conn_->dialect();
  std::string cols;
  for (const auto& [name, type] : measurement_columns()) cols += fmt::format(", {} {}", name, column_type(type, d));
  conn_->exec(fmt::format("CREATE TABLE IF NOT EXISTS measurements (id {}{});", d.id_column, cols));
  // A database from an older opcost lacks the newer columns: add them (old rows get the
  // default). They land at the end of the table, so everything reads columns by name.
  present_ = stored_columns(*conn_);
  for (const auto& [name, type] : measurement_columns())
    if (!has_column(present_, name)) {
      conn_->exec(fmt::format("ALTER TABLE measurements ADD COLUMN {} {};", name, column_type(type, d)));
      present_.push_back(name);
    }
  conn_->exec(
      "CREATE INDEX IF NOT EXISTS measurements_key ON measurements(op, overload, args_hash, device_name, "
      "cache_mode);");
  conn_->exec("CREATE INDEX IF NOT EXISTS measurements_settings ON measurements(settings_key);");
  conn_->exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);");
  create_sweep_tables(*conn_);
  upgrade_documents();
  if (check_schema_version() != kSchemaVersion)
    conn_->exec(fmt::format(
        "INSERT INTO meta VALUES ('schema_version', '{}') ON CONFLICT(key) DO UPDATE SET value = excluded.value;",
        kSchemaVersion));
}

void Database::upgrade_documents() {
  // Rows stored before schema 4 (waits_for_device NULL) get the field read from the method's
  // note, in their column and their document: read once here, never searched for again. In
  // batches, each its own transaction, so that a huge database is never held in memory; every
  // batch sets the column, so the loop ends.
  constexpr int kBatch = 1000;
  for (;;) {
    std::vector<std::pair<int64_t, nlohmann::json>> batch;
    auto s = conn_->query(
        "SELECT id, result_json FROM measurements WHERE waits_for_device IS NULL ORDER BY id LIMIT ?1", {kBatch});
    while (s->step()) {
      const int64_t id = s->column(0).get<int64_t>();
      nlohmann::json doc = nlohmann::json::parse(s->column(1).get<std::string>(), nullptr, false);
      if (doc.is_discarded() || !doc.is_object())
        throw DatabaseError(DatabaseError::Kind::kUnusable,
                            fmt::format("{}: row {} holds no readable result document (a damaged file); copy the "
                                        "other rows out with `opcost db copy`",
                                        path_, id));
      upgrade_document(doc);
      batch.emplace_back(id, std::move(doc));
    }
    s.reset();
    if (batch.empty()) return;
    in_transaction(*conn_, [&] {
      auto u = conn_->prepare("UPDATE measurements SET waits_for_device = ?1, result_json = ?2 WHERE id = ?3");
      for (const auto& [id, doc] : batch) {
        u->reset();
        u->bind_all({doc.at("waits_for_device").get<bool>() ? 1 : 0, doc.dump(), id});
        u->step();
      }
      return 0;
    });
  }
}

int Database::check_schema_version() const {
  auto v = conn_->prepare("SELECT value FROM meta WHERE key='schema_version'");
  if (!v->step()) return 0;  // a new database
  const auto value = v->column(0);
  const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
  int found = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), found);
  if (ec != std::errc() || end != text.data() + text.size())
    throw DatabaseError(DatabaseError::Kind::kUnusable,
                        fmt::format("{}: its schema_version is '{}', not a number (a damaged file, or not an "
                                    "opcost database)",
                                    path_, text));
  if (found > kSchemaVersion)
    throw DatabaseError(
        DatabaseError::Kind::kUnusable,
        fmt::format("{}: written by a newer opcost (schema {} > {}); upgrade opcost", path_, found, kSchemaVersion));
  return found;
}

void Database::check_writable() {
  // A change rolled back at once: it needs the write lock (and, for a file, the journal beside
  // it), as every insert does, so a database that cannot be written fails here, before a single
  // measurement is made and thrown away.
  // The change must be real: SQLite skips a write that leaves a row's bytes as they were (an
  // UPDATE of a value to itself), and would then never open the journal, which a read-only
  // directory refuses although the file itself is writable.
  conn_->begin();
  try {
    conn_->exec("DELETE FROM meta WHERE key = 'opcost_write_check';");
    conn_->exec("INSERT INTO meta (key, value) VALUES ('opcost_write_check', '');");
  } catch (...) {
    conn_->rollback();
    throw;
  }
  conn_->rollback();
}

Database::~Database() = default;

int64_t Database::insert(const Measurement& m, const std::function<void(int64_t)>& also) {
  nlohmann::json values = column_values(m);
  values[kDocumentColumn] = document_of(m).dump();
  return insert_values(values, also);
}

int64_t Database::insert_values(const nlohmann::json& values, const std::function<void(int64_t)>& also) {
  // The columns `values` has: a row copied from an older database lacks the newer ones, which
  // get their defaults.
  std::vector<std::string> present;
  std::string names, marks;
  for (const auto& [name, type] : measurement_columns())
    if (values.contains(name)) {
      present.push_back(name);
      names += (names.empty() ? "" : ", ") + std::string(name);
      marks += fmt::format("{}?{}", marks.empty() ? "" : ", ", present.size());
    }
  return in_transaction(*conn_, [&] {
    auto s = conn_->prepare(
        fmt::format("INSERT INTO measurements ({}) VALUES ({}){};", names, marks, conn_->dialect().returning_id));
    for (std::size_t i = 0; i < present.size(); ++i) s->bind(int(i) + 1, values.at(present[i]));
    const int64_t id = conn_->inserted_id(*s);
    if (also) also(id);
    return id;
  });
}

void Database::each_row(const std::function<void(const nlohmann::json& row)>& visit) const {
  std::vector<std::string> names{"id"};
  for (const auto& name : present_)
    if (name != "id") names.push_back(name);
  auto s = conn_->prepare(fmt::format("SELECT {} FROM measurements ORDER BY id", fmt::join(names, ", ")));
  while (s->step()) {
    nlohmann::json row = nlohmann::json::object();
    for (std::size_t i = 0; i < names.size(); ++i) row[names[i]] = s->column(int(i));
    visit(row);
  }
}

Database::Copied Database::insert_row(const nlohmann::json& source_row, const std::function<void(int64_t)>& also) {
  // A row of an older (unmigrated) database: upgraded as the migration upgrades stored rows, so
  // that it compares equal to its copy made before, and reads back as every row here does.
  nlohmann::json row = source_row;
  if (!row.contains("waits_for_device") || row["waits_for_device"].is_null()) {
    auto doc = nlohmann::json::parse(row.value(kDocumentColumn, std::string()), nullptr, false);
    if (doc.is_object()) {
      upgrade_document(doc);
      row["waits_for_device"] = doc["waits_for_device"].get<bool>() ? 1 : 0;
      row[kDocumentColumn] = doc.dump();
    }
  }
  // By the signature first, which the measurements' index leads with: a copy of n rows looks up
  // the few rows of each signature, not all n.
  auto same = conn_->query(
      "SELECT id FROM measurements WHERE op = ?1 AND overload = ?2 AND args_hash = ?3 AND created_at = ?4 AND "
      "result_json = ?5 LIMIT 1",
      {row.value("op", ""), row.value("overload", ""), row.value("args_hash", ""), row.value("created_at", ""),
       row.value("result_json", "")});
  if (same->step()) return {same->column(0).get<int64_t>(), false};
  return {insert_values(row, also), true};
}

// The stored document of the statement's row, with its id; a row stored before schema 4 and
// not migrated (a file opened read-only) gets waits_for_device from its note.
static nlohmann::json stored_document(SqlStatement& s, int id_col, int json_col, const std::string& where) {
  const int64_t id = s.column(id_col).get<int64_t>();
  auto doc = nlohmann::json::parse(s.column(json_col).get<std::string>(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    throw DatabaseError(DatabaseError::Kind::kUnusable,
                        fmt::format("{}: row {} holds no readable result document (a damaged file)", where, id));
  upgrade_document(doc);
  doc["db_id"] = id;
  return doc;
}

// The typed record of a stored document; a document that does not read back is a damaged row.
static Measurement stored_record(const nlohmann::json& doc, const std::string& where) {
  try {
    Measurement m = from_json(doc);
    m.db_id = doc.at("db_id").get<int64_t>();
    return m;
  } catch (const std::invalid_argument& e) {
    throw DatabaseError(DatabaseError::Kind::kUnusable,
                        fmt::format("{}: row {}: {}", where, doc.at("db_id").get<int64_t>(), e.what()));
  }
}

std::optional<nlohmann::json> Database::get_document(int64_t id) const {
  auto s = conn_->prepare("SELECT id, result_json FROM measurements WHERE id = ?1");
  s->bind(1, id);
  if (!s->step()) return std::nullopt;
  return stored_document(*s, 0, 1, path_);
}

std::optional<Measurement> Database::get(int64_t id) const {
  const auto doc = get_document(id);
  if (!doc) return std::nullopt;
  return stored_record(*doc, path_);
}

std::optional<Measurement> Database::lookup(const Key& k, bool allow_flagged) const {
  // The identity fields of the record, bound from the key. A file opened read-only is not
  // migrated: one from before autocast has no such column (every row ran without), one from
  // before settings has no settings_key (every row matches any settings).
  Measurement probe;
  probe.op = k.op;
  probe.overload = k.overload;
  probe.args_hash = k.args_hash;
  probe.env.device_name = k.device_name;
  probe.cache_mode = k.cache_mode;
  probe.autocast = k.autocast;
  std::string where;
  std::vector<nlohmann::json> values;
  for (const auto& f : measurement_fields()) {
    if (!f.identity) continue;
    const bool present = has_column(present_, f.sql_column);
    if (f.sql_column == "settings_key") {
      if (!k.settings_key || !present) continue;
      values.push_back(*k.settings_key);
      where += fmt::format(" AND (settings_key = ?{} OR settings_key IS NULL)", values.size());
      continue;
    }
    values.push_back(f.value(probe));
    where += fmt::format(" AND {} = ?{}", present ? f.sql_column : "''", values.size());
  }
  auto s = conn_->query(fmt::format("SELECT id, result_json, flags FROM measurements WHERE {} ORDER BY (flags = '') "
                                    "DESC, id DESC LIMIT 1",
                                    where.substr(5)),
                        values);
  if (!s->step()) return std::nullopt;
  const auto flags = s->column(2);
  if (!allow_flagged && flags.is_string() && !flags.get<std::string>().empty()) return std::nullopt;
  return stored_record(stored_document(*s, 0, 1, path_), path_);
}

std::vector<Database::StoredCall> Database::calls_of(const Key& k, std::size_t limit) const {
  const bool has_autocast = std::find(present_.begin(), present_.end(), "autocast") != present_.end();
  auto s = conn_->query(
      fmt::format("SELECT id, args, flags FROM measurements WHERE op=?1 AND overload=?2 AND device_name=?3 AND "
                  "cache_mode=?4 AND {}=?5 ORDER BY (flags = '') DESC, id DESC LIMIT ?6",
                  has_autocast ? "autocast" : "''"),
      {k.op, k.overload, k.device_name, k.cache_mode, k.autocast, int64_t(limit)});
  std::vector<StoredCall> out;
  while (s->step()) {
    const auto flags = s->column(2);
    out.push_back({s->column(0).get<int64_t>(), s->column(1).get<std::string>(),
                   flags.is_string() && !flags.get<std::string>().empty()});
  }
  return out;
}

std::vector<Database::Summary> Database::list(const std::string& op_filter, int limit) const {
  auto s = conn_->query(
      "SELECT id, created_at, op, overload, args, device_name, cache_mode, flags, time_mean_us, "
      "time_ci95_low_us, time_ci95_high_us, energy_per_call_mJ, energy_ci95_low_mJ, "
      "energy_ci95_high_mJ, time_samples FROM measurements WHERE (?1 = '' OR op LIKE '%' || ?1 || '%') "
      "ORDER BY id DESC LIMIT ?2",
      {op_filter, limit});
  std::vector<Summary> out;
  auto text = [&](int i) { return s->column(i).is_null() ? std::string() : s->column(i).get<std::string>(); };
  while (s->step()) {
    Summary r;
    r.id = s->column(0).get<int64_t>();
    r.created_at = text(1);
    r.op = text(2);
    r.overload = text(3);
    r.args = text(4);
    r.device_name = text(5);
    r.cache_mode = text(6);
    r.flags = text(7);
    r.time_us = s->column(8).get<double>();
    // One sample has no interval: none, never a misleading 0.
    if (s->column(14).is_number() && s->column(14).get<int64_t>() >= 2 && r.time_us > 0)
      r.time_rel_ci = (s->column(10).get<double>() - s->column(9).get<double>()) / 2 / r.time_us;
    if (!s->column(11).is_null()) {
      r.energy_mJ = s->column(11).get<double>();
      r.energy_rel_ci = (s->column(13).get<double>() - s->column(12).get<double>()) / 2 / *r.energy_mJ;
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::size_t Database::count() const {
  auto s = conn_->prepare("SELECT COUNT(*) FROM measurements");
  s->step();
  return std::size_t(s->column(0).get<int64_t>());
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
  // By name, in columns() order: ALTER TABLE appends a migrated database's newer columns at the
  // end, so SELECT * would put values under the wrong header. A column an unmigrated
  // (read-only) file lacks is written empty.
  std::string header = "id", select = "id";
  for (const auto& [name, type] : measurement_columns()) {
    if (name == kDocumentColumn) continue;
    header += fmt::format(",{}", name);
    const bool has = std::find(present_.begin(), present_.end(), name) != present_.end();
    select += has ? fmt::format(", {}", name) : ", NULL";
  }
  for (const auto& name : extra.names) header += "," + csv_field(name);
  out.write(header + "\n");
  auto s = conn_->prepare(fmt::format("SELECT {} FROM measurements ORDER BY id", select));
  std::string line;
  while (s->step()) {
    std::optional<std::vector<nlohmann::json>> more;
    if (extra.values && !(more = extra.values(s->column(0).get<int64_t>()))) continue;
    line.clear();
    const int n = s->column_count();
    for (int i = 0; i < n; ++i) line += (i ? "," : "") + csv_field(s->column(i));
    if (more)
      for (const auto& v : *more) line += "," + csv_field(v);
    out.write(line + "\n");
  }
}

void Database::export_json(OutputFile& out, const ExtraColumns& extra) const {
  // Streamed a document at a time from a file: a large database never has to fit in memory
  // twice.
  auto s = conn_->prepare("SELECT id, result_json FROM measurements ORDER BY id");
  bool first = true;
  out.write("[");
  while (s->step()) {
    std::optional<std::vector<nlohmann::json>> more;
    if (extra.values && !(more = extra.values(s->column(0).get<int64_t>()))) continue;
    nlohmann::json doc = stored_document(*s, 0, 1, path_);
    if (more)
      for (std::size_t i = 0; i < extra.names.size() && i < more->size(); ++i) doc[extra.names[i]] = (*more)[i];
    out.write(first ? "\n" : ",\n");
    out.write(doc.dump());
    first = false;
  }
  out.write(first ? "]\n" : "\n]\n");
}

}  // namespace opcost
