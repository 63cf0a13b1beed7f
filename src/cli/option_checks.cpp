#include "cli/option_checks.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>

#include "core/text/text.h"

namespace opcost {

namespace {

// The user's text as a message echoes it: short and printable.
std::string echoed(const std::string& input) { return printable(elide(input, 40), false); }

CLI::Validator finite_number(double low, bool low_included, double high) {
  const std::string range =
      low_included ? fmt::format("from {} to {}", low, high) : fmt::format("above {} and at most {}", low, high);
  return CLI::Validator(
      [=](std::string& input) -> std::string {
        double v = 0;
        const bool number = CLI::detail::lexical_cast(input, v);  // 1e999 is none
        if (!number || !std::isfinite(v))
          return fmt::format("must be a finite number {}, not {}", range, echoed(input));
        if (v < low || (!low_included && v == low) || v > high)
          return fmt::format("must be a number {}, not {}", range, echoed(input));
        return {};
      },
      fmt::format("NUMBER {}", range));
}

}  // namespace

CLI::Validator number_above(double low, double high) { return finite_number(low, false, high); }

CLI::Validator number_between(double low, double high) { return finite_number(low, true, high); }

CLI::Validator whole_number_between(long long low, long long high) {
  const std::string range = high == std::numeric_limits<long long>::max() ? fmt::format("of {} or more", low)
                                                                          : fmt::format("from {} to {}", low, high);
  return CLI::Validator(
      [=](std::string& input) -> std::string {
        long long v = 0;
        const auto [end, ec] = std::from_chars(input.data(), input.data() + input.size(), v);
        if (ec != std::errc() || end != input.data() + input.size() || v < low || v > high)
          return fmt::format("must be a whole number {}, not {}", range, echoed(input));
        return {};
      },
      fmt::format("INTEGER {}", range));
}

}  // namespace opcost
