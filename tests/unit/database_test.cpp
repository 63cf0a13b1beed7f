#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/spec/op_call.h"
#include "core/store/database.h"

using namespace opcost;
namespace fs = std::filesystem;

namespace {

Measurement sample(const std::string& op, double us, std::vector<std::string> flags = {}) {
  Measurement m;
  m.created_at = "2026-11-22T08:00:00Z";
  m.op = op;
  m.overload = "";
  m.args = "self=f32[4]";
  m.args_hash = stable_hash(op + " " + m.args);
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
  ~TempDb() { fs::remove(path); }
};

}  // namespace

TEST(Database, RoundTripsAMeasurement) {
  TempDb t;
  int64_t id;
  {
    Database db(t.path.string());
    id = db.insert(sample("aten::relu", 12.5));
    EXPECT_GT(id, 0);
  }
  Database db(t.path.string());  // reopened: the row persisted
  auto row = db.get(id);
  ASSERT_TRUE(row);
  EXPECT_EQ((*row)["op"], "aten::relu");
  EXPECT_EQ((*row)["db_id"], id);
  EXPECT_DOUBLE_EQ((*row)["time_us"]["mean"].get<double>(), 12.5);
  EXPECT_DOUBLE_EQ((*row)["energy_mJ"]["per_call"].get<double>(), 2.0);
  EXPECT_FALSE(db.get(id + 100));
  EXPECT_EQ(db.count(), 1u);
}

TEST(Database, LookupReturnsTheNewestUnflaggedRow) {
  TempDb t;
  Database db(t.path.string());
  const auto key_of = [](const Measurement& m) {
    return Database::Key{m.op, m.overload, m.args_hash, m.env.device_name, m.cache_mode};
  };
  const auto a = sample("aten::relu", 10);
  db.insert(a);
  const int64_t b = db.insert(sample("aten::relu", 11));
  db.insert(sample("aten::relu", 99, {"throttled:sw_power_cap"}));  // newest, but flagged
  db.insert(sample("aten::gelu", 5));
  auto row = db.lookup(key_of(a));
  ASSERT_TRUE(row);
  EXPECT_EQ((*row)["db_id"], b);
  // Only flagged rows: none unless allowed.
  const auto f = sample("aten::tanh", 7, {"other_processes:1"});
  db.insert(f);
  EXPECT_FALSE(db.lookup(key_of(f)));
  EXPECT_TRUE(db.lookup(key_of(f), true));
  auto other = key_of(a);
  other.device_name = "NVIDIA A100";
  EXPECT_FALSE(db.lookup(other));
}

TEST(Database, ListsAndExports) {
  TempDb t;
  Database db(t.path.string());
  db.insert(sample("aten::relu", 10));
  db.insert(sample("aten::conv2d", 100, {"throttled:sw_power_cap"}));
  auto rows = db.list();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].op, "aten::conv2d");  // newest first
  EXPECT_EQ(rows[0].flags, "throttled:sw_power_cap");
  EXPECT_NEAR(rows[1].time_rel_ci, 0.01, 1e-9);
  EXPECT_EQ(db.list("conv").size(), 1u);
  std::ostringstream csv, json;
  db.export_csv(csv);
  db.export_json(json);
  std::istringstream lines(csv.str());
  std::string header, line;
  std::getline(lines, header);
  EXPECT_EQ(header.rfind("id,created_at,opcost_version,op,", 0), 0u) << header;
  int n = 0;
  while (std::getline(lines, line)) ++n;
  EXPECT_EQ(n, 2);
  const auto docs = nlohmann::json::parse(json.str());
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[1]["op"], "aten::conv2d");
}

TEST(Database, EnergyUnavailableIsStoredAsAReasonNotZero) {
  TempDb t;
  Database db(t.path.string());
  auto m = sample("aten::relu", 10);
  m.energy = {};
  m.energy.unavailable_reason = "NVML not loaded";
  const auto id = db.insert(m);
  auto row = db.get(id);
  EXPECT_FALSE(row->contains("energy_mJ"));
  EXPECT_EQ((*row)["energy_unavailable"], "NVML not loaded");
  std::ostringstream csv;
  db.export_csv(csv);
  EXPECT_NE(csv.str().find("NVML not loaded"), std::string::npos);
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
