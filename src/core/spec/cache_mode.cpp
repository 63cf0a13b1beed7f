#include "core/spec/cache_mode.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "core/text/text.h"

namespace opcost {

namespace {

bool is_argument_name(std::string_view name) {
  return !name.empty() && !std::isdigit(static_cast<unsigned char>(name.front())) &&
         std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

[[noreturn]] void refuse(std::string_view where, const std::string& what) {
  throw std::invalid_argument(where.empty() ? what : fmt::format("{}: {}", where, what));
}

}  // namespace

CacheMode parse_cache_mode(std::string_view text, std::string_view where) {
  const std::string shown = printable_one_line(text, 80);
  if (text.size() > kMaxCacheModeBytes)
    refuse(where, fmt::format("cache mode '{}' is {} bytes, over the {} accepted (use warm, cold, or "
                              "cold:<argument>,...)",
                              shown, text.size(), kMaxCacheModeBytes));
  if (text == "warm") return CacheMode::warm();
  if (text == "cold") return CacheMode::cold();
  if (!text.starts_with("cold:"))
    refuse(where, fmt::format("unknown cache mode '{}' (use warm, cold, or cold:<argument>,...)", shown));
  std::string_view rest = text.substr(5);
  if (rest.empty()) refuse(where, fmt::format("cache mode '{}' names no argument (use cold:<argument>,...)", shown));
  std::vector<std::string> names;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view name = rest.substr(0, comma);
    if (name.empty())
      refuse(where, fmt::format("cache mode '{}' names an empty argument (use cold:<argument>,...)", shown));
    if (!is_argument_name(name))
      refuse(where, fmt::format("cache mode '{}': '{}' is not an argument name (letters, digits and _; use "
                                "cold:<argument>,...)",
                                shown, printable_one_line(name, 40)));
    names.emplace_back(name);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return CacheMode::cold_args(std::move(names));
}

std::string to_string(const CacheMode& mode) {
  switch (mode.kind) {
    case CacheMode::Kind::warm:
      return "warm";
    case CacheMode::Kind::cold:
      return "cold";
    case CacheMode::Kind::cold_args:
      break;
  }
  return fmt::format("cold:{}", fmt::join(mode.arguments, ","));
}

std::size_t cold_input_sets(std::size_t cold_bytes, std::size_t footprint_bytes) {
  if (cold_bytes == 0) return 1;
  return std::clamp<std::size_t>(footprint_bytes / cold_bytes + (footprint_bytes % cold_bytes ? 1 : 0), 2, 256);
}

}  // namespace opcost
