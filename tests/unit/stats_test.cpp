#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/stats/stopping.h"
#include "core/stats/summary.h"

using namespace opcost;

TEST(StudentT, MatchesTables) {
  EXPECT_NEAR(student_t975(1), 12.706, 1e-3);
  EXPECT_NEAR(student_t975(10), 2.228, 1e-3);
  EXPECT_NEAR(student_t975(30), 2.042, 1e-3);
  EXPECT_NEAR(student_t975(60), 2.000, 2e-3);
  EXPECT_NEAR(student_t975(120), 1.980, 2e-3);
  EXPECT_NEAR(student_t975(100000), 1.960, 1e-3);
}

TEST(Summary, DescribesANormalSample) {
  std::mt19937_64 rng(1);
  std::normal_distribution<double> d(100.0, 5.0);
  std::vector<double> x(5000);
  for (auto& v : x) v = d(rng);
  const Summary s = summarize(x);
  EXPECT_EQ(s.n, 5000u);
  EXPECT_NEAR(s.mean, 100.0, 0.3);
  EXPECT_NEAR(s.median, 100.0, 0.4);
  EXPECT_NEAR(s.stdev, 5.0, 0.2);
  EXPECT_LT(s.ci95_low, 100.0 + 0.3);
  EXPECT_GT(s.ci95_high, 100.0 - 0.3);
  // Half-width = t * sd / sqrt(n).
  EXPECT_NEAR(s.ci95_half_width(), 1.96 * s.stdev / std::sqrt(5000.0), 1e-3);
  EXPECT_LE(s.min, s.median);
  EXPECT_GE(s.max, s.median);
}

TEST(Summary, IntervalCoversTheTrueMeanAbout95PercentOfTheTime) {
  std::mt19937_64 rng(7);
  std::exponential_distribution<double> d(1.0);  // skewed, like timings
  int covered = 0;
  const int trials = 2000;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> x(40);
    for (auto& v : x) v = d(rng);
    const Summary s = summarize(x);
    covered += s.ci95_low <= 1.0 && 1.0 <= s.ci95_high;
  }
  const double rate = double(covered) / trials;
  EXPECT_GT(rate, 0.91);
  EXPECT_LT(rate, 0.975);
}

TEST(Summary, AWidenedIntervalIsCentredAndItsStdevKeepsStep) {
  const std::vector<double> xs{9.0, 10.0, 11.0, 10.5, 9.5};
  const Summary s = summarize(xs);
  const Summary w = with_ci95_half_width(s, 3 * s.ci95_half_width());
  EXPECT_DOUBLE_EQ(w.mean, s.mean);
  EXPECT_NEAR(w.ci95_half_width(), 3 * s.ci95_half_width(), 1e-12);
  EXPECT_NEAR(w.ci95_low, s.mean - 3 * s.ci95_half_width(), 1e-12);
  EXPECT_NEAR(w.stdev, 3 * s.stdev, 1e-12);  // stdev/√n stays the interval's standard error
  // A figure without width (a split's exact fit) gets a stdev from the new half-width and t.
  Summary exact;
  exact.n = 5;
  exact.mean = exact.ci95_low = exact.ci95_high = 2.0;
  const Summary e = with_ci95_half_width(exact, 0.5);
  EXPECT_NEAR(student_t975(4) * e.stdev / std::sqrt(5.0), 0.5, 1e-12);
  EXPECT_NEAR(e.ci95_high, 2.5, 1e-12);
}

TEST(Summary, ClippedMeanDropsOutliersButMeanDoesNot) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> d(10.0, 0.1);
  std::vector<double> x(1000);
  for (auto& v : x) v = d(rng);
  for (int i = 0; i < 10; ++i) x[i * 97] = 50.0;  // 1% preempted samples
  const Summary s = summarize(x);
  EXPECT_NEAR(s.clipped_mean, 10.0, 0.02);
  EXPECT_GT(s.mean, 10.3);
  EXPECT_GE(s.clipped_out, 10u);  // the outliers, and the few normal tails beyond 3 sigma
  EXPECT_LE(s.clipped_out, 16u);
}

