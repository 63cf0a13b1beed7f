#pragma once
// How a replay treats its inputs between calls, parsed once from the text a user, a spec file
// or an inventory gives ("warm", "cold", "cold:<arg>,<arg>") and printed back the same way: the
// text is part of every stored row's key, so to_string(parse_cache_mode(t)) == t for any t
// that parses. Torch-free; the replay maps argument names to the schema's positions.
#include <string>
#include <string_view>
#include <vector>

namespace opcost {

struct CacheMode {
  enum class Kind {
    warm,       // one input set, reused: the inputs stay in cache between calls
    cold,       // every tensor argument rotated over copies that span the cold footprint
    cold_args,  // only `arguments` rotated (a weight read from memory beside a fresh activation)
  };
  Kind kind = Kind::warm;
  std::vector<std::string> arguments;  // cold_args: the schema argument names, as given

  static CacheMode warm() { return {}; }
  static CacheMode cold() { return {Kind::cold, {}}; }
  static CacheMode cold_args(std::vector<std::string> names) { return {Kind::cold_args, std::move(names)}; }

  bool is_warm() const { return kind == Kind::warm; }
  bool rotates_all() const { return kind == Kind::cold; }
  bool operator==(const CacheMode&) const = default;
};

// Longest cache-mode text accepted (a few dozen argument names): a bound on what reaches a
// message, a row or a job script.
inline constexpr std::size_t kMaxCacheModeBytes = 1024;

// Parses "warm", "cold" or "cold:<arg>,<arg>" (argument names: letters, digits and _, not
// starting with a digit). Throws std::invalid_argument with one line naming the text and the
// fix, prefixed by "<where>: " when `where` is given ("--cache", "spec.yaml:12").
CacheMode parse_cache_mode(std::string_view text, std::string_view where = {});

// "warm", "cold" or "cold:<arg>,<arg>" (the names in the order given).
std::string to_string(const CacheMode& mode);

// How many input sets a replay in a cold mode rotates through: enough copies of its cold
// inputs (`cold_bytes` in one set) that together they span `footprint_bytes`, 2 to 256 sets;
// 1 when the cold inputs hold no byte (nothing to rotate). One rule for an operator's replay
// (torch/replay.cpp) and a compiled kernel's (python/opcost/_compiled.py, through _core).
std::size_t cold_input_sets(std::size_t cold_bytes, std::size_t footprint_bytes);

}  // namespace opcost
