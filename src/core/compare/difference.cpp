#include "core/compare/difference.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

namespace opcost {

bool Difference::significant() const {
  // Judged on the relative interval, the one every table shows: paired rounds' ratios, so that a
  // slow round counts as a ratio rather than as an absolute shift.
  return samples >= 2 && std::isfinite(relative_ci95) && std::abs(relative) > relative_ci95;
}

std::string Difference::text() const {
  if (samples < 2 || !std::isfinite(relative_ci95))
    return fmt::format("{:+.1f}% (no interval: fewer than 2 samples)", 100 * relative);
  const std::string figure = fmt::format("{:+.1f}% ±{:.1f}%", 100 * relative, 100 * relative_ci95);
  return significant() ? figure : figure + " (no significant difference)";
}

Difference paired_difference(std::span<const double> variant, std::span<const double> baseline) {
  if (variant.size() != baseline.size())
    throw std::invalid_argument(fmt::format("paired difference: {} variant rounds against {} baseline rounds",
                                            variant.size(), baseline.size()));
  std::vector<double> deltas, ratios;
  double base_sum = 0;
  for (std::size_t i = 0; i < variant.size(); ++i) {
    if (!(baseline[i] > 0) || !std::isfinite(baseline[i]) || !std::isfinite(variant[i]))
      throw std::invalid_argument(
          fmt::format("paired difference: round {} has baseline {} and variant {}", i, baseline[i], variant[i]));
    deltas.push_back(variant[i] - baseline[i]);
    ratios.push_back(variant[i] / baseline[i] - 1);
    base_sum += baseline[i];
  }
  Difference d;
  d.samples = variant.size();
  if (d.samples == 0) return d;
  d.baseline = base_sum / double(d.samples);
  const Summary delta = summarize(deltas), ratio = summarize(ratios);
  d.delta = delta.mean;
  d.relative = ratio.mean;
  const double inf = std::numeric_limits<double>::infinity();
  d.delta_ci95 = d.samples >= 2 ? delta.ci95_half_width() : inf;
  d.relative_ci95 = d.samples >= 2 ? ratio.ci95_half_width() : inf;
  return d;
}

Difference welch_difference(const Summary& variant, const Summary& baseline) {
  Difference d;
  d.samples = std::min(variant.n, baseline.n);
  d.baseline = baseline.mean;
  d.delta = variant.mean - baseline.mean;
  d.relative = baseline.mean != 0 ? d.delta / baseline.mean : 0;
  const double inf = std::numeric_limits<double>::infinity();
  if (d.samples < 2) {
    d.delta_ci95 = d.relative_ci95 = inf;
    return d;
  }
  const double a = variant.stdev * variant.stdev / double(variant.n);
  const double b = baseline.stdev * baseline.stdev / double(baseline.n);
  const double se = std::sqrt(a + b);
  // Welch–Satterthwaite; both spreads 0 (identical samples): the smaller side's n - 1.
  const double dof_real = a + b > 0
                              ? (a + b) * (a + b) / (a * a / double(variant.n - 1) + b * b / double(baseline.n - 1))
                              : double(d.samples - 1);
  const std::size_t dof = std::max<std::size_t>(1, std::size_t(std::floor(dof_real)));
  d.delta_ci95 = student_t975(dof) * se;
  d.relative_ci95 = baseline.mean != 0 ? d.delta_ci95 / std::abs(baseline.mean) : inf;
  return d;
}

nlohmann::json to_json(const Difference& d) {
  auto finite_or_null = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  return {{"samples", d.samples},
          {"baseline", d.baseline},
          {"delta", d.delta},
          {"delta_ci95", finite_or_null(d.delta_ci95)},
          {"relative", d.relative},
          {"relative_ci95", finite_or_null(d.relative_ci95)},
          {"significant", d.significant()}};
}

}  // namespace opcost
