#pragma once
// A status line on standard error for long work: on a terminal it is rewritten in place, in
// tqdm's manner; otherwise (a log, CI) it is printed as plain lines, at most every
// `plain_every_s`. Torch-free.
#include <cstdio>
#include <string>

namespace opcost {

// How often a progress line is written when standard error is not a terminal (a log file).
inline constexpr double kPlainProgressEverySeconds = 10;

class ProgressLine {
 public:
  explicit ProgressLine(std::FILE* out = stderr, double plain_every_s = kPlainProgressEverySeconds);
  ~ProgressLine();  // clears an unfinished line on a terminal
  // Shows `text` (on a terminal at once; otherwise when the last plain line is old enough).
  void update(const std::string& text);
  // Ends the line before other output is printed.
  void clear();
  bool terminal() const { return tty_; }

 private:
  std::FILE* out_;
  bool tty_;
  double plain_every_s_, last_plain_ = -1e9;
  std::size_t shown_ = 0;  // width of the line on screen (terminal)
};

// Progress of `done` of `total` items after `elapsed_s`, in tqdm's manner:
//   on a terminal: "conv2d-resnet  37%|███████▍            | 98/264 [02:31<04:16, 0.65 it/s]"
//   otherwise:     "conv2d-resnet: 98 of 264 items (37%), 0.65 items/s, 2m31s in, about 4m16s left"
// The rate and what is left come once an item is done; `done_before` of the `done` were done
// before `elapsed_s` began (a resumed run), so they count for the bar but not for the rate.
std::string progress_text(const std::string& label, std::size_t done, std::size_t total, double elapsed_s,
                          bool terminal, std::size_t done_before = 0);

}  // namespace opcost
