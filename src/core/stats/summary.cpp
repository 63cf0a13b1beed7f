#include "core/stats/summary.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace opcost {

double student_t975(std::size_t dof) {
  // Exact table for small dof, then the Cornish-Fisher expansion, whose error is below
  // 1e-4 from dof 30 on.
  static const double table[] = {0,     12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                 2.201, 2.179,  2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080,
                                 2.074, 2.069,  2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (dof == 0) return std::numeric_limits<double>::infinity();
  if (dof <= 30) return table[dof];
  const double z = 1.959963984540054, v = double(dof);
  const double z3 = z * z * z, z5 = z3 * z * z, z7 = z5 * z * z;
  return z + (z3 + z) / (4 * v) + (5 * z5 + 16 * z3 + 3 * z) / (96 * v * v) +
         (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * v * v * v);
}

double Summary::rel_ci95() const {
  if (n < 2 || mean == 0) return std::numeric_limits<double>::infinity();
  return ci95_half_width() / std::abs(mean);
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  double m = v[mid];
  if (v.size() % 2 == 0) m = (m + *std::max_element(v.begin(), v.begin() + mid)) / 2;
  return m;
}

static double mean_of(std::span<const double> v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
}

static double stdev_of(std::span<const double> v, double mean) {
  if (v.size() < 2) return 0;
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / double(v.size() - 1));
}

double sigma_clipped_mean(std::span<const double> samples, double k, std::size_t* removed) {
  std::vector<double> kept(samples.begin(), samples.end());
  for (int round = 0; round < 10 && kept.size() > 2; ++round) {
    const double center = median_of(kept);
    const double sd = stdev_of(kept, mean_of(kept));
    if (sd == 0) break;
    const auto before = kept.size();
    std::erase_if(kept, [&](double x) { return std::abs(x - center) > k * sd; });
    if (kept.size() == before) break;
  }
  if (removed) *removed = samples.size() - kept.size();
  return mean_of(kept);
}

Summary with_ci95_half_width(Summary s, double half_width) {
  const double old_half = s.ci95_half_width();
  s.stdev = old_half > 0 ? s.stdev * half_width / old_half
                         : half_width / student_t975(std::max<std::size_t>(s.n, 2) - 1) * std::sqrt(double(s.n));
  s.ci95_low = s.mean - half_width;
  s.ci95_high = s.mean + half_width;
  return s;
}

Summary summarize(std::span<const double> samples) {
  Summary s;
  s.n = samples.size();
  if (s.n == 0) return s;
  s.mean = mean_of(samples);
  s.median = median_of({samples.begin(), samples.end()});
  s.stdev = stdev_of(samples, s.mean);
  auto [lo, hi] = std::minmax_element(samples.begin(), samples.end());
  s.min = *lo;
  s.max = *hi;
  s.clipped_mean = sigma_clipped_mean(samples, 3.0, &s.clipped_out);
  if (s.n >= 2) {
    const double half = student_t975(s.n - 1) * s.stdev / std::sqrt(double(s.n));
    s.ci95_low = s.mean - half;
    s.ci95_high = s.mean + half;
  } else {
    s.ci95_low = s.ci95_high = s.mean;
  }
  return s;
}

void RunningStats::add(double x) {
  ++n_;
  const double d = x - mean_;
  mean_ += d / double(n_);
  m2_ += d * (x - mean_);
}

double RunningStats::rel_ci95() const {
  if (n_ < 2 || mean_ == 0) return std::numeric_limits<double>::infinity();
  return student_t975(n_ - 1) * std::sqrt(variance() / double(n_)) / std::abs(mean_);
}

}  // namespace opcost
