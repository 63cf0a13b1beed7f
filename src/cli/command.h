#pragma once
// One subcommand of opcost, as the command table (cli/command_table.cpp) lists it: its name,
// its help, the options it adds to CLI11 and how it runs. Each lives in its own file under
// cli/commands/; the command line (cli/command_line.cpp) builds the app from the table, and
// the Python package reads the same table (opcost._core.command_table) to build its own.
#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace opcost {

// What every command gets besides its own options.
struct CommandContext {
  std::string db;                 // --db, else $OPCOST_DB, else opcost's default location
  bool db_create_parent = false;  // only opcost's own default location gets its directories made
  std::vector<std::string> argv;  // this process's command line (a sweep starts its workers with it)
};

class Command {
 public:
  virtual ~Command() = default;
  // Adds the command's options (and subcommands of its own) to `cmd`, bound to this object.
  virtual void add_options(CLI::App& cmd) = 0;
  // Runs it once parsed: the exit status (cli/exit_codes.h). Bad input is thrown.
  virtual int run(const CommandContext& context) = 0;
};

struct CommandEntry {
  const char* name;
  const char* help;
  std::function<std::unique_ptr<Command>()> make;
};

// Every subcommand, in the order --help lists them.
const std::vector<CommandEntry>& command_table();

}  // namespace opcost
