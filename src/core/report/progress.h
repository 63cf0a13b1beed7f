#pragma once
// A status line on standard error for long work: on a terminal it is rewritten in place, in
// tqdm's manner; otherwise (a log, CI) it is printed as plain lines, at most every
// `plain_every_s`. Torch-free.
#include <cstdio>
#include <string>

namespace opcost {

class ProgressLine {
 public:
  explicit ProgressLine(std::FILE* out = stderr, double plain_every_s = 10);
  ~ProgressLine();  // clears an unfinished line on a terminal
  // Shows `text` (on a terminal at once; otherwise when the last plain line is old enough).
  void update(const std::string& text);
  // Ends the line before other output is printed.
  void clear();

 private:
  std::FILE* out_;
  bool tty_;
  double plain_every_s_, last_plain_ = -1e9;
  std::size_t shown_ = 0;  // width of the line on screen (terminal)
};

}  // namespace opcost
