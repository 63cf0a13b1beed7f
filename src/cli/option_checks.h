#pragma once
// Validators for the command line's numbers. CLI11's own accept nan and inf (every comparison
// with nan is false) and print their bounds with std::to_string, so that "--max-time -1" read
// "not in range 0.000000 to 1797693134862315708145274237317043567980705675258449965989174768
// 0315726078002853876058955863276687817154045895351438246423432132688946418276846754670353751
// 6986049910576551282076245490090389328944075868508455133942304583236903222948165808559332123
// 3483728309504.000000". These say what a number must be, in one short line. Each error reads
// "--option: <what is wrong>" (CLI11 prefixes the option's name).
#include <CLI/CLI.hpp>

namespace opcost {

// Counts and sizes on the command line: what an int holds.
inline constexpr long long kMaxWholeNumber = 2147483647;

// A finite number above `low` (exclusive) and at most `high`.
CLI::Validator number_above(double low, double high);
// A finite number from `low` to `high`, both included.
CLI::Validator number_between(double low, double high);
// A whole number from `low` to `high`, both included.
CLI::Validator whole_number_between(long long low, long long high);

}  // namespace opcost
