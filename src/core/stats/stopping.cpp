#include "core/stats/stopping.h"

#include <algorithm>
#include <cmath>

namespace opcost {

std::string to_string(StopReason r) {
  switch (r) {
    case StopReason::kRunning:
      return "running";
    case StopReason::kConverged:
      return "converged";
    case StopReason::kTimeBudget:
      return "time_budget";
    case StopReason::kSampleBudget:
      return "sample_budget";
  }
  return "?";
}

void AdaptiveStop::add(double sample, double elapsed_s) {
  stats_.add(sample);
  if (done()) return;
  if (stats_.count() >= c_.min_samples && elapsed_s >= c_.min_seconds && stats_.rel_ci95() <= target_rel_ci95()) {
    reason_ = StopReason::kConverged;
  } else if (elapsed_s >= c_.max_seconds) {
    reason_ = StopReason::kTimeBudget;
  } else if (stats_.count() >= c_.max_samples) {
    reason_ = StopReason::kSampleBudget;
  }
}

double share_sized_rel_ci95(const StoppingCriterion& c, double mean) {
  const auto& part = c.share_of;
  if (!(part.whole_us > 0)) return c.target_rel_ci95;
  return std::max(c.target_rel_ci95, part_rel_ci95(c.target_rel_ci95, part.calls * mean / part.whole_us));
}

double AdaptiveStop::target_rel_ci95() const {
  return stats_.count() == 0 ? c_.target_rel_ci95 : share_sized_rel_ci95(c_, stats_.mean());
}

double part_rel_ci95(double whole_rel_ci95, double share) {
  if (!(share > 0)) return 1.0;
  return std::min(1.0, whole_rel_ci95 / std::sqrt(share));
}

}  // namespace opcost
