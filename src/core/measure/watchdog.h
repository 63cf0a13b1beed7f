#pragma once
// Keeps one measurement honest about time: it reports progress once a measurement has run for
// a few seconds, and abandons one that overruns its budget many times over (an operator that
// waits on the device, or calls that take far longer than the budget allows) with an error
// that says so, instead of leaving the user at a silent prompt. Torch-free; the clock is
// injectable so tests drive it.
#include <functional>
#include <stdexcept>
#include <string>

namespace opcost {

class MeasurementAbandoned : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Receives one status line at a time ("aten::addmm: timing, 3 samples, 12 s of a 3.5 s budget").
using ProgressFn = std::function<void(const std::string&)>;

class Watchdog {
 public:
  struct Options {
    double budget_s = 5;          // what the measurement is expected to take
    double abandon_factor = 10;   // abandoned past budget_s × this
    double progress_after_s = 3;  // silent before this
    double progress_every_s = 1;  // then at most this often
  };
  // `what` names the measurement in messages; `now_s` defaults to the monotonic clock.
  Watchdog(std::string what, Options o, ProgressFn progress = {}, std::function<double()> now_s = {});

  // Called between calls or batches, so it only reads the clock: the message is formatted
  // when one is due. Reports progress; throws MeasurementAbandoned past the limit. `phase`,
  // `count` and `unit` say where the measurement is ("timing", 3, "samples").
  void check(const char* phase, std::size_t count = 0, const char* unit = nullptr);
  double elapsed_s() const;
  double limit_s() const { return o_.budget_s * o_.abandon_factor; }

 private:
  std::string what_;
  Options o_;
  ProgressFn progress_;
  std::function<double()> now_;
  double start_, last_report_ = -1;
};

}  // namespace opcost
