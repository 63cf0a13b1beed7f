#pragma once
// What the fuzz targets share, whichever engine runs them (the committed driver in CI, or
// libFuzzer in bench/run_fuzz): a count of accepted inputs, the checks every refusal must pass,
// and the input as a file for the parsers that read paths. Torch-free.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace opcost {
struct TraceRun;
}

namespace opcost::fuzz {

// A parser accepted the input: the committed driver keeps such inputs to mutate further, since
// it has no coverage feedback to tell it which inputs go deeper.
void note_accepted();
std::size_t accepted_count();

// A broken expectation (an accepted value that does not print back, a message of two lines):
// printed, then abort(), so that either engine saves the input as it does for a crash.
[[noreturn]] void fail(std::string_view what);

// A refusal as the project's rules want it: one line (a message cannot be two), not longer
// than kMaxMessageBytes (an input is not echoed whole), and, where `input_name` is given,
// naming the input. With OPCOST_FUZZ_VERBOSE set, each refusal is printed (why a seed fails);
// with OPCOST_FUZZ_MESSAGES=0, messages are not checked (to look past a known message finding).
constexpr std::size_t kMaxMessageBytes = 16 * 1024;
void check_refusal(std::string_view message, std::string_view input_name = {});

// An imported trace has no range (call, device activity, step, layer) that ends before it
// starts: a negative or overflowing span must be skipped by the importer, never kept.
void check_imported_spans(const TraceRun& run);

// A trace importer run on the input's file: it refuses the file in a message check_refusal
// accepts (std::invalid_argument), or imports spans that pass check_imported_spans.
void check_trace_import(const std::string& path, const std::function<TraceRun(const std::string&)>& import);

// The input written to a file of this process's own temporary directory (removed at exit),
// for parsers that take a path. One file per suffix, rewritten for each input.
class InputFile {
 public:
  explicit InputFile(std::string suffix);
  // Writes the bytes and returns the path; aborts when the write fails (no input to test).
  const std::string& write(const uint8_t* data, std::size_t size);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace opcost::fuzz
