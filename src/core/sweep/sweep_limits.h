#pragma once
// What a sweep file (a grid or a model list) may ask for. How many items: counted from its lists'
// lengths before anything is expanded, since a five-line grid (or one YAML anchor reused on six
// axes) can ask for 10^18 items, which no machine holds and no database should be asked to
// enroll. Its name: one short line, since it names the sweep in the database, in messages and
// in Slurm job names. Torch-free.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/text/text.h"

namespace opcost {

// The items a sweep file may make unless the user raises it (`--max-items`, Python max_items=).
inline constexpr std::uint64_t kDefaultMaxSweepItems = 1'000'000;

// A sweep file with more items than allowed: the message says how many, of what, and the fix.
struct SweepTooLarge : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// a * b and a + b, or UINT64_MAX when the true value is larger: a count never wraps to a small one.
inline std::uint64_t saturating_product(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<std::uint64_t>::max() : r;
}
inline std::uint64_t saturating_sum(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<std::uint64_t>::max() : r;
}

// SweepTooLarge when `count` (saturated) exceeds `max_items`. `what` names what was counted and
// how ("combinations (batch 100 × hw 100 × ...; `where` filters may keep fewer)").
inline void check_item_count(std::uint64_t count, std::uint64_t max_items, const std::string& origin,
                             const std::string& what) {
  if (count <= max_items) return;
  const std::string n = count == std::numeric_limits<std::uint64_t>::max()
                            ? fmt::format("more than {}", std::numeric_limits<std::uint64_t>::max())
                            : fmt::format("{}", count);
  throw SweepTooLarge(fmt::format(
      "{}: {} {}, more than the {} items a sweep may have; narrow the lists, split the file into several sweeps, or "
      "raise the limit (--max-items N; Python: max_items=N)",
      origin, n, what, max_items));
}

// std::invalid_argument unless `name` is 1 to 200 bytes without control characters (a newline).
inline void check_sweep_name(const std::string& name, const std::string& origin) {
  if (name.empty() || name.size() > 200 ||
      std::any_of(name.begin(), name.end(), [](char c) { return std::iscntrl(static_cast<unsigned char>(c)); }))
    throw std::invalid_argument(
        fmt::format("{}: the sweep's name '{}' must be one line of 1 to 200 bytes without control characters: set "
                    "one (name: conv2d-resnet)",
                    origin, printable_one_line(name, 60)));
}

}  // namespace opcost
