// The stored record's field table (core/store/measurement_record.h): what it derives (columns,
// document, reader) agrees with itself, a measurement survives the database field by field,
// an older database migrates, and the identity key's settings behave as documented.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/report/report.h"
#include "core/spec/op_call.h"
#include "core/store/database.h"
#include "core/store/measurement_record.h"
#include "core/store/sql_connection.h"
#include "test_databases.h"

#include <unistd.h>

using namespace opcost;
using nlohmann::json;

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

// Every stored member set to a value unlike its default, so that a field the database or the
// reader dropped shows as a difference.
Measurement full_sample() {
  Measurement m;
  m.created_at = "2026-11-22T08:00:00Z";
  m.op = "aten::addmm";
  m.overload = "out";
  m.args = "self=f32[8] mat1=f32[4,8] mat2=f32[8,8]";
  m.args_hash = signature_hash(m.op, m.overload, m.args);
  m.dtype = "f32";
  m.cache_mode = "cold";
  m.autocast = "bf16";
  m.method = std::string("wall clock") + kWaitsForDeviceNote;
  m.waits_for_device = true;
  m.settings = {{"seed", "7"}, {"time_target", "0.02"}};
  m.settings_key = "5f3a9c";
  m.env = {"cuda", "NVIDIA H100 80GB HBM3", "GPU-1234", "580.1", "12.8", "2.11.0", "0.9.0", "node-7"};
  auto& t = m.time.per_call_us;
  t.n = 17;
  t.mean = 12.25;
  t.median = 12.0;
  t.clipped_mean = 12.1;
  t.min = 11.5;
  t.stdev = 0.75;
  t.ci95_low = 11.875;
  t.ci95_high = 12.625;
  m.time.stop_reason = "converged";
  m.time.calls_per_sample = 64;
  m.time.host_us_per_call = 4.5;
  m.time.host_cpu_us_per_call = 4.25;
  m.time.host_bound_samples = 3;
  m.device_work = "none-no-kernel";
  m.time.host_us.n = 21;
  m.time.host_us.ci95_low = 4.375;
  m.time.host_us.ci95_high = 4.625;
  auto& e = m.energy;
  e.available = true;
  e.source = "nvml-energy-counter";
  e.per_call_mJ.mean = 2.5;
  e.per_call_mJ.ci95_low = 2.375;
  e.per_call_mJ.ci95_high = 2.625;
  e.per_call_mJ.n = 9;
  e.windows = 9;
  e.above_idle_mJ = 1.75;
  e.power_W = 412.5;
  e.idle_power_W = 71.25;
  e.wall_us_per_call = 13.5;
  e.counter_period_s = 0.02;
  e.effective_windows = 7.5;
  e.stalled_windows = 1;
  e.seconds = 1.25;
  m.before = {1980u, 2619u, 41u, 700.0, uint64_t(0), 0u};
  m.after = {1755u, 2619u, 58u, 700.0, uint64_t(4), 2u};  // 4: sw_power_cap
  m.during.sm_clock_min_MHz = 1700;
  m.during.sm_clock_max_MHz = 1980;
  m.during.temperature_max_C = 60;
  m.during.throttle_reasons_seen = 4 | 32;
  m.flags = {"throttled:sw_power_cap", "clock_changed:1700-1980MHz"};
  m.total_calls = 123456;
  m.total_seconds = 3.5;
  return m;
}

TEST(RecordFields, ColumnsAndPathsAreUniqueAndEveryStoredFieldReadsBack) {
  std::set<std::string> columns, paths, names;
  for (const auto& c : measurement_columns())
    EXPECT_TRUE(columns.insert(lower(c.name)).second) << "column twice (PostgreSQL folds case): " << c.name;
  for (const auto& f : measurement_fields()) {
    EXPECT_TRUE(names.insert(f.name).second) << "field twice: " << f.name;
    if (f.in_document()) EXPECT_TRUE(paths.insert(f.json_path.to_string()).second) << f.json_path.to_string();
    // A column is what queries and exports see: it must read back, not be derived.
    if (!f.sql_column.empty()) EXPECT_FALSE(f.derived()) << f.name;
    EXPECT_TRUE(f.in_document() || !f.sql_column.empty()) << f.name << " is stored nowhere";
  }
  EXPECT_EQ(measurement_columns().back().name, kDocumentColumn);
}

