#pragma once
// opcost's command line: the app built from the command table (cli/command.h), parsed, and the
// command named run, with every error as one line and the exit status of cli/exit_codes.h.
#include <nlohmann/json.hpp>

namespace opcost {

int run_command_line(int argc, char** argv);

// The command table as the command line offers it, for the Python package's command line:
// [{name, help, options: [{flags: [..], name, help, takes_value, repeatable, required,
// positional, default, hidden}], commands: [...]}].
nlohmann::json describe_command_line();

}  // namespace opcost
