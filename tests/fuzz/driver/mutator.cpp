#include "driver/mutator.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <stdexcept>

namespace opcost::fuzz {

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = char(std::tolower(static_cast<unsigned char>(c)));
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

// The quoted part of one dictionary line, unescaped; false when the line is not an entry.
bool dictionary_entry(const std::string& line, std::string& out) {
  const auto open = line.find('"');
  const auto close = line.rfind('"');
  if (open == std::string::npos || close <= open) return false;
  out.clear();
  for (std::size_t i = open + 1; i < close; ++i) {
    if (line[i] != '\\') {
      out += line[i];
      continue;
    }
    if (++i >= close) return false;
    if (line[i] == '\\' || line[i] == '"') {
      out += line[i];
    } else if (line[i] == 'x' && i + 2 < close && hex_digit(line[i + 1]) >= 0 && hex_digit(line[i + 2]) >= 0) {
      out += char(hex_digit(line[i + 1]) * 16 + hex_digit(line[i + 2]));
      i += 2;
    } else {
      return false;
    }
  }
  return true;
}

// Numbers at the edges: of int64, uint64, int32, double (overflow, subnormals), and the
// spellings of infinity and NaN.
const char* const kEdgeNumbers[] = {"0",
                                    "-0",
                                    "1",
                                    "-1",
                                    "2",
                                    "127",
                                    "128",
                                    "255",
                                    "256",
                                    "32767",
                                    "65536",
                                    "2147483647",
                                    "2147483648",
                                    "-2147483649",
                                    "4294967296",
                                    "1000000",
                                    "1e9",
                                    "1e18",
                                    "1e19",
                                    "9223372036854775807",
                                    "9223372036854775808",
                                    "-9223372036854775808",
                                    "-9223372036854775809",
                                    "18446744073709551615",
                                    "18446744073709551616",
                                    "99999999999999999999999999",
                                    "1e308",
                                    "1.8e308",
                                    "-1e308",
                                    "1e309",
                                    "4.9e-324",
                                    "1e-400",
                                    "0.5",
                                    "-0.0",
                                    "nan",
                                    "NaN",
                                    "inf",
                                    "-inf",
                                    "Infinity",
                                    "1e",
                                    "0x10",
                                    "00",
                                    "1_000",
                                    ".5",
                                    "5.",
                                    "+1"};

}  // namespace

std::vector<std::string> read_dictionary(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(path + ": cannot read the dictionary");
  std::vector<std::string> out;
  std::string line, entry;
  for (std::size_t n = 1; std::getline(in, line); ++n) {
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    if (!dictionary_entry(line, entry) || entry.empty())
      throw std::invalid_argument(
          path + ":" + std::to_string(n) +
          ": not a dictionary entry; write \"token\" or name=\"token\" (escapes: \\\\ \\\" \\xNN)");
    out.push_back(entry);
  }
  return out;
}

Mutator::Mutator(uint64_t seed, std::vector<std::string> dictionary, std::size_t max_len)
    : rng_(seed), dictionary_(std::move(dictionary)), max_len_(std::max<std::size_t>(max_len, 1)) {
  brackets_ = {{"(", ")"}, {"[", "]"}, {"{", "}"}};
  // A token that ends in an opening bracket ("min(", "f32[", "{\"a\":[") wraps with its closer.
  for (const auto& t : dictionary_) {
    const char last = t.back();
    const char* closer = last == '(' ? ")" : last == '[' ? "]" : last == '{' ? "}" : nullptr;
    if (closer && t.size() > 1) brackets_.emplace_back(t, closer);
  }
}

std::size_t Mutator::log_uniform_count() {
  const std::size_t bits = 1 + below(17);
  return 2 + below(std::size_t(1) << bits);
}

const std::string& Mutator::token() {
  static const std::string space = " ";
  return dictionary_.empty() ? space : dictionary_[below(dictionary_.size())];
}

void Mutator::fit(std::string& s) const {
  if (s.size() > max_len_) s.resize(max_len_);
}

std::string Mutator::mutate(const std::vector<std::string>& pool) {
  std::string s = pool[below(pool.size())];
  const std::size_t times = 1 + std::min<std::size_t>(4, std::geometric_distribution<std::size_t>(0.5)(rng_));
  for (std::size_t k = 0; k < times; ++k) {
    mutate_once(s, pool);
    fit(s);
  }
  return s;
}

