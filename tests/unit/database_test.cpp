#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/io/output_file.h"
#include "core/spec/op_call.h"
#include "core/store/database.h"
#include "test_databases.h"

using namespace opcost;
namespace fs = std::filesystem;

namespace {

Measurement sample(const std::string& op, double us, std::vector<std::string> flags = {}) {
  Measurement m;
  m.created_at = "2026-11-22T08:00:00Z";
  m.op = op;
  m.overload = "";
  m.args = "self=f32[4]";
  m.args_hash = signature_hash(m.op, m.overload, m.args);  // as Runner::measure sets it
  m.dtype = "f32";
  m.env.device_kind = "cuda";
  m.env.device_name = "NVIDIA H100 80GB HBM3";
  m.env.torch_version = "2.11.0";
  m.time.per_call_us.mean = us;
  m.time.per_call_us.median = us;
  m.time.per_call_us.ci95_low = us * 0.99;
  m.time.per_call_us.ci95_high = us * 1.01;
  m.time.per_call_us.n = 20;
  m.energy.available = true;
  m.energy.per_call_mJ.mean = 2.0;
  m.energy.per_call_mJ.ci95_low = 1.96;
  m.energy.per_call_mJ.ci95_high = 2.04;
  m.energy.idle_power_W = 120.0;
  m.flags = std::move(flags);
  return m;
}

struct TempDb {
  fs::path path;
  TempDb() {
    path = fs::temp_directory_path() / fs::path("opcost_test_" + std::to_string(::getpid()) + ".db");
    fs::remove(path);
  }
  ~TempDb() {
    fs::remove(path);
    fs::remove(path.string() + ".out");
  }
  // What an export wrote, read back from a real file.
  std::string exported(const Database& db, bool csv) const {
    const std::string out_path = path.string() + ".out";
    OutputFile out(out_path);
    csv ? db.export_csv(out) : db.export_json(out);
    out.close();
    std::ifstream in(out_path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
};

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out(1);
  for (char c : line) {
    if (c == sep)
      out.emplace_back();
    else
      out.back().push_back(c);
  }
  return out;
}

// The cases every engine must pass alike: a SQLite file and a PostgreSQL server.
class DatabaseEngineTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    OPCOST_SKIP_WITHOUT_ENGINE(GetParam());
    db_.emplace(GetParam());
  }
  const std::string& location() const { return db_->location(); }
  std::string exported(const Database& db, bool csv) const { return files_.exported(db, csv); }

 private:
  std::optional<opcost::testing::TestDatabase> db_;
  TempDb files_;  // where exports are written
};

}  // namespace

INSTANTIATE_TEST_SUITE_P(Engines, DatabaseEngineTest, ::testing::Values("sqlite", "postgres"));

TEST(Database, AUrlNamesPostgresAndMessagesHideItsPassword) {
  EXPECT_TRUE(is_postgres_url("postgresql://me@db.lab/opcost"));
  EXPECT_TRUE(is_postgres_url("postgres://me@db.lab/opcost"));
  EXPECT_FALSE(is_postgres_url("ops.db"));
  EXPECT_FALSE(is_postgres_url("./postgresql://x"));  // a file's path, however odd
  EXPECT_EQ(display_location("postgresql://me:s3cret@db.lab:5433/opcost"), "postgresql://me:***@db.lab:5433/opcost");
  EXPECT_EQ(display_location("postgresql://me@db.lab/opcost?password=s3cret&sslmode=require"),
            "postgresql://me@db.lab/opcost?password=***&sslmode=require");
  EXPECT_EQ(display_location("postgresql://me@%2Ftmp%2Fpg:5432/opcost"), "postgresql://me@%2Ftmp%2Fpg:5432/opcost");
  EXPECT_EQ(display_location("/data/ops.db"), "/data/ops.db");
}

