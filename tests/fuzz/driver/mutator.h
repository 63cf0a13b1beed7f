#pragma once
// The committed driver's mutations: seeded, so a run is repeated by its seed. Without coverage
// feedback they lean on what finds bugs in parsers of text: tokens of the language (a libFuzzer
// dictionary), numbers at the edges of their types, pieces of other inputs, and a token repeated
// or a piece wrapped in brackets thousands of times, to reach deep nesting and long runs.
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace opcost::fuzz {

// A libFuzzer dictionary ("token" or name="token" per line, # comments, \\ \" \xNN escapes).
// Throws std::invalid_argument naming the file and line of an entry it cannot read.
std::vector<std::string> read_dictionary(const std::string& path);

class Mutator {
 public:
  Mutator(uint64_t seed, std::vector<std::string> dictionary, std::size_t max_len);

  // A new input: one of `pool` (not empty) changed by one to five mutations, at most max_len bytes.
  std::string mutate(const std::vector<std::string>& pool);

 private:
  std::size_t below(std::size_t n) { return n ? std::size_t(rng_() % n) : 0; }
  // A count from 2 to 2^17, as likely to be tens as tens of thousands.
  std::size_t log_uniform_count();
  const std::string& token();
  void fit(std::string& s) const;

  void mutate_once(std::string& s, const std::vector<std::string>& pool);
  void repeat(std::string& s);
  void wrap(std::string& s);
  void edge_number(std::string& s);

  std::mt19937_64 rng_;
  std::vector<std::string> dictionary_;
  std::vector<std::pair<std::string, std::string>> brackets_;  // (opener, closer) to wrap with
  std::size_t max_len_;
};

}  // namespace opcost::fuzz
