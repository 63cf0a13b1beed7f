#pragma once
// Descriptive statistics of a sample of per-call measurements, and the Student-t interval
// of its mean. Torch-free.
#include <cstddef>
#include <span>
#include <vector>

namespace opcost {

struct Summary {
  std::size_t n = 0;
  double mean = 0, median = 0, stdev = 0, min = 0, max = 0;
  double clipped_mean = 0;             // mean after iterative 3-sigma clipping around the median
  std::size_t clipped_out = 0;         // samples removed by the clipping
  double ci95_low = 0, ci95_high = 0;  // 95% Student-t interval of the mean

  double ci95_half_width() const { return (ci95_high - ci95_low) / 2; }
  // Half-width of the interval relative to the mean; infinite when undefined.
  double rel_ci95() const;
};

// Two-sided 95% quantile of Student's t distribution (t_{0.975, dof}); dof >= 1.
double student_t975(std::size_t dof);

Summary summarize(std::span<const double> samples);

// `s` with its 95% interval set to mean ± `half_width` (widened for an error its samples do not
// show), its stdev in step so that stdev/√n stays its standard error.
Summary with_ci95_half_width(Summary s, double half_width);

// Mean after iterative sigma clipping: samples farther than k standard deviations from the
// median of the kept set are dropped until none is (at most 10 rounds).
double sigma_clipped_mean(std::span<const double> samples, double k, std::size_t* removed);

double median_of(std::vector<double> values);

// Welford's online mean and variance, for stopping rules that must not re-scan samples.
class RunningStats {
 public:
  void add(double x);
  std::size_t count() const { return n_; }
  double mean() const { return mean_; }
  double variance() const { return n_ > 1 ? m2_ / double(n_ - 1) : 0.0; }
  // Half-width of the 95% interval of the mean, relative to the mean.
  double rel_ci95() const;

 private:
  std::size_t n_ = 0;
  double mean_ = 0, m2_ = 0;
};

}  // namespace opcost