// The odd URLs too: a password holding '@' or '/', a percent-encoded parameter name, libpq's
// error quoting a piece of the password.
TEST(Database, NoFormOfAUrlShowsItsPassword) {
  EXPECT_EQ(display_location("postgresql://me:p@ss@db.lab/opcost"), "postgresql://me:***@db.lab/opcost");
  EXPECT_EQ(display_location("postgresql://me:pa/ss@db.lab/opcost"), "postgresql://me:***@db.lab/opcost");
  EXPECT_EQ(display_location("postgres://me@db/x?sslmode=require&pass%77ord=s3cret&sslpassword=k3y"),
            "postgres://me@db/x?sslmode=require&pass%77ord=***&sslpassword=***");
  EXPECT_EQ(display_location("postgresql://me:@db/x"), "postgresql://me:***@db/x");
  const std::string url = "postgresql://me:top%2Fs3cret/more@db.lab/opcost";
  EXPECT_EQ(hide_password("invalid integer value \"top%2Fs3cret\" for port; tried top/s3cret and more", url),
            "invalid integer value \"***\" for port; tried ***/*** and ***");
  EXPECT_EQ(hide_password("nothing secret here", "postgresql://me@db/x"), "nothing secret here");
  EXPECT_EQ(hide_password("ops.db: locked", "ops.db"), "ops.db: locked");
}

TEST_P(DatabaseEngineTest, RoundTripsAMeasurement) {
  int64_t id;
  {
    Database db(location());
    id = db.insert(sample("aten::relu", 12.5));
    EXPECT_GT(id, 0);
  }
  Database db(location());  // reopened: the row persisted
  auto row = db.get(id);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->op, "aten::relu");
  EXPECT_EQ(row->db_id, id);
  EXPECT_DOUBLE_EQ(row->time.per_call_us.mean, 12.5);
  EXPECT_DOUBLE_EQ(row->energy.per_call_mJ.mean, 2.0);
  EXPECT_EQ((*db.get_document(id))["db_id"], id);
  EXPECT_FALSE(db.get(id + 100));
  EXPECT_EQ(db.count(), 1u);
}

TEST_P(DatabaseEngineTest, LookupReturnsTheNewestUnflaggedRow) {
  Database db(location());
  // The key is built from the call, as `measure --resume` and `predict` build it, not from the
  // stored hash: a writer and a reader that hash differently would miss here.
  const auto key_of = [](const Measurement& m) {
    return Database::Key::of(m.op, m.overload, m.args, m.env.device_name, m.cache_mode, m.autocast);
  };
  const auto a = sample("aten::relu", 10);
  db.insert(a);
  const int64_t b = db.insert(sample("aten::relu", 11));
  db.insert(sample("aten::relu", 99, {"throttled:sw_power_cap"}));  // newest, but flagged
  db.insert(sample("aten::gelu", 5));
  auto row = db.lookup(key_of(a));
  ASSERT_TRUE(row);
  EXPECT_EQ(row->db_id, b);
  // Only flagged rows: none unless allowed.
  const auto f = sample("aten::tanh", 7, {"other_processes:1"});
  db.insert(f);
  EXPECT_FALSE(db.lookup(key_of(f)));
  EXPECT_TRUE(db.lookup(key_of(f), true));
  auto other = key_of(a);
  other.device_name = "NVIDIA A100";
  EXPECT_FALSE(db.lookup(other));
}

TEST_P(DatabaseEngineTest, ListsAndExports) {
  Database db(location());
  db.insert(sample("aten::relu", 10));
  db.insert(sample("aten::conv2d", 100, {"throttled:sw_power_cap"}));
  auto rows = db.list();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].op, "aten::conv2d");  // newest first
  EXPECT_EQ(rows[0].flags, "throttled:sw_power_cap");
  ASSERT_TRUE(rows[1].time_rel_ci);
  EXPECT_NEAR(*rows[1].time_rel_ci, 0.01, 1e-9);
  EXPECT_EQ(db.list("conv").size(), 1u);
  std::istringstream lines(exported(db, true));
  std::string header, line;
  std::getline(lines, header);
  EXPECT_EQ(header.rfind("id,created_at,opcost_version,op,", 0), 0u) << header;
  int n = 0;
  while (std::getline(lines, line)) ++n;
  EXPECT_EQ(n, 2);
  const auto docs = nlohmann::json::parse(exported(db, false));
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[1]["op"], "aten::conv2d");
}

