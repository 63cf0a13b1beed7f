#include "core/text/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

#include "core/spec/op_call.h"

namespace opcost {

namespace {
constexpr std::size_t kLongestTypo = 200;
}  // namespace

std::size_t edit_distance(std::string_view s, std::string_view t) {
  std::vector<std::size_t> prev(t.size() + 1), cur(t.size() + 1);
  for (std::size_t j = 0; j <= t.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= s.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= t.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (s[i - 1] != t[j - 1])});
    std::swap(prev, cur);
  }
  return prev[t.size()];
}

std::vector<std::string> closest(std::string_view word, const std::vector<std::string>& candidates, std::size_t max) {
  // Names are short: a longer word is no typo of one, and its distances to every candidate
  // would cost its length times theirs (a 10 MB argument: minutes).
  if (word.size() > kLongestTypo) return {};
  std::vector<std::pair<std::size_t, std::string>> scored;
  for (const auto& c : candidates) scored.push_back({edit_distance(word, c), c});
  std::sort(scored.begin(), scored.end());
  scored.erase(std::unique(scored.begin(), scored.end()), scored.end());
  const std::size_t limit = std::max<std::size_t>(3, word.size() / 4);
  std::vector<std::string> out;
  for (const auto& [d, c] : scored) {
    if (out.size() >= max || d > limit) break;
    out.push_back(c);
  }
  return out;
}

std::string fit_label(const std::string& label, std::size_t width) {
  if (label.size() <= width || width < 12) return label;
  std::size_t keep = width - 7;  // then "…" (one column) and six hex digits
  while (keep > 0 && (static_cast<unsigned char>(label[keep]) & 0xC0) == 0x80) --keep;  // whole UTF-8 characters
  return label.substr(0, keep) + "…" + stable_hash(label).substr(0, 6);                 // the same tag on every run
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) bytes /= 1024, ++u;
  return u == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.1f} {}", bytes, units[u]);
}

namespace {
// Length of the valid UTF-8 sequence at s[i], or 0.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  std::size_t n = 0;
  unsigned min = 0;
  if (b < 0x80) return 1;
  if ((b & 0xE0) == 0xC0)
    n = 2, min = 0x80;
  else if ((b & 0xF0) == 0xE0)
    n = 3, min = 0x800;
  else if ((b & 0xF8) == 0xF0)
    n = 4, min = 0x10000;
  else
    return 0;
  if (i + n > s.size()) return 0;
  unsigned cp = b & (0x7F >> n);
  for (std::size_t k = 1; k < n; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (c & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;  // overlong, surrogate
  return n;
}
}  // namespace

std::string printable(std::string_view text, bool keep_newlines) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    const std::size_t n = utf8_length(text, i);
    const bool kept_control = keep_newlines && (b == '\n' || b == '\t');
    if (n == 0 || (n == 1 && b < 0x20 && !kept_control) || b == 0x7F) {
      out += fmt::format("\\x{:02x}", b);
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string elide(std::string_view text, std::size_t max_chars) {
  if (text.size() <= max_chars) return std::string(text);
  const std::string_view mark = "…";
  const std::size_t room = max_chars > mark.size() ? max_chars - mark.size() : 0;
  std::size_t head = room - room / 3, tail_start = text.size() - room / 3;
  // Whole characters on both sides: a cut never leaves half of one to be escaped as \xNN.
  auto continuation = [&](std::size_t i) { return (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80; };
  while (head > 0 && head < text.size() && continuation(head)) --head;
  while (tail_start < text.size() && continuation(tail_start)) ++tail_start;
  return std::string(text.substr(0, head)) + std::string(mark) + std::string(text.substr(tail_start));
}

std::string printable_one_line(std::string_view text, std::size_t max_chars) {
  // Cut first: the escaping below then reads a bounded text, and never grows one past 4 ×.
  const std::string cut = elide(text, max_chars);
  std::string out;
  out.reserve(cut.size());
  for (char c : cut) {
    // The common line breaks as a reader knows them; every other control byte as \xNN below.
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\r')
      out += "\\r";
    else
      out += c;
  }
  return printable(out, false);
}

std::string user_message(std::string_view what) {
  // c10::Error::what() = message + "\nException raised from ..." + frames.
  for (const char* marker : {"\nException raised from ", "\nFrame #", "\nframe #"}) {
    const auto at = what.find(marker);
    if (at != std::string_view::npos) what = what.substr(0, at);
  }
  while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) what.remove_suffix(1);
  return printable(what);
}

std::string format_duration(double seconds) {
  const long long s = std::llround(std::max(0.0, seconds));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m {:02}s", s / 60, s % 60);
  return fmt::format("{}h {:02}m", s / 3600, (s % 3600) / 60);
}

}  // namespace opcost