TEST(RecordFields, TheIdentityFieldsAreTheDatabaseKeys) {
  // Database::lookup binds these from a Database::Key: a field marked here that the key does
  // not carry would be matched against its default.
  std::set<std::string> identity;
  for (const auto& f : measurement_fields())
    if (f.identity) identity.insert(f.sql_column);
  EXPECT_EQ(identity, (std::set<std::string>{"op", "overload", "args_hash", "device_name", "cache_mode", "autocast",
                                             "settings_key"}));
}

TEST(RecordFields, EveryReadableFieldOfTheSampleIsSet) {
  // Guards the round trip below: a field left at its default would pass it vacuously.
  const Measurement m = full_sample(), blank;
  for (const auto& f : measurement_fields()) {
    if (f.derived() || f.presence == Presence::kWithoutEnergy || f.name == "db_id") continue;
    EXPECT_NE(f.value(m), f.value(blank)) << f.name;
  }
}

TEST(RecordDocument, ReadsBackEveryFieldItWrote) {
  const Measurement m = full_sample();
  const Measurement back = from_json(to_json(m));
  for (const auto& f : measurement_fields()) {
    if (f.name == "settings") continue;  // compared below: an object comes back in name order
    EXPECT_EQ(f.value(back), f.value(m)) << f.name;
  }
  EXPECT_EQ(back.settings, m.settings);  // the sample's names are in name order already
  // The derived values (rel_ci95) follow: the whole document is the same but for the windows.
  EXPECT_EQ(to_json(back), to_json(m));
}

TEST(RecordDocument, AWrongTypeNamesTheField) {
  json doc = to_json(full_sample());
  doc["time_us"]["mean"] = "fast";
  try {
    from_json(doc);
    FAIL() << "read a text as a time";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("time_mean_us"), std::string::npos) << e.what();
  }
  EXPECT_THROW(from_json(json::array()), std::invalid_argument);
  doc = to_json(full_sample());
  doc["time_us"]["samples"] = -3;  // a count cannot be negative
  EXPECT_THROW(from_json(doc), std::invalid_argument);
}

class RecordEngineTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    OPCOST_SKIP_WITHOUT_ENGINE(GetParam());
    db_.emplace(GetParam());
  }
  const std::string& location() const { return db_->location(); }
  std::optional<opcost::testing::TestDatabase> db_;
};
INSTANTIATE_TEST_SUITE_P(Engines, RecordEngineTest, ::testing::Values("sqlite", "postgres"));

TEST_P(RecordEngineTest, AMeasurementRoundTripsThroughARowFieldByField) {
  const Measurement m = full_sample();
  Measurement unavailable = full_sample();
  unavailable.energy = {};
  unavailable.energy.unavailable_reason = "NVML not loaded";
  unavailable.waits_for_device = false;
  unavailable.settings.clear();
  unavailable.settings_key.clear();
  int64_t id, id2;
  {
    Database db(location());
    id = db.insert(m);
    id2 = db.insert(unavailable);
  }
  const Database db(location(), Database::Access::kReadOnly);
  for (const auto& [want, row_id] : {std::pair{m, id}, std::pair{unavailable, id2}}) {
    const auto back = db.get(row_id);
    ASSERT_TRUE(back);
    EXPECT_EQ(back->db_id, row_id);
    for (const auto& f : measurement_fields())
      if (f.name != "db_id") EXPECT_EQ(f.value(*back), f.value(want)) << f.name << " of row " << row_id;
  }
  EXPECT_FALSE(db.get(id2)->energy.available);
  EXPECT_EQ(db.get(id2)->energy.unavailable_reason, "NVML not loaded");
  // The columns hold the same values (what queries and the CSV export read).
  auto s = db.connection().query(
      "SELECT waits_for_device, settings_key, settings, time_mean_us FROM measurements "
      "WHERE id = ?1",
      {id});
  ASSERT_TRUE(s->step());
  EXPECT_EQ(s->column(0), 1);
  EXPECT_EQ(s->column(1), "5f3a9c");
  EXPECT_EQ(json::parse(s->column(2).get<std::string>()), (json{{"seed", "7"}, {"time_target", "0.02"}}));
  EXPECT_DOUBLE_EQ(s->column(3).get<double>(), 12.25);
  // No settings recorded: NULL, as a row stored before settings were.
  auto none = db.connection().query("SELECT settings_key, settings FROM measurements WHERE id = ?1", {id2});
  ASSERT_TRUE(none->step());
  EXPECT_TRUE(none->column(0).is_null());
  EXPECT_TRUE(none->column(1).is_null());
}

