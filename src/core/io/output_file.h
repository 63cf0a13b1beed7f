#pragma once
// Files opcost writes, standard output included, with every write and the close checked: a
// full disk or a closed pipe fails with the path and the cause, never with a cut file behind
// an exit status of 0. Torch-free.
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>

namespace opcost {

// A write that failed; the message names the file and the system's reason.
class WriteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class OutputFile {
 public:
  // "" or "-" is standard output (never closed here, only flushed and checked). Errors name
  // `name` when given (the file a temporary one will replace: core/io/atomic_output_file.h).
  explicit OutputFile(const std::string& path, const std::string& name = "");
  ~OutputFile();  // closes without throwing when close() was not called (an error path)
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(std::string_view text);
  // Flushes and closes; throws WriteError when anything written did not reach the file.
  void close();

 private:
  [[noreturn]] void fail(const char* what, int err) const;
  std::FILE* f_ = nullptr;
  bool is_stdout_ = false;
  std::string name_;  // the name errors use: the path, or "standard output"
};

// Writes `text` to `path` ("" or "-": standard output), checked.
void write_file(const std::string& path, std::string_view text);

// Flushes standard output and throws WriteError when any earlier write to it failed (a full
// disk behind `> file`, a closed pipe): called once before a command reports success.
void check_stdout();

}  // namespace opcost
