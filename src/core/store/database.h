#pragma once
// The measurement database, one row per measurement: a SQLite file (the default), or a
// PostgreSQL server named by a postgresql:// URL, with the same schema and migrations
// (core/store/sql_connection.h). Each insert is its own transaction, so a process killed
// mid-run loses at most the measurement in flight. Queryable fields are columns; the full result
// document is kept beside them as JSON.
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/measurement.h"

namespace opcost {

class OutputFile;
class SqlConnection;

// A database operation that failed. Every message names the file or the server.
class DatabaseError : public std::runtime_error {
 public:
  enum class Kind {
    kFull,      // database or disk is full: nothing more can be stored
    kReadOnly,  // the file (or its directory) cannot be written
    kIo,        // the system failed a read or write
    kUnusable,  // not an opcost database: a damaged file, another program's, a newer opcost's
    kOther,     // a constraint, a lock held too long by another process, a bug
  };
  DatabaseError(Kind kind, const std::string& what) : std::runtime_error(what), kind_(kind) {}
  Kind kind() const { return kind_; }
  // No later write can succeed either: a long run stops instead of measuring for nothing.
  bool stops_writing() const { return kind_ != Kind::kOther; }

 private:
  Kind kind_;
};

// postgresql://… or postgres://… (libpq's URIs); anything else is a SQLite file's path.
bool is_postgres_url(const std::string& location);
// The location with any password replaced by ***: what every message, report and listing
// shows (a password in the URL's credentials, or in a password= or sslpassword= parameter).
std::string display_location(const std::string& location);
// `text` with the location's passwords, as written or percent-decoded, replaced by ***: for
// text that may quote the URL or a part of it (libpq's own connection errors).
std::string hide_password(std::string text, const std::string& location);

class Database {
 public:
  // $OPCOST_DB, else $XDG_DATA_HOME/opcost/opcost.db, else ~/.local/share/opcost/opcost.db.
  static std::string default_path();

  enum class Access {
    kReadWrite,  // created if missing (its directory must exist), checked writable at once
    kReadOnly,   // must exist; never created, migrated or written
  };
  // `location`: a SQLite file's path or a postgresql:// URL. `create_parent`: create a file's
  // missing parent directories (for the default path, not for a path the user typed: a typo
  // there must not create a tree of folders).
  explicit Database(const std::string& location, Access access = Access::kReadWrite, bool create_parent = false);
  // Whether `location` holds a database already (a file, or a server with the tables), so that
  // a read can say "nothing measured yet" rather than create one. Throws when a server cannot
  // be reached.
  static bool exists(const std::string& location);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // The file, or the server's URL without its password: what messages name.
  const std::string& path() const { return path_; }
  // Returns the row id; throws DatabaseError. `also` runs with that id inside the same
  // transaction (a sweep marks its item done there: both land or neither does).
  int64_t insert(const Measurement& m, const std::function<void(int64_t)>& also = {});

  // The identity key (core/store/measurement_record.h marks its fields): what makes two
  // measurements "the same" for --resume, predict and sweeps.
  struct Key {
    std::string op, overload, args_hash, device_name, cache_mode;
    std::string autocast;  // "" when the op ran without autocast
    // Set: only rows made with these settings (resume, sweeps). None: any settings (predict:
    // a budget or a target changes an interval, not the quantity). Rows stored before settings
    // were recorded (no settings_key) match any key, so --resume keeps skipping them.
    std::optional<std::string> settings_key;
    // The key of a canonical call, hashed as every stored row is (signature_hash).
    static Key of(const std::string& op, const std::string& overload, const std::string& canonical_args,
                  const std::string& device_name, const std::string& cache_mode, const std::string& autocast,
                  std::optional<std::string> settings_key = std::nullopt);
  };
  // The newest unflagged row for the key; with allow_flagged, the newest row of any kind
  // when no unflagged one exists. Read back as a typed record, db_id set.
  std::optional<Measurement> lookup(const Key& key, bool allow_flagged = false) const;
  std::optional<Measurement> get(int64_t id) const;
  // The stored result document as it is stored, db_id set (db show prints it).
  std::optional<nlohmann::json> get_document(int64_t id) const;
  // The rows of one operator and overload on one device, cache mode and autocast, whatever
  // their arguments: for a look-up that compares arguments by meaning, not by text (the
  // prediction's match ignoring floating-point scalar values). Newest unflagged first, then
  // the flagged; at most `limit` rows, so that a database of a huge sweep stays bounded.
  struct StoredCall {
    int64_t id;
    std::string args;  // canonical, as stored
    bool flagged;
  };
  std::vector<StoredCall> calls_of(const Key& key_without_args, std::size_t limit) const;

  struct Summary {
    int64_t id;
    std::string created_at, op, overload, args, device_name, cache_mode, flags;
    double time_us;
    std::optional<double> time_rel_ci;  // none: fewer than two samples, no interval
    std::optional<double> energy_mJ, energy_rel_ci;
  };
  std::vector<Summary> list(const std::string& op_filter = "", int limit = 50) const;
  std::size_t count() const;

  // Columns added to an export after the stored ones: `values` gives a row's (by its id), or
  // none to leave the row out (core/store/dataset_export.h adds a sweep's axes so).
  struct ExtraColumns {
    std::vector<std::string> names;
    std::function<std::optional<std::vector<nlohmann::json>>(int64_t id)> values;
  };
  // Every row, columns by name (a migrated file's physical column order differs).
  void export_csv(OutputFile& out, const ExtraColumns& extra = {}) const;
  // A JSON array of the result documents; extra columns become keys of each.
  void export_json(OutputFile& out, const ExtraColumns& extra = {}) const;

  // Every stored row, as it is stored (db copy): the measurements' columns by name, with their id.
  void each_row(const std::function<void(const nlohmann::json& row)>& visit) const;
  // Stores a row read by each_row (of another database) under a new id, which it returns;
  // `also` as for insert. A row that is here already (the same result document, made at the
  // same moment) is not stored twice: its id here is returned, and `also` does not run.
  struct Copied {
    int64_t id;
    bool added;
  };
  Copied insert_row(const nlohmann::json& row, const std::function<void(int64_t)>& also = {});

  SqlConnection& connection() const { return *conn_; }  // for the other tables (sweep_state.h)

 private:
  void migrate();
  void upgrade_documents();          // schema 4: waits_for_device read once from each older row's note
  int check_schema_version() const;  // the stored version (0: none yet); throws if unusable
  void check_writable();
  int64_t insert_values(const nlohmann::json& values, const std::function<void(int64_t)>& also);
  std::unique_ptr<SqlConnection> conn_;
  std::string path_;
  std::vector<std::string> present_;  // the measurements' columns (a read-only file may lack newer ones)
};

}  // namespace opcost
