#pragma once
// Text helpers for messages: "did you mean" suggestions and echoing user input safely.
// Torch-free.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace opcost {

// Levenshtein distance (insertions, deletions, substitutions each cost 1).
std::size_t edit_distance(std::string_view a, std::string_view b);

// How many suggestions a "did you mean" offers, and how long an echoed text may be.
inline constexpr std::size_t kMaxSuggestions = 3;
inline constexpr std::size_t kEchoChars = 80;

// The candidates closest to `word`, nearest first, at most `max`; only those within a
// distance a typo could explain (3, or a quarter of the word's length when longer). A word
// of more than 200 characters gets none.
std::vector<std::string> closest(std::string_view word, const std::vector<std::string>& candidates,
                                 std::size_t max = kMaxSuggestions);

// A label cut to `width` characters for a table column; a cut one ends in "…" and a short hash
// of the whole, so that two different labels never print the same.
std::string fit_label(const std::string& label, std::size_t width);

// Bytes as a person reads them: "512 B", "3.2 MiB", "37.3 GiB".
std::string format_bytes(double bytes);

// Seconds as a person reads them: "12s", "3m 05s", "1h 02m".
std::string format_duration(double seconds);

// `text` with every byte that is not valid UTF-8, and every control character (but newline
// and tab when `keep_newlines`), written as \xNN: user input echoed in an error never garbles
// a terminal, and a one-line message stays one line.
std::string printable(std::string_view text, bool keep_newlines = true);

// `text` cut to at most `max_chars` bytes, its start and its end kept around "…" (and never
// inside a UTF-8 character): input echoed in an error stays readable whatever its size (a 10 MB
// argument must not become 10 MB of stderr). Shorter text is returned as it is.
std::string elide(std::string_view text, std::size_t max_chars = kEchoChars);

// User text, or a library's message built from it (yaml-cpp's "unknown escape character: " and
// the character), as an error message echoes it: cut to `max_chars` bytes by elide(), then
// escaped by printable() with newline, tab and carriage return written as \n, \t, \r. One
// line of at most 4 × `max_chars` bytes whatever the input: every echo in a message goes through
// here, so that no parser's refusal can be two lines or megabytes.
std::string printable_one_line(std::string_view text, std::size_t max_chars = kEchoChars);

// An error message as a user should see it: printable, and without the C++ backtrace that
// LibTorch appends to its exceptions ("Exception raised from ..." and the frames after it).
std::string user_message(std::string_view what);

}  // namespace opcost