TEST_P(RecordEngineTest, LookupWithAndWithoutASettingsKey) {
  Database db(location());
  Measurement legacy = full_sample(), first = full_sample(), second = full_sample();
  legacy.settings_key.clear();  // stored before settings were recorded
  legacy.flags.clear();
  first.settings_key = "k1";
  first.flags.clear();
  second.settings_key = "k2";
  second.flags.clear();
  const int64_t legacy_id = db.insert(legacy), first_id = db.insert(first), second_id = db.insert(second);
  auto key = Database::Key::of(legacy.op, legacy.overload, legacy.args, legacy.env.device_name, legacy.cache_mode,
                               legacy.autocast);
  ASSERT_FALSE(key.settings_key);
  EXPECT_EQ(db.lookup(key)->db_id, second_id);  // any settings: the newest
  key.settings_key = "k1";
  EXPECT_EQ(db.lookup(key)->db_id, first_id);  // exactly these (or a legacy row, older here)
  key.settings_key = "k2";
  EXPECT_EQ(db.lookup(key)->db_id, second_id);
  key.settings_key = "k3";
  EXPECT_EQ(db.lookup(key)->db_id, legacy_id);  // none made with k3: the legacy row matches any
  key.autocast = "";
  EXPECT_FALSE(db.lookup(key));  // the other identity fields still count
}

