// `opcost db list | show | export | copy`: the measurement database, read, exported and copied.
#include <fmt/format.h>

#include "cli/command.h"
#include "cli/commands/factories.h"
#include "cli/error_line.h"
#include "cli/exit_codes.h"
#include "cli/option_checks.h"
#include "cli/parquet_export.h"
#include "core/io/atomic_output_file.h"
#include "core/io/output_file.h"
#include "core/report/progress.h"
#include "core/store/database.h"
#include "core/store/database_copy.h"
#include "core/store/dataset_export.h"
#include "workflow/reporters/reporter.h"

namespace opcost {

namespace {

class DbCommand : public Command {
 public:
  void add_options(CLI::App& cmd) override {
    cmd.require_subcommand(1);
    cmd.fallthrough();
    list_ = cmd.add_subcommand("list", "List the newest measurements");
    list_->add_option("--op", list_op_, "only operators whose name contains this");
    list_->add_option("--limit", list_limit_, "rows to show")
        ->check(whole_number_between(1, kMaxWholeNumber))
        ->capture_default_str();
    show_ = cmd.add_subcommand("show", "Show one measurement in full (JSON)");
    show_->add_option("id", show_id_, "row id")->required();
    add_export_options(cmd);
    copy_ = cmd.add_subcommand(
        "copy", "Copy every measurement and the sweeps' state into another database (SQLite or PostgreSQL)");
    copy_->add_option("from", copy_from_, "the database to read: a SQLite file or a postgresql:// URL")->required();
    copy_->add_option("to", copy_to_, "the database to add to (made if missing); rows there already are kept once")
        ->required();
  }

  int run(const CommandContext& context) override {
    if (list_->parsed()) return list(context.db);
    if (show_->parsed()) return show(context.db);
    if (export_->parsed()) return export_rows(context.db);
    return copy();
  }

 private:
  void add_export_options(CLI::App& cmd) {
    export_ = cmd.add_subcommand(
        "export", "Export every row as CSV, JSON or Parquet, with a sweep's axes as columns (docs/sweeps.md)");
    auto* csv_flag = export_->add_flag("--csv", as_csv_, "CSV, one row per measurement");
    auto* json_flag = export_->add_flag("--json", as_json_, "JSON array of full result documents");
    auto* parquet_option =
        export_->add_option("--parquet", export_parquet_path_, "Parquet file to write (through pyarrow)");
    csv_flag->excludes(json_flag);
    parquet_option->excludes(csv_flag)->excludes(json_flag);
    export_->add_option("-o,--output", export_out_, "file to write (default: standard output)");
    export_->add_option("--sweep", export_sweep_, "only the rows this sweep measured");
  }

  int list(const std::string& path) const {
    Database db(path, Database::Access::kReadOnly);
    const auto rows = db.list(list_op_, list_limit_);
    fmt::print("{}", make_reporter(ReportFormat::kText)->database_rows(rows));
    fmt::print(stderr, "{} of {} rows in {}\n", rows.size(), db.count(), db.path());  // without its password
    return kExitSuccess;
  }

  int show(const std::string& path) const {
    Database db(path, Database::Access::kReadOnly);
    auto row = db.get_document(show_id_);
    if (!row) {
      print_error(fmt::format("no row {} in {} (see `opcost db list`)", show_id_, db.path()));
      return kExitBadInput;
    }
    fmt::print("{}\n", row->dump(2));
    return kExitSuccess;
  }

  int export_rows(const std::string& path) const {
    if (!as_csv_ && !as_json_ && export_parquet_path_.empty())
      throw std::invalid_argument("db export needs --csv, --json or --parquet FILE");
    // Before anything is opened: an export onto the database would truncate what it reads.
    check_output_not_input(export_out_, "-o", {{path, "the database"}});
    check_output_not_input(export_parquet_path_, "--parquet", {{path, "the database"}});
    Database db(path, Database::Access::kReadOnly);
    if (!export_parquet_path_.empty()) {
      export_parquet(export_parquet_path_,
                     [&](OutputFile& csv) { export_dataset(db, ExportFormat::kCsv, csv, export_sweep_); });
      fmt::print(stderr, "opcost: written to {}\n", export_parquet_path_);
      return kExitSuccess;
    }
    AtomicOutputFile out(export_out_);  // the old file stays whole until the export is
    export_dataset(db, as_csv_ ? ExportFormat::kCsv : ExportFormat::kJson, out.file(), export_sweep_);
    out.commit();
    if (!export_out_.empty()) fmt::print(stderr, "opcost: written to {}\n", export_out_);
    return kExitSuccess;
  }

  int copy() const {
    check_output_not_input(copy_to_, "db copy: TO", {{copy_from_, "the database"}});
    const Database from(copy_from_, Database::Access::kReadOnly);
    Database into(copy_to_);
    ProgressLine line(stderr, 10);
    const CopyCounts c = copy_database(from, into, [&](std::size_t rows) {
      if (rows % 100 == 0) line.update(fmt::format("db copy: {} rows", rows));
    });
    line.clear();
    fmt::print(stderr,
               "opcost: copied {} measurements from {} into {} ({} were there already), and the state of {} sweep "
               "items ({} sweep memberships)\n",
               c.rows_added, from.path(), into.path(), c.rows_present, c.items, c.memberships);
    return kExitSuccess;
  }

  CLI::App *list_ = nullptr, *show_ = nullptr, *export_ = nullptr, *copy_ = nullptr;
  std::string list_op_;
  int list_limit_ = 50;
  int64_t show_id_ = 0;
  bool as_csv_ = false, as_json_ = false;
  std::string export_out_, export_parquet_path_, export_sweep_;
  std::string copy_from_, copy_to_;
};

}  // namespace

std::unique_ptr<Command> make_db_command() { return std::make_unique<DbCommand>(); }

}  // namespace opcost