void Mutator::mutate_once(std::string& s, const std::vector<std::string>& pool) {
  const std::string& other = pool[below(pool.size())];
  const std::size_t at = below(s.size() + 1);
  switch (below(14)) {
    case 0:  // flip a bit
      if (!s.empty()) s[below(s.size())] ^= char(1u << below(8));
      break;
    case 1: {  // a byte that means something to some parser, or any byte
      static const char kBytes[] = {'\0', '\n', '\r', '\t', ' ', '"',    '\'',   '\\',  '{', '}',
                                    '[',  ']',  '(',  ')',  ':', ',',    '-',    '#',   '&', '*',
                                    '!',  '%',  '|',  '>',  '~', '\x7f', '\x80', '\xff'};
      const char c = below(2) ? kBytes[below(sizeof kBytes)] : char(below(256));
      if (!s.empty()) s[below(s.size())] = c;
      break;
    }
    case 2: {  // insert a few random bytes
      std::string bytes(1 + below(8), '\0');
      for (char& c : bytes) c = char(below(256));
      s.insert(at, bytes);
      break;
    }
    case 3:  // erase a piece
      if (!s.empty()) s.erase(below(s.size()), 1 + below(std::min<std::size_t>(s.size(), 64)));
      break;
    case 4:  // insert a token
      s.insert(at, token());
      break;
    case 5:  // a piece replaced by a token
      if (!s.empty()) s.replace(below(s.size()), 1 + below(8), token());
      break;
    case 6: {  // a piece of another input inserted
      const std::size_t from = below(other.size()), len = 1 + below(64);
      s.insert(at, other.substr(from, len));
      break;
    }
    case 7: {  // this input's start, another's end
      const std::size_t from = below(other.size() + 1);
      s = s.substr(0, at) + other.substr(from);
      break;
    }
    case 8: {  // a piece of this input copied elsewhere (duplicate keys, entries, events)
      if (s.empty()) break;
      const std::size_t from = below(s.size());
      const std::string piece = s.substr(from, 1 + below(256));
      s.insert(below(s.size() + 1), piece);
      break;
    }
    case 9:
    case 10:
      repeat(s);
      break;
    case 11:
      wrap(s);
      break;
    case 12:
      edge_number(s);
      break;
    default:  // cut short: truncated files
      s.resize(below(s.size() + 1));
      break;
  }
}

// A token, or a short piece of the input, repeated many times in one place: "not not not ...",
// "[[[[", "- - -", long strings and numbers.
void Mutator::repeat(std::string& s) {
  std::string unit;
  if (!s.empty() && below(2)) {
    unit = s.substr(below(s.size()), 1 + below(4));
  } else {
    unit = token();
  }
  const std::size_t room = max_len_ > s.size() ? max_len_ - s.size() : 0;
  const std::size_t count = std::min(log_uniform_count(), room / unit.size());
  std::string run;
  run.reserve(count * unit.size());
  for (std::size_t k = 0; k < count; ++k) run += unit;
  s.insert(below(s.size() + 1), run);
}

// A short piece wrapped in the same brackets many times: "((((x))))", "[[[[1]]]]", "min(min(...))".
void Mutator::wrap(std::string& s) {
  const auto& [open, close] = brackets_[below(brackets_.size())];
  const std::size_t from = below(s.size() + 1);
  const std::size_t to = std::min(s.size(), from + below(17));
  const std::size_t room = max_len_ > s.size() ? max_len_ - s.size() : 0;
  const std::size_t levels = std::min(log_uniform_count(), room / (open.size() + close.size()));
  std::string opens, closes;
  opens.reserve(levels * open.size());
  closes.reserve(levels * close.size());
  for (std::size_t k = 0; k < levels; ++k) {
    opens += open;
    closes += close;
  }
  s = s.substr(0, from) + opens + s.substr(from, to - from) + closes + s.substr(to);
}

// A number of the input (the first digit run at or after a random place) replaced by one at
// the edge of its type; a number inserted when there is none.
void Mutator::edge_number(std::string& s) {
  const std::string edge = kEdgeNumbers[below(std::size(kEdgeNumbers))];
  std::size_t from = below(s.size() + 1);
  while (from < s.size() && !std::isdigit(static_cast<unsigned char>(s[from]))) ++from;
  if (from >= s.size()) {
    s.insert(below(s.size() + 1), edge);
    return;
  }
  std::size_t to = from;
  while (to < s.size() && (std::isdigit(static_cast<unsigned char>(s[to])) || s[to] == '.')) ++to;
  if (from > 0 && s[from - 1] == '-') --from;
  s.replace(from, to - from, edge);
}

}  // namespace opcost::fuzz
