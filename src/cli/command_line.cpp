#include "cli/command_line.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <memory>
#include <utility>
#include <vector>

#include "cli/command.h"
#include "cli/error_line.h"
#include "cli/exit_codes.h"
#include "cli/parse_hint.h"
#include "core/io/output_file.h"
#include "core/store/database.h"
#include "core/version.h"
#include "torch/replay.h"

namespace opcost {

namespace {

class CommandLine {
 public:
  CommandLine() {
    app_.set_version_flag("--version", std::string("opcost ") + kOpcostVersion);
    app_.require_subcommand(1);
    app_.fallthrough();  // --db is accepted after the subcommand too
    // Before the subcommands: each copies the footer.
    app_.footer(
        "Exit status: 0 success; 1 some measurements failed (the rest were measured and stored); 2 bad input; "
        "3 incomplete prediction (some operators unmeasured).");
    db_option_ = app_.add_option("--db", db_path_,
                                 "SQLite file, or postgresql://USER@HOST[:PORT]/DBNAME (default: $OPCOST_DB or "
                                 "~/.local/share/opcost/opcost.db)");
    for (const CommandEntry& entry : command_table()) {
      CLI::App* sub = app_.add_subcommand(entry.name, entry.help);
      auto command = entry.make();
      command->add_options(*sub);
      commands_.emplace_back(sub, std::move(command));
    }
  }

  int run(int argc, char** argv) {
    if (const int rc = parse(argc, argv); rc >= 0) return rc;
    // An empty --db is a mistake (an unset variable in a script), never a request for the default.
    if (db_option_->count() > 0 && db_path_.empty()) {
      print_error(fmt::format("--db: the path is empty; give a file, or leave --db out for {}",
                              display_location(Database::default_path())));
      return kExitBadInput;
    }
    const CommandContext context = context_of(argc, argv);
    for (auto& [sub, command] : commands_)
      if (sub->parsed()) return run_reporting_errors(*command, context);
    return kExitSuccess;
  }

  const CLI::App& app() const { return app_; }

 private:
  // -1 when parsed; else the exit status (help and version: 0).
  int parse(int argc, char** argv) {
    try {
      app_.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
      return app_.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
      return app_.exit(e);
    } catch (const CLI::CallForVersion& e) {
      return app_.exit(e);
    } catch (const CLI::ParseError& e) {
      const std::string hint = parse_error_hint(app_, argc, argv);
      print_error(hint.empty() ? e.what() : hint);
      fmt::print(stderr, "Run with --help for the commands and options.\n");
      return kExitBadInput;
    }
    return -1;
  }

  CommandContext context_of(int argc, char** argv) const {
    const char* env_db = std::getenv("OPCOST_DB");
    CommandContext c;
    // Only opcost's own default location gets its directories made; a path the user typed
    // (or put in $OPCOST_DB) must exist up to its file, so a typo creates nothing.
    c.db_create_parent = db_path_.empty() && !(env_db && *env_db);
    c.db = db_path_.empty() ? Database::default_path() : db_path_;
    c.argv.assign(argv, argv + argc);
    return c;
  }

  static int run_reporting_errors(Command& command, const CommandContext& context) {
    try {
      const int rc = command.run(context);
      check_stdout();
      return rc;
    } catch (const std::invalid_argument& e) {  // also a spec, model or argument that cannot run
      print_error(e.what());
      return kExitBadInput;
    } catch (const ReplayError& e) {
      print_error(e.what());
      return kExitBadInput;
    } catch (const DatabaseError& e) {  // a file that cannot be opened, written or used: fix the path
      print_error(e.what());
      return e.kind() == DatabaseError::Kind::kReadOnly || e.kind() == DatabaseError::Kind::kUnusable
                 ? kExitBadInput
                 : kExitMeasurementFailed;
    } catch (const std::exception& e) {
      // A model too large for the host (--batch 100000): what it needed and what there is, not
      // LibTorch's "[enforce fail at alloc_cpu.cpp]". The GPU's own error says as much already.
      if (const auto oom = host_allocation_failure(e.what())) {
        print_error(*oom + "; use a smaller --batch or --seq (or smaller --input shapes)");
        return kExitBadInput;
      }
      print_error(e.what());
      return kExitMeasurementFailed;
    }
  }

  CLI::App app_{"opcost: what every PyTorch operator costs on your GPU, in time and energy"};
  std::string db_path_;
  CLI::Option* db_option_ = nullptr;
  std::vector<std::pair<CLI::App*, std::unique_ptr<Command>>> commands_;
};

nlohmann::json describe_option(const CLI::Option& o) {
  nlohmann::json flags = nlohmann::json::array();
  for (const auto& s : o.get_snames()) flags.push_back("-" + s);
  for (const auto& l : o.get_lnames()) flags.push_back("--" + l);
  return {{"name", o.get_name(false, true)},
          {"flags", flags},
          {"positional", o.nonpositional() ? false : true},
          {"help", o.get_description()},
          {"takes_value", o.get_expected_max() != 0},  // a flag expects none
          {"repeatable", o.get_expected_max() > 1},
          {"required", o.get_required()},
          {"default", o.get_default_str()},
          {"hidden", o.get_group().empty()}};
}

nlohmann::json describe_app(const CLI::App& app) {
  nlohmann::json options = nlohmann::json::array(), commands = nlohmann::json::array();
  for (const CLI::Option* o : app.get_options()) {
    if (o == app.get_help_ptr() || o == app.get_version_ptr()) continue;
    options.push_back(describe_option(*o));
  }
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    commands.push_back(describe_app(*sub));
  return {{"name", app.get_name()}, {"help", app.get_description()}, {"options", options}, {"commands", commands}};
}

}  // namespace

int run_command_line(int argc, char** argv) { return CommandLine().run(argc, argv); }

nlohmann::json describe_command_line() {
  const CommandLine line;
  return describe_app(line.app());
}

}  // namespace opcost
