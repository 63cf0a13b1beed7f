#include "core/report/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

#include "core/energy/monitor.h"  // now_s
#include "core/text/text.h"

namespace opcost {

ProgressLine::ProgressLine(std::FILE* out, double plain_every_s)
    : out_(out), tty_(isatty(fileno(out)) == 1), plain_every_s_(plain_every_s) {}

ProgressLine::~ProgressLine() { clear(); }

void ProgressLine::update(const std::string& text) {
  if (tty_) {
    const std::size_t width = text.size();
    fmt::print(out_, "\r{}{}", text, std::string(shown_ > width ? shown_ - width : 0, ' '));
    shown_ = width;
    std::fflush(out_);
    return;
  }
  const double t = now_s();
  if (t - last_plain_ < plain_every_s_) return;
  last_plain_ = t;
  fmt::print(out_, "{}\n", text);
  std::fflush(out_);
}

void ProgressLine::clear() {
  if (!tty_ || shown_ == 0) return;
  fmt::print(out_, "\r{}\r", std::string(shown_, ' '));
  shown_ = 0;
  std::fflush(out_);
}

namespace {

// "02:31", "1:02:31" as tqdm writes a duration.
std::string clock_text(double seconds) {
  const long s = long(seconds + 0.5);
  return s >= 3600 ? fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
                   : fmt::format("{:02}:{:02}", s / 60, s % 60);
}

std::string bar(double fraction, int width) {
  static const char* const eighths[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
  const int cells = int(fraction * width * 8);
  std::string out;
  for (int i = 0; i < cells / 8; ++i) out += "█";
  out += eighths[cells % 8];
  return out + std::string(std::size_t(width - cells / 8 - (cells % 8 ? 1 : 0)), ' ');
}

}  // namespace

std::string progress_text(const std::string& label, std::size_t done, std::size_t total, double elapsed_s,
                          bool terminal, std::size_t done_before) {
  const double fraction = total ? std::min(1.0, double(done) / double(total)) : 1.0;
  const bool paced = done > done_before && elapsed_s > 0;
  const double rate = paced ? double(done - done_before) / elapsed_s : 0;
  const double left_s = paced ? double(total - std::min(done, total)) / rate : 0;
  if (terminal)
    return fmt::format("{} {:3.0f}%|{}| {}/{} [{}<{}, {}]", label, 100 * fraction, bar(fraction, 20), done, total,
                       clock_text(elapsed_s), paced ? clock_text(left_s) : "?",
                       paced ? fmt::format("{:.2f} it/s", rate) : "? it/s");
  return fmt::format("{}: {} of {} items ({:.0f}%){}", label, done, total, 100 * fraction,
                     paced ? fmt::format(", {:.2f} items/s, {} in, about {} left", rate, format_duration(elapsed_s),
                                         format_duration(left_s))
                           : "");
}

}  // namespace opcost
