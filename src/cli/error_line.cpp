#include "cli/error_line.h"

#include <fmt/format.h>

#include <cstdio>

#include "core/text/text.h"

namespace opcost {

// Messages quote what they were given; however large that was, an error stays a few lines.
constexpr std::size_t kMaxErrorChars = 2000;

void print_error(const std::string& what) {
  fmt::print(stderr, "opcost: error: {}\n", user_message(elide(what, kMaxErrorChars)));
}

}  // namespace opcost