TEST_P(DatabaseEngineTest, EnergyUnavailableIsStoredAsAReasonNotZero) {
  Database db(location());
  auto m = sample("aten::relu", 10);
  m.energy = {};
  m.energy.unavailable_reason = "NVML not loaded";
  const auto id = db.insert(m);
  auto row = db.get(id);
  EXPECT_FALSE(row->energy.available);
  EXPECT_EQ(row->energy.unavailable_reason, "NVML not loaded");
  EXPECT_FALSE(db.get_document(id)->contains("energy_mJ"));
  EXPECT_NE(exported(db, true).find("NVML not loaded"), std::string::npos);
}

TEST(Database, NotADatabaseIsAClearError) {
  TempDb t;
  std::ofstream(t.path) << "this is not sqlite, just text that is long enough to be a header......\n";
  try {
    Database db(t.path.string());
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(t.path.string()), std::string::npos) << e.what();
  }
}

TEST_P(DatabaseEngineTest, OneSampleHasNoIntervalInTheList) {
  Database db(location());
  auto m = sample("aten::addmm", 4.8e6);
  m.time.per_call_us.n = 1;
  m.time.per_call_us.ci95_low = m.time.per_call_us.ci95_high = m.time.per_call_us.mean;
  db.insert(m);
  EXPECT_FALSE(db.list()[0].time_rel_ci);  // "n/a", never "± 0.00"
}

TEST(Database, CsvColumnsMatchTheirHeaderOnAMigratedFile) {
  TempDb t;
  {  // A file as the first opcost wrote it: no autocast column, schema_version 1.
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(t.path.c_str(), &raw), SQLITE_OK);
    const char* old_schema =
        "CREATE TABLE measurements (id INTEGER PRIMARY KEY AUTOINCREMENT, created_at TEXT NOT NULL, opcost_version "
        "TEXT, op TEXT NOT NULL, overload TEXT NOT NULL, args TEXT NOT NULL, args_hash TEXT NOT NULL, dtype TEXT, "
        "device_kind TEXT, device_name TEXT, device_uuid TEXT, driver_version TEXT, cuda_version TEXT, torch_version "
        "TEXT, cache_mode TEXT, method TEXT, time_median_us REAL, time_mean_us REAL, time_clipped_mean_us REAL, "
        "time_min_us REAL, time_stdev_us REAL, time_ci95_low_us REAL, time_ci95_high_us REAL, time_samples INTEGER, "
        "stop_reason TEXT, host_us_per_call REAL, host_cpu_us_per_call REAL, energy_per_call_mJ REAL, "
        "energy_above_idle_mJ REAL, energy_ci95_low_mJ REAL, energy_ci95_high_mJ REAL, energy_unavailable TEXT, "
        "power_W REAL, idle_power_W REAL, loop_wall_us_per_call REAL, sm_clock_MHz INTEGER, mem_clock_MHz INTEGER, "
        "temperature_C INTEGER, throttle_reasons INTEGER, flags TEXT, calls INTEGER, seconds REAL, result_json TEXT "
        "NOT NULL);"
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT); INSERT INTO meta VALUES ('schema_version', '1');"
        "INSERT INTO measurements (created_at, op, overload, args, args_hash, time_median_us, time_mean_us, "
        "time_samples, flags, result_json) VALUES ('2026-01-01T00:00:00Z', 'aten::relu', '', 'self=f32[4]', 'h', "
        "12.5, 13.0, 20, '', '{}');";
    ASSERT_EQ(sqlite3_exec(raw, old_schema, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(raw);
    sqlite3_close(raw);
  }
  Database db(t.path.string());  // migrates: autocast lands at the end of the table
  db.insert(sample("aten::gelu", 7.0));
  std::istringstream lines(t.exported(db, true));
  std::string header_line, old_row, new_row;
  std::getline(lines, header_line);
  std::getline(lines, old_row);
  std::getline(lines, new_row);
  const auto header = split(header_line, ',');
  const auto column = [&](const std::string& row, const std::string& name) {
    const auto it = std::find(header.begin(), header.end(), name);
    EXPECT_NE(it, header.end()) << name;
    return split(row, ',').at(std::size_t(it - header.begin()));
  };
  EXPECT_EQ(column(old_row, "op"), "aten::relu");
  EXPECT_EQ(column(old_row, "autocast"), "");  // not the median time, as SELECT * put it
  EXPECT_EQ(column(old_row, "time_median_us"), "12.5");
  EXPECT_EQ(column(new_row, "op"), "aten::gelu");
  EXPECT_EQ(column(new_row, "time_median_us"), "7.0");
  // The migration is recorded: the file now says it has every column.
  sqlite3* raw = nullptr;
  sqlite3_open(t.path.c_str(), &raw);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(raw, "SELECT value FROM meta WHERE key='schema_version'", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, 0))), "5");
  sqlite3_finalize(st);
  sqlite3_close(raw);
}

