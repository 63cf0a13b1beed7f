#pragma once
// An error as the command line prints it: "opcost: error: ..." on one line of standard error.
#include <string>

namespace opcost {

void print_error(const std::string& what);

}  // namespace opcost
