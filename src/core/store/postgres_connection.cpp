// A PostgreSQL server behind SqlConnection, through libpq: the database a team or a cluster
// shares. Every failure becomes a DatabaseError that names the server (its URL without the
// password), what failed and the fix. Built only where libpq is (OPCOST_HAS_POSTGRES); without
// it, a postgresql:// database is refused with how to get it.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/store/database.h"
#include "core/store/sql_connection.h"

#ifdef OPCOST_HAS_POSTGRES
#include <libpq-fe.h>

#include <cstdlib>
#include <optional>
#endif

namespace opcost {

bool is_postgres_url(const std::string& location) {
  return location.rfind("postgresql://", 0) == 0 || location.rfind("postgres://", 0) == 0;
}

namespace {

// libpq's URI parameters whose values are secrets.
bool is_secret_parameter(const std::string& key) { return key == "password" || key == "sslpassword"; }

std::string percent_decoded(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      out += char(std::stoi(text.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

// The parts of a postgresql:// URL that hold secrets, as [begin, end) offsets: the password of
// scheme://user:password@host…, and the value of each password= (or sslpassword=) parameter.
// The credentials end at the last '@' before the parameters: libpq stops at the first '@' or
// '/', but a password that holds either (a mistyped URL) must not show in the error it causes.
std::vector<std::pair<std::size_t, std::size_t>> secret_spans(const std::string& url) {
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  if (!is_postgres_url(url)) return spans;
  const std::size_t start = url.find("://") + 3;
  const std::size_t query = std::min(url.find('?', start), url.size());
  const std::size_t at = query > start ? url.rfind('@', query - 1) : std::string::npos;
  if (at != std::string::npos && at >= start)
    if (const std::size_t colon = url.find(':', start); colon < at) spans.emplace_back(colon + 1, at);
  for (std::size_t p = query + 1; p < url.size();) {
    const std::size_t end = std::min(url.find('&', p), url.size());
    const std::size_t eq = url.find('=', p);
    if (eq < end && is_secret_parameter(percent_decoded(url.substr(p, eq - p)))) spans.emplace_back(eq + 1, end);
    p = end + 1;
  }
  return spans;
}

}  // namespace

std::string display_location(const std::string& location) {
  std::string shown = location;
  const auto spans = secret_spans(location);
  for (auto it = spans.rbegin(); it != spans.rend(); ++it)  // from the end: earlier offsets stay valid
    shown.replace(it->first, it->second - it->first, "***");
  return shown;
}

std::string hide_password(std::string text, const std::string& location) {
  // The secrets as written and as libpq decodes them, and their pieces between the URL's
  // delimiters (a password holding '/' is cut there by libpq, which may quote one piece).
  std::vector<std::string> secrets;
  for (const auto& [begin, end] : secret_spans(location)) {
    const std::string raw = location.substr(begin, end - begin);
    for (const std::string& whole : {raw, percent_decoded(raw)}) {
      secrets.push_back(whole);
      for (std::size_t p = 0; p < whole.size();) {
        const std::size_t cut = std::min(whole.find_first_of("/@:?&=#", p), whole.size());
        if (cut - p >= 3) secrets.push_back(whole.substr(p, cut - p));  // shorter ones would mask words
        p = cut + 1;
      }
    }
  }
  std::sort(secrets.begin(), secrets.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  for (const auto& secret : secrets) {
    if (secret.empty()) continue;
    for (std::size_t p = 0; (p = text.find(secret, p)) != std::string::npos; p += 3)
      text.replace(p, secret.size(), "***");
  }
  return text;
}

#ifndef OPCOST_HAS_POSTGRES

std::unique_ptr<SqlConnection> open_postgres(const std::string& url, SqlAccess) {
  throw std::invalid_argument(fmt::format(
      "--db {}: this opcost was built without PostgreSQL (libpq); install libpq-dev (Debian, Ubuntu) and build "
      "again, or use a SQLite file",
      display_location(url)));
}

#else

namespace {

// libpq's type ids (pg_type.oid) of the columns that are numbers; everything else is text.
constexpr Oid kBool = 16, kInt8 = 20, kInt2 = 21, kInt4 = 23, kOid = 26, kFloat4 = 700, kFloat8 = 701, kNumeric = 1700;

// libpq's message as one line of ours: its first line, or all of them joined.
std::string one_line(std::string text, bool first_only) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (first_only) return text.substr(0, text.find('\n'));
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

[[noreturn]] void throw_postgres(const std::string& where, const std::string& doing, const PGresult* result,
                                 PGconn* conn) {
  using Kind = DatabaseError::Kind;
  // The first line is the error; DETAIL and HINT lines follow it.
  const std::string why =
      one_line(result ? PQresultErrorMessage(result) : (conn ? PQerrorMessage(conn) : "out of memory"), true);
  const char* state = result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  const std::string sqlstate = state ? state : "";
  Kind kind = Kind::kOther;
  std::string fix = "is it an opcost database?";
  if (sqlstate == "53100") {  // disk_full
    kind = Kind::kFull;
    fix = "the server's disk is full: free space there";
  } else if (sqlstate == "25006" || sqlstate == "42501") {  // read-only transaction, insufficient privilege
    kind = Kind::kReadOnly;
    fix = "the user may not write there: grant it, or use another --db";
  } else if (sqlstate.rfind("08", 0) == 0 || sqlstate.rfind("57P", 0) == 0 || !conn ||
             PQstatus(conn) != CONNECTION_OK) {  // the connection or the server went away
    kind = Kind::kIo;
    fix = "check that the server runs and can be reached";
  }
  throw DatabaseError(kind, fmt::format("{}: {}: {}; {}", where, doing, why, fix));
}

// ?N → $N outside quoted text: every statement is written once, in SQLite's form.
std::string numbered_parameters(const std::string& sql) {
  std::string out;
  out.reserve(sql.size());
  char quote = 0;
  for (char ch : sql) {
    if (quote) {
      if (ch == quote) quote = 0;
    } else if (ch == '\'' || ch == '"') {
      quote = ch;
    } else if (ch == '?') {
      ch = '$';
    }
    out += ch;
  }
  return out;
}

const SqlDialect kPostgresDialect{
    "BIGINT",
    "DOUBLE PRECISION",
    "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
    " RETURNING id",
    " FOR UPDATE OF i SKIP LOCKED",
};

class PostgresStatement : public SqlStatement {
 public:
  PostgresStatement(PGconn* conn, const std::string& where, const std::string& sql)
      : conn_(conn), where_(where), sql_(numbered_parameters(sql)) {}
  ~PostgresStatement() override { PQclear(result_); }

  void bind(int i, const nlohmann::json& v) override {
    if (i < 1) throw std::logic_error("SQL parameters count from 1");
    if (std::size_t(i) > params_.size()) params_.resize(i);
    if (v.is_null())
      params_[i - 1].reset();
    else if (v.is_boolean())
      params_[i - 1] = v.get<bool>() ? "1" : "0";
    else if (v.is_number_integer())
      params_[i - 1] = std::to_string(v.get<int64_t>());
    else if (v.is_number())
      params_[i - 1] = fmt::format("{}", v.get<double>());  // the shortest text that reads back the same
    else
      params_[i - 1] = v.get<std::string>();
  }

  bool step() override {
    if (!result_) {
      std::vector<const char*> values;
      for (const auto& p : params_) values.push_back(p ? p->c_str() : nullptr);
      result_ = PQexecParams(conn_, sql_.c_str(), int(values.size()), nullptr, values.data(), nullptr, nullptr, 0);
      const auto status = result_ ? PQresultStatus(result_) : PGRES_FATAL_ERROR;
      if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK)
        throw_postgres(where_, "cannot read or write", result_, conn_);
      row_ = -1;
    }
    return ++row_ < PQntuples(result_);
  }

  nlohmann::json column(int i) override {
    if (PQgetisnull(result_, row_, i)) return nullptr;
    const char* text = PQgetvalue(result_, row_, i);
    switch (PQftype(result_, i)) {
      case kBool:
        return text[0] == 't';
      case kInt2:
      case kInt4:
      case kInt8:
      case kOid:
        return int64_t(std::strtoll(text, nullptr, 10));
      case kFloat4:
      case kFloat8:
      case kNumeric:
        return std::strtod(text, nullptr);
      default:
        return std::string(text);
    }
  }
  int column_count() override { return result_ ? PQnfields(result_) : 0; }
  void reset() override {
    PQclear(result_);
    result_ = nullptr;
  }
  int64_t changed_rows() override {
    const char* n = result_ ? PQcmdTuples(result_) : "";
    return *n ? std::strtoll(n, nullptr, 10) : 0;
  }

 private:
  PGconn* conn_;
  const std::string& where_;
  std::string sql_;
  std::vector<std::optional<std::string>> params_;
  PGresult* result_ = nullptr;
  int row_ = -1;
};

class PostgresConnection : public SqlConnection {
 public:
  PostgresConnection(const std::string& url, SqlAccess access) : SqlConnection(display_location(url)) {
    conn_ = PQconnectdb(url.c_str());
    if (!conn_ || PQstatus(conn_) != CONNECTION_OK) {
      // Every line: a failed connection names each address it tried.
      // libpq may quote a part of the URL it could not parse: the password's too.
      const std::string why = hide_password(one_line(conn_ ? PQerrorMessage(conn_) : "out of memory", false), url);
      PQfinish(conn_);
      throw DatabaseError(DatabaseError::Kind::kReadOnly,
                          fmt::format("{}: cannot connect: {}; check the URL (postgresql://USER@HOST[:PORT]/DBNAME), "
                                      "that the server runs and that the user may log in",
                                      location(), why));
    }
    // CREATE … IF NOT EXISTS speaks a NOTICE for each table that is there: not for the user.
    PQsetNoticeProcessor(
        conn_, [](void*, const char*) {}, nullptr);
    if (access == SqlAccess::kReadOnly) exec("SET default_transaction_read_only = on");
  }
  ~PostgresConnection() override { PQfinish(conn_); }

  const SqlDialect& dialect() const override { return kPostgresDialect; }
  std::unique_ptr<SqlStatement> prepare(const std::string& sql) override {
    return std::make_unique<PostgresStatement>(conn_, location(), sql);
  }
  void exec(const std::string& sql) override {
    PGresult* r = PQexec(conn_, sql.c_str());
    const auto status = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      try {
        throw_postgres(location(), "cannot write", r, conn_);
      } catch (...) {
        PQclear(r);
        throw;
      }
    }
    PQclear(r);
  }
  void begin() override { exec("BEGIN"); }
  void commit() override { exec("COMMIT"); }
  void rollback() noexcept override {
    if (PQtransactionStatus(conn_) != PQTRANS_IDLE) PQclear(PQexec(conn_, "ROLLBACK"));
  }
  std::vector<std::string> columns(const std::string& table) override {
    PostgresStatement s(conn_, location(),
                        "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
                        "AND table_name = ?1 ORDER BY ordinal_position");
    s.bind(1, table);
    std::vector<std::string> names;
    while (s.step()) names.push_back(s.column(0).get<std::string>());
    return names;
  }
  int64_t inserted_id(SqlStatement& insert) override {
    if (!insert.step()) throw std::logic_error("an INSERT … RETURNING id returned no row");
    return insert.column(0).get<int64_t>();
  }
  void with_schema_lock(const std::function<void()>& body) override {
    // Held by this session until unlocked; a connection that dies releases it.
    constexpr const char* kKey = "7246105917";  // any constant shared by every opcost
    exec(fmt::format("SELECT pg_advisory_lock({})", kKey));
    try {
      body();
    } catch (...) {
      rollback();
      PQclear(PQexec(conn_, fmt::format("SELECT pg_advisory_unlock({})", kKey).c_str()));
      throw;
    }
    exec(fmt::format("SELECT pg_advisory_unlock({})", kKey));
  }

 private:
  PGconn* conn_ = nullptr;
};

}  // namespace

std::unique_ptr<SqlConnection> open_postgres(const std::string& url, SqlAccess access) {
  return std::make_unique<PostgresConnection>(url, access);
}

#endif

}  // namespace opcost
