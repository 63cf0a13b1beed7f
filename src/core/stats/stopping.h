#pragma once
// Noise-driven stopping rule (in the spirit of nvbench's `stdrel`): keep sampling until the
// 95% confidence interval of the mean is narrow enough relative to the mean, or a time
// budget is spent; then say which of the two ended the measurement.
#include <cstddef>
#include <string>

#include "core/stats/summary.h"

namespace opcost {

struct StoppingCriterion {
  double target_rel_ci95 = 0.01;  // stop when CI half-width <= this fraction of the mean
  std::size_t min_samples = 10;
  double min_seconds = 0.05;  // do not stop on a lucky first few samples
  double max_seconds = 1.0;   // budget: stop and report the CI achieved
  std::size_t max_samples = 100000;
  // A part of a whole (an operator's host time in a model's step): its interval need only keep
  // the whole's (target_rel_ci95 taken as the whole's), so the target loosens with the part's
  // share, calls × running mean / the whole's time (part_rel_ci95). A view of 3 µs in a step of
  // 10 ms meets it in its first samples. Unset (whole_us 0): target_rel_ci95 alone.
  struct Share {
    double whole_us = 0;
    double calls = 1;
  };
  Share share_of;
};

// The relative interval `c` stops at for a mean of `mean`: its target, or its share's where looser.
double share_sized_rel_ci95(const StoppingCriterion& c, double mean);

enum class StopReason { kRunning, kConverged, kTimeBudget, kSampleBudget };
std::string to_string(StopReason r);

class AdaptiveStop {
 public:
  explicit AdaptiveStop(StoppingCriterion c) : c_(c) {}
  // Adds one sample; `elapsed_s` is the time spent measuring so far.
  void add(double sample, double elapsed_s);
  bool done() const { return reason_ != StopReason::kRunning; }
  StopReason reason() const { return reason_; }
  const RunningStats& stats() const { return stats_; }
  // The relative interval it stops at, now: target_rel_ci95, or the share's where looser.
  double target_rel_ci95() const;

 private:
  StoppingCriterion c_;
  RunningStats stats_;
  StopReason reason_ = StopReason::kRunning;
};

// The relative 95% interval a part of a whole needs (an operator in a model's step), so that
// the whole keeps `whole_rel_ci95`: parts holding shares s_i of the whole (Σ s_i ≤ 1) with
// relative intervals whole / √s_i add in quadrature to whole² × Σ s_i ≤ whole². A small
// part may be loose (a 1% share: ten times the whole's interval), a large one is held tighter
// than the whole. At most 1 (±100%); a share of 0 or less gets that.
double part_rel_ci95(double whole_rel_ci95, double share);

}  // namespace opcost