TEST(Summary, MedianOfEvenAndOddCounts) {
  EXPECT_DOUBLE_EQ(median_of({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median_of({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median_of({}), 0);
}

TEST(Summary, SingleSampleHasNoInterval) {
  const std::vector<double> x = {5};
  const Summary s = summarize(x);
  EXPECT_EQ(s.n, 1u);
  EXPECT_TRUE(std::isinf(s.rel_ci95()));
}

TEST(RunningStats, AgreesWithSummary) {
  std::mt19937_64 rng(5);
  std::gamma_distribution<double> d(2.0, 3.0);
  std::vector<double> x(300);
  RunningStats r;
  for (auto& v : x) r.add(v = d(rng));
  const Summary s = summarize(x);
  EXPECT_NEAR(r.mean(), s.mean, 1e-9);
  EXPECT_NEAR(std::sqrt(r.variance()), s.stdev, 1e-9);
  EXPECT_NEAR(r.rel_ci95(), s.rel_ci95(), 1e-9);
}

TEST(AdaptiveStop, QuietSamplesConverge) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> d(20.0, 0.2);  // 1% noise: CI of 1% needs few samples
  AdaptiveStop stop({0.01, 10, 0.0, 10.0, 100000});
  int n = 0;
  while (!stop.done()) stop.add(d(rng), 0.001 * ++n);
  EXPECT_EQ(stop.reason(), StopReason::kConverged);
  EXPECT_GE(n, 10);
  EXPECT_LT(n, 20);
}

TEST(AdaptiveStop, NoisySamplesStopAtTheTimeBudget) {
  std::mt19937_64 rng(13);
  std::normal_distribution<double> d(20.0, 20.0);  // 100% noise: 1% CI needs ~40k samples
  AdaptiveStop stop({0.01, 10, 0.0, 0.5, 100000});
  int n = 0;
  while (!stop.done()) stop.add(d(rng), 0.001 * ++n);
  EXPECT_EQ(stop.reason(), StopReason::kTimeBudget);
  EXPECT_EQ(n, 500);
  EXPECT_GT(stop.stats().rel_ci95(), 0.01);
}

TEST(AdaptiveStop, MinimumTimeHoldsOffALuckyStart) {
  AdaptiveStop stop({0.01, 10, 0.2, 10.0, 100000});
  int n = 0;
  while (!stop.done()) stop.add(1.0, 0.01 * ++n);  // zero noise
  EXPECT_EQ(stop.reason(), StopReason::kConverged);
  EXPECT_EQ(n, 20);
}

TEST(AdaptiveStop, APartOfAWholeStopsAtItsShareSizedTarget) {
  // A 5 µs host call with 20% noise, once in a 10 ms step whose interval is 1%: its share is
  // 0.05%, so ±44% would do. Alone (no whole) the 1% target is far off after 10 samples.
  std::normal_distribution<double> d(5.0, 1.0);
  StoppingCriterion part{0.01, 10, 0.0, 10.0, 100000};
  part.share_of = {10'000, 1};
  std::mt19937_64 rng(17);
  AdaptiveStop stop(part);
  int n = 0;
  while (!stop.done()) stop.add(d(rng), 0.001 * ++n);
  EXPECT_EQ(stop.reason(), StopReason::kConverged);
  EXPECT_EQ(n, 10);
  EXPECT_NEAR(stop.target_rel_ci95(), part_rel_ci95(0.01, stop.stats().mean() / 10'000), 1e-12);
  EXPECT_GT(stop.target_rel_ci95(), 0.3);

  rng.seed(17);
  AdaptiveStop alone({0.01, 10, 0.0, 10.0, 100000});
  for (int i = 1; i <= 10; ++i) alone.add(d(rng), 0.001 * i);
  EXPECT_FALSE(alone.done());
  EXPECT_DOUBLE_EQ(alone.target_rel_ci95(), 0.01);

  // A part as large as the whole is held to its own target, not loosened.
  StoppingCriterion big{0.05, 10, 0.0, 10.0, 100000};
  big.share_of = {5.0, 1};
  AdaptiveStop held(big);
  held.add(5.0, 0.001);
  EXPECT_DOUBLE_EQ(held.target_rel_ci95(), 0.05);
}

TEST(PartRelCi95, PartsAtTheirTargetsKeepTheWholeWithinItsOwn) {
  // Shares as a model's operators hold them: a few large, many small, summing to 1.
  const std::vector<double> shares = {0.3, 0.2, 0.1, 0.1, 0.08, 0.07, 0.05, 0.04, 0.03, 0.02, 0.01};
  double sum = 0, variance = 0;
  for (double s : shares) {
    sum += s;
    const double r = part_rel_ci95(0.02, s);
    variance += s * s * r * r;  // the part's interval in units of the whole
  }
  ASSERT_NEAR(sum, 1.0, 1e-12);
  EXPECT_NEAR(std::sqrt(variance), 0.02, 1e-12);
  // A 1% part may be ten times as loose as the whole; the whole itself as tight as asked.
  EXPECT_NEAR(part_rel_ci95(0.02, 0.01), 0.2, 1e-12);
  EXPECT_NEAR(part_rel_ci95(0.02, 1.0), 0.02, 1e-12);
  EXPECT_GT(part_rel_ci95(0.02, 0.04), part_rel_ci95(0.02, 0.09));
}

TEST(PartRelCi95, AVanishingShareIsCappedAtHundredPercent) {
  EXPECT_EQ(part_rel_ci95(0.02, 1e-9), 1.0);
  EXPECT_EQ(part_rel_ci95(0.02, 0.0), 1.0);
  EXPECT_EQ(part_rel_ci95(0.02, -0.5), 1.0);
}
