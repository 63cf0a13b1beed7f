// compare's arithmetic (paired and unpaired differences with their intervals) and its per-layer
// matching across variants' traces (core/compare).
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/compare/difference.h"
#include "core/compare/layer_comparison.h"
#include "core/compare/variant_spec.h"

using namespace opcost;

TEST(PairedDifference, IsTheMeanOfTheRoundsDifferencesWithTheirStudentInterval) {
  // Rounds whose baseline drifts by 20% while the variant stays 10% below it each round: the
  // pairing removes the drift, and the interval comes from the per-round differences alone.
  const std::vector<double> base = {100, 110, 120, 105, 115};
  const std::vector<double> variant = {90, 99, 108, 94.5, 103.5};
  const Difference d = paired_difference(variant, base);
  EXPECT_EQ(d.samples, 5u);
  EXPECT_NEAR(d.baseline, 110, 1e-9);
  EXPECT_NEAR(d.delta, -11, 1e-9);
  EXPECT_NEAR(d.relative, -0.10, 1e-12);
  EXPECT_NEAR(d.relative_ci95, 0, 1e-12);  // every round's ratio is 0.9
  EXPECT_TRUE(d.significant());
  // The absolute differences vary (-10 … -12): stdev of {-10,-11,-12,-10.5,-11.5} is 0.79057,
  // t(4) = 2.776, n = 5.
  EXPECT_NEAR(d.delta_ci95, 2.776 * 0.790569 / std::sqrt(5.0), 1e-4);
}

TEST(PairedDifference, SaysNoSignificantDifferenceWhenTheIntervalIncludesZero) {
  const Difference d =
      paired_difference(std::vector<double>{101, 99, 100.5, 99.5}, std::vector<double>{100, 100, 100, 100});
  EXPECT_FALSE(d.significant());
  EXPECT_NE(d.text().find("no significant difference"), std::string::npos) << d.text();
  const Difference same = paired_difference(std::vector<double>{5, 5}, std::vector<double>{5, 5});
  EXPECT_FALSE(same.significant());  // 0 ± 0: no difference, not a "real" one
}

TEST(PairedDifference, HasNoIntervalFromOneRoundAndRefusesMismatchedOrEmptyBaselines) {
  const Difference one = paired_difference(std::vector<double>{80}, std::vector<double>{100});
  EXPECT_TRUE(std::isinf(one.delta_ci95));
  EXPECT_FALSE(one.significant());
  EXPECT_NE(one.text().find("no interval"), std::string::npos);
  EXPECT_TRUE(to_json(one)["delta_ci95"].is_null());
  EXPECT_THROW(paired_difference(std::vector<double>{1, 2}, std::vector<double>{1}), std::invalid_argument);
  EXPECT_THROW(paired_difference(std::vector<double>{1}, std::vector<double>{0}), std::invalid_argument);
  EXPECT_THROW(paired_difference(std::vector<double>{NAN}, std::vector<double>{1}), std::invalid_argument);
}

TEST(WelchDifference, UsesEachSidesSpreadAndTheWelchDegreesOfFreedom) {
  const Summary a = summarize(std::vector<double>{10, 12, 11, 13, 9});   // mean 11, var 2.5
  const Summary b = summarize(std::vector<double>{20, 20.5, 19.5, 20});  // mean 20, var 1/6
  const Difference d = welch_difference(a, b);
  EXPECT_NEAR(d.delta, -9, 1e-12);
  EXPECT_NEAR(d.relative, -0.45, 1e-12);
  const double va = 2.5 / 5, vb = (1.0 / 6) / 4, se = std::sqrt(va + vb);
  const double dof = (va + vb) * (va + vb) / (va * va / 4 + vb * vb / 3);  // 4.64 → 4
  EXPECT_EQ(std::size_t(std::floor(dof)), 4u);
  EXPECT_NEAR(d.delta_ci95, student_t975(4) * se, 1e-9);
  EXPECT_TRUE(d.significant());
  EXPECT_EQ(d.samples, 4u);
}

