#pragma once
// A database for one test, on each engine opcost stores to: a SQLite file in a temporary
// directory, or a fresh database on the throw-away PostgreSQL server that
// tests/postgres_test.sh starts ($OPCOST_TEST_POSTGRES: its URL without a database name).
// Without that server the PostgreSQL cases skip, saying so; the `postgres` test runs them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/store/sql_connection.h"

namespace opcost::testing {

inline const char* postgres_base() {
  const char* base = std::getenv("OPCOST_TEST_POSTGRES");
  return base && *base ? base : nullptr;
}

class TestDatabase {
 public:
  explicit TestDatabase(const std::string& engine) : engine_(engine) {
    static std::atomic<int> made{0};
    const std::string name = "opcost_test_" + std::to_string(::getpid()) + "_" + std::to_string(made++);
    if (engine == "postgres") {
      open_postgres(std::string(postgres_base()) + "/postgres", SqlAccess::kReadWrite)->exec("CREATE DATABASE " + name);
      name_ = name;
      location_ = std::string(postgres_base()) + "/" + name;
    } else {
      dir_ = std::filesystem::temp_directory_path() / name;
      std::filesystem::create_directories(dir_);
      location_ = (dir_ / "test.db").string();
    }
  }
  ~TestDatabase() {
    if (!name_.empty()) {
      try {
        open_postgres(std::string(postgres_base()) + "/postgres", SqlAccess::kReadWrite)
            ->exec("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
      } catch (const std::exception&) {}
    }
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  const std::string& location() const { return location_; }
  const std::string& engine() const { return engine_; }

 private:
  std::string engine_, name_, location_;
  std::filesystem::path dir_;
};

// In a TEST_P over engines: skips the PostgreSQL case where no test server runs.
#define OPCOST_SKIP_WITHOUT_ENGINE(engine)                                                                       \
  do {                                                                                                           \
    if (std::string(engine) == "postgres" && !::opcost::testing::postgres_base())                                \
      GTEST_SKIP() << "no PostgreSQL test server: $OPCOST_TEST_POSTGRES is unset (the `postgres` test sets it)"; \
  } while (0)

}  // namespace opcost::testing