// The measurements table as schema 3 had it: the record's columns before waits_for_device,
// settings and settings_key (written out: this is history, not derived from today's table).
const char* const kSchema3Columns[][2] = {
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

// A database as opcost wrote it at schema 3, with one row whose method carries the note and
// one without. Returns their ids.
std::pair<int64_t, int64_t> make_schema3(const std::string& location, bool postgres) {
  auto c = postgres ? open_postgres(location, SqlAccess::kReadWrite) : open_sqlite(location, SqlAccess::kReadWrite);
  const SqlDialect& d = c->dialect();
  std::string cols;
  for (const auto& [name, type] : kSchema3Columns) {
    std::string t = type;
    if (t.rfind("REAL", 0) == 0) t = d.real + t.substr(4);
    if (t.rfind("INTEGER", 0) == 0) t = d.integer + t.substr(7);
    cols += fmt::format(", {} {}", name, t);
  }
  c->exec(fmt::format("CREATE TABLE measurements (id {}{});", d.id_column, cols));
  c->exec("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT); INSERT INTO meta VALUES ('schema_version', '3');");
  std::vector<int64_t> ids;
  for (bool waits : {true, false}) {
    Measurement m = full_sample();
    m.waits_for_device = false;  // schema 3 knew only the note
    m.settings.clear();
    m.settings_key.clear();
    m.device_work.clear();  // nor schema 5's fields
    m.time.host_us = {};
    m.flags.clear();
    if (!waits) m.method = "cuda events";
    m.time.per_call_us.mean = waits ? 5.0 : 6.0;
    json doc = to_json(m);
    for (const char* newer : {"waits_for_device", "settings", "settings_key", "device_work"}) doc.erase(newer);
    for (const char* newer : {"ci95_low", "ci95_high", "samples"}) doc["host_us_per_call"].erase(newer);
    auto s =
        c->prepare(fmt::format("INSERT INTO measurements (created_at, op, overload, args, args_hash, device_name, "
                               "cache_mode, method, autocast, time_mean_us, flags, result_json) VALUES (?1, ?2, "
                               "?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, '', ?11){}",
                               d.returning_id));
    s->bind_all({m.created_at, m.op, m.overload, m.args, m.args_hash, m.env.device_name, m.cache_mode, m.method,
                 m.autocast, m.time.per_call_us.mean, doc.dump()});
    ids.push_back(c->inserted_id(*s));
  }
  return {ids[0], ids[1]};
}

TEST_P(RecordEngineTest, ASchema3DatabaseMigratesAndReadsTheNoteOnce) {
  const auto [with_note, without_note] = make_schema3(location(), GetParam() == "postgres");
  {  // Read-only: not migrated, but read the same way.
    const Database old(location(), Database::Access::kReadOnly);
    EXPECT_TRUE(old.get(with_note)->waits_for_device);
    EXPECT_FALSE(old.get(without_note)->waits_for_device);
    auto key =
        Database::Key::of("aten::addmm", "out", full_sample().args, "NVIDIA H100 80GB HBM3", "cold", "bf16", "any");
    EXPECT_EQ(old.lookup(key)->db_id, without_note);  // no settings_key column: any key matches
  }
  Database db(location());  // migrates
  auto version = db.connection().query("SELECT value FROM meta WHERE key = 'schema_version'", {});
  ASSERT_TRUE(version->step());
  EXPECT_EQ(version->column(0), "5");
  auto s = db.connection().query(
      "SELECT id, waits_for_device, settings_key, device_work, host_ci95_low_us FROM measurements ORDER BY id", {});
  std::map<int64_t, json> waits;
  while (s->step()) {
    waits[s->column(0).get<int64_t>()] = s->column(1);
    EXPECT_TRUE(s->column(2).is_null());
    EXPECT_TRUE(s->column(3).is_null());  // schema 5: not known for an older row
    EXPECT_TRUE(s->column(4).is_null());
  }
  EXPECT_EQ(waits[with_note], 1);
  EXPECT_EQ(waits[without_note], 0);
  // The documents carry it too: the note is never searched again.
  EXPECT_EQ((*db.get_document(with_note))["waits_for_device"], true);
  EXPECT_EQ((*db.get_document(without_note))["waits_for_device"], false);
  const auto back = db.get(with_note);
  EXPECT_TRUE(back->waits_for_device);
  EXPECT_EQ(back->device_work, "");  // read as a call with device work, as it was measured
  EXPECT_EQ(back->time.host_us.n, 0u);
  EXPECT_DOUBLE_EQ(back->time.per_call_us.mean, 5.0);
  // A key with settings finds the legacy rows (NULL matches any), newest first.
  auto key = Database::Key::of("aten::addmm", "out", full_sample().args, "NVIDIA H100 80GB HBM3", "cold", "bf16", "k1");
  EXPECT_EQ(db.lookup(key)->db_id, without_note);
  // A new row lands beside them, and a reopen migrates nothing twice.
  Measurement m = full_sample();
  m.flags.clear();
  m.settings_key = "k1";
  const int64_t fresh = db.insert(m);
  EXPECT_EQ(Database(location()).lookup(key)->db_id, fresh);
}

// Every row of the released opcost's database (tests/data/fixture-2dc573c) reads back as a typed
// record whose columns are the row's own, before and after the migration.
void expect_rows_read_back(const Database& db, const std::string& when) {
  std::size_t rows = 0;
  db.each_row([&](const json& row) {
    ++rows;
    const int64_t id = row.at("id").get<int64_t>();
    const auto m = db.get(id);
    ASSERT_TRUE(m) << when << ": row " << id;
    EXPECT_EQ(m->db_id, id);
    const json typed = column_values(*m);
    for (const auto& [column, stored] : row.items()) {
      if (column == "id" || column == kDocumentColumn) continue;
      const json& mine = typed.at(column);
      if (stored.is_number() && mine.is_number())
        EXPECT_DOUBLE_EQ(mine.get<double>(), stored.get<double>()) << when << ": row " << id << " " << column;
      else
        EXPECT_EQ(mine, stored) << when << ": row " << id << " " << column;
    }
  });
  EXPECT_GT(rows, 10u) << when;
}

TEST(RecordFixture, TheReleasedDatabaseReadsBackTypedBeforeAndAfterItsMigration) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("opcost_record_fixture_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string copy = (dir / "opcost.db").string();
  std::filesystem::copy_file(std::string(OPCOST_TEST_DATA_DIR) + "/fixture-2dc573c/opcost.sqlite", copy,
                             std::filesystem::copy_options::overwrite_existing);
  expect_rows_read_back(Database(copy, Database::Access::kReadOnly), "unmigrated");
  expect_rows_read_back(Database(copy), "migrated");
  std::filesystem::remove_all(dir);
}

}  // namespace