namespace {

// Two steps on thread 1; per step: the model "Net" [0, 100] holding layer "Net.a" [10, 50] (one
// call whose kernel takes `a_us` µs) and, when `with_b`, "Net.b" [60, 90] (a kernel of 30 µs).
TraceRun two_step_run(double a_us_step1, double a_us_step2, bool with_b) {
  TraceRun run;
  run.source = "test";
  uint64_t correlation = 1;
  const double a_us[] = {a_us_step1, a_us_step2};
  for (int s = 0; s < 2; ++s) {
    const int64_t t0 = s * 1'000'000;
    run.steps.push_back({"ProfilerStep#" + std::to_string(s), 1, t0, t0 + 900'000});
    run.layers.push_back({"Net", 1, t0, t0 + 100'000});
    run.layers.push_back({"Net.a", 1, t0 + 10'000, t0 + 50'000});
    run.ops.push_back({"aten::mm", "", 1, t0 + 12'000, t0 + 20'000, {correlation}});
    run.device_activities.push_back(
        {"gemm", "kernel", 0, 7, t0 + 100'000, t0 + 100'000 + int64_t(a_us[s] * 1000), correlation});
    ++correlation;
    if (with_b) {
      run.layers.push_back({"Net.b", 1, t0 + 60'000, t0 + 90'000});
      run.ops.push_back({"aten::relu", "", 1, t0 + 62'000, t0 + 70'000, {correlation}});
      run.device_activities.push_back({"relu", "kernel", 0, 7, t0 + 300'000, t0 + 330'000, correlation});
      ++correlation;
    }
  }
  tie_activities(run);
  return run;
}

const LayerComparisonRow& row_of(const LayerComparison& c, const std::string& layer) {
  for (const auto& r : c.rows)
    if (r.layer == layer) return r;
  throw std::runtime_error("no layer " + layer);
}

}  // namespace

TEST(LayerComparison, MatchesLayersByPathWithEachStepASample) {
  const TraceRun base = two_step_run(100, 110, true), variant = two_step_run(50, 56, true);
  const LayerComparison c = compare_layers({"fp32", "bf16"}, {base, variant}, 0, /*gpu_time=*/true);
  EXPECT_EQ(c.time_kind, "gpu");
  const auto& a = row_of(c, "Net.a");
  ASSERT_TRUE(a.figures[0] && a.figures[1]);
  EXPECT_EQ(a.figures[0]->time_us.n, 2u);  // one sample per traced step
  EXPECT_NEAR(a.figures[0]->time_us.mean, 105, 1e-6);
  EXPECT_NEAR(a.figures[1]->time_us.mean, 53, 1e-6);
  EXPECT_EQ(a.figures[0]->calls_per_step, 1u);
  ASSERT_TRUE(a.time_vs_baseline[1]);
  EXPECT_FALSE(a.time_vs_baseline[0]);  // the baseline against itself: nothing
  EXPECT_NEAR(a.time_vs_baseline[1]->delta, -52, 1e-6);
  EXPECT_TRUE(a.presence.empty());
  // Inclusive: the model's row holds both layers' kernels.
  EXPECT_NEAR(row_of(c, "Net").figures[0]->time_us.mean, 105 + 30, 1e-6);
  EXPECT_EQ(c.rows.front().layer, "Net");  // the baseline's costliest first
}

TEST(LayerComparison, ALayerAVariantLacksIsMarkedNeverZero) {
  const TraceRun base = two_step_run(100, 100, true), fused = two_step_run(80, 80, false);
  const LayerComparison c = compare_layers({"eager", "compile"}, {base, fused}, 0, true);
  const auto& b = row_of(c, "Net.b");
  EXPECT_TRUE(b.figures[0]);
  EXPECT_FALSE(b.figures[1]);
  EXPECT_FALSE(b.time_vs_baseline[1]);
  EXPECT_EQ(b.presence, "fused away or not called in compile");
  // Seen from the other side: a layer only the variant has comes after the baseline's.
  const LayerComparison reversed = compare_layers({"compile", "eager"}, {fused, base}, 0, true);
  EXPECT_EQ(reversed.rows.back().layer, "Net.b");
  EXPECT_EQ(reversed.rows.back().presence, "only in eager");
  const nlohmann::json j = to_json(c);
  EXPECT_TRUE(j["rows"][2]["variants"]["compile"].is_null()) << j.dump();
  EXPECT_EQ(j["baseline"], "eager");
}

TEST(LayerComparison, RefusesMismatchedInputs) {
  const TraceRun run = two_step_run(1, 1, false);
  EXPECT_THROW(compare_layers({"a"}, {run, run}, 0, true), std::invalid_argument);
  EXPECT_THROW(compare_layers({"a", "b"}, {run, run}, 2, true), std::invalid_argument);
}

TEST(VariantSpec, NamesWhatEachBuiltInDoes) {
  const VariantSpec fp32 = parse_variant("fp32");
  EXPECT_EQ(fp32.dtype, "fp32");
  EXPECT_FALSE(fp32.python_only());
  const VariantSpec mixed = parse_variant("autocast-fp16+channels_last");
  EXPECT_EQ(mixed.dtype, "fp32");
  EXPECT_EQ(mixed.autocast, "fp16");
  EXPECT_TRUE(mixed.channels_last);
  EXPECT_NE(mixed.description.find("autocast to float16"), std::string::npos) << mixed.description;
  const VariantSpec compiled = parse_variant("bf16+compile:max-autotune");
  EXPECT_EQ(compiled.dtype, "bf16");
  EXPECT_TRUE(compiled.compile);
  EXPECT_EQ(compiled.compile_mode, "max-autotune");
  EXPECT_TRUE(compiled.python_only());
  EXPECT_TRUE(parse_variant("int8").python_only());
}

TEST(VariantSpec, RefusesUnknownConflictingAndRepeatedParts) {
  auto message = [](const std::string& text) {
    try {
      parse_variant(text);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message("bf17").find("'bf17' is not a variant; use fp32, bf16"), std::string::npos) << message("bf17");
  EXPECT_NE(message("bf16+fp16").find("second dtype"), std::string::npos);
  EXPECT_NE(message("bf16+autocast-bf16").find("autocasts an fp32 model"), std::string::npos);
  EXPECT_NE(message("compile:fast").find("not a torch.compile mode"), std::string::npos);
  EXPECT_NE(message("channels_last+channels_last").find("twice"), std::string::npos);
  EXPECT_NE(message("bf16+int8").find("int8 quantises an fp32 model"), std::string::npos);
  EXPECT_NE(message(std::string(300, 'x')).find("at most 200"), std::string::npos);
  EXPECT_NE(message("fp32\x1b[31m").find("\\x1b"), std::string::npos);  // echoed escaped, never raw
  EXPECT_EQ(parse_variant_list("fp32,bf16").size(), 2u);
  EXPECT_THROW(parse_variant_list("fp32"), std::invalid_argument);
  EXPECT_THROW(parse_variant_list("fp32,,bf16"), std::invalid_argument);
  EXPECT_THROW(parse_variant_list("fp32,bf16,fp32"), std::invalid_argument);
}
