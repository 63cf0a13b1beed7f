#pragma once
// "Did you mean" for a command line CLI11 refused: a mistyped option or subcommand.
#include <CLI/CLI.hpp>
#include <string>

namespace opcost {

// The hint for the first unknown option or command word of argv, or "" when there is none.
std::string parse_error_hint(CLI::App& app, int argc, char** argv);

}  // namespace opcost
