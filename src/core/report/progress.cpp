#include "core/report/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include "core/energy/monitor.h"  // now_s

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

}  // namespace opcost