TEST(Database, ADamagedSchemaVersionIsNamed) {
  TempDb t;
  { Database db(t.path.string()); }
  sqlite3* raw = nullptr;
  sqlite3_open(t.path.c_str(), &raw);
  sqlite3_exec(raw, "UPDATE meta SET value='abc' WHERE key='schema_version'", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  try {
    Database db(t.path.string());
    FAIL();
  } catch (const DatabaseError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("schema_version is 'abc'"), std::string::npos) << what;
    EXPECT_NE(what.find(t.path.string()), std::string::npos) << what;
    EXPECT_EQ(what.find("stoi"), std::string::npos) << what;
  }
}

TEST(Database, AFullDiskSaysSoWithItsPath) {
  TempDb t;
  Database db(t.path.string());
  db.insert(sample("aten::relu", 10));
  // The disk is full at the file's present size: the process may not grow any file (as
  // `ulimit -f`), and SIGXFSZ is ignored so that the write fails instead of killing it.
  rlimit before{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &before), 0);
  auto* old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit full = before;
  full.rlim_cur = rlim_t(fs::file_size(t.path));
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &full), 0);
  auto big = sample("aten::relu", 11);
  big.args = std::string(64 * 1024, 'x');  // needs new pages
  std::string what;
  DatabaseError::Kind kind = DatabaseError::Kind::kOther;
  try {
    db.insert(big);
  } catch (const DatabaseError& e) {
    what = e.what();
    kind = e.kind();
  }
  setrlimit(RLIMIT_FSIZE, &before);
  std::signal(SIGXFSZ, old_handler);
  ASSERT_FALSE(what.empty()) << "the insert should not fit";
  EXPECT_EQ(kind, DatabaseError::Kind::kFull) << what;
  EXPECT_NE(what.find("database or disk is full"), std::string::npos) << what;
  EXPECT_NE(what.find(t.path.string()), std::string::npos) << what;
  EXPECT_EQ(what.find("no transaction is active"), std::string::npos) << what;
  EXPECT_EQ(db.count(), 1u);  // the row before is intact, and the file still works
  db.insert(sample("aten::gelu", 5));
  EXPECT_EQ(db.count(), 2u);
}

TEST(Database, ReadOnlyAccessNeverCreatesAFile) {
  TempDb t;
  EXPECT_THROW(Database(t.path.string(), Database::Access::kReadOnly), std::invalid_argument);
  EXPECT_FALSE(fs::exists(t.path));
  EXPECT_THROW(Database("", Database::Access::kReadWrite), std::invalid_argument);
  // A path the user typed with a missing directory: refused, nothing created.
  const fs::path typo = fs::temp_directory_path() / ("opcost_no_such_dir_" + std::to_string(::getpid())) / "x.db";
  EXPECT_THROW(Database(typo.string()), std::invalid_argument);
  EXPECT_FALSE(fs::exists(typo.parent_path()));
  // The default location may make its directories.
  { Database made(typo.string(), Database::Access::kReadWrite, true); }
  EXPECT_TRUE(fs::exists(typo));
  fs::remove_all(typo.parent_path());
}

TEST(Database, AFileThatCannotBeWrittenFailsWhenOpened) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes read-only files; tests/cli_test.sh checks this as another user";
  TempDb t;
  { Database db(t.path.string()); }
  ::chmod(t.path.c_str(), 0444);
  try {
    Database db(t.path.string());
    FAIL();
  } catch (const DatabaseError& e) {
    EXPECT_EQ(e.kind(), DatabaseError::Kind::kReadOnly) << e.what();
    EXPECT_NE(std::string(e.what()).find(t.path.string()), std::string::npos) << e.what();
  }
  Database reader(t.path.string(), Database::Access::kReadOnly);  // reading still works
  EXPECT_EQ(reader.count(), 0u);
  ::chmod(t.path.c_str(), 0644);
}
