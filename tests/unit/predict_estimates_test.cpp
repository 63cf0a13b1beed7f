// predict --estimate's costs (workflow/predict_estimates.h) against a made-up cost model and a
// fake look-up: an estimate scaled from the row measured at the nearest other batch size by the
// two calls' roofline figures.
#include "workflow/predict_estimates.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/spec/spec_file.h"
#include "made_up_cost_model.h"

namespace opcost {
namespace {

constexpr const char* kGpu = "Made-up GPU";

// A look-up with no exact rows: only the rows at other batch sizes it is given.
class RowsAtOtherSizes final : public StoredCosts {
 public:
  explicit RowsAtOtherSizes(std::vector<NearRow> rows) : rows_(std::move(rows)) {}
  std::optional<Measurement> newest(const StoredCallKey&) override { return std::nullopt; }
  std::optional<NearRow> ignoring_float_scalars(const InventoryEntry&, const StoredCallKey&) override {
    return std::nullopt;
  }
  std::vector<NearRow> at_other_sizes(const InventoryEntry&, const StoredCallKey&) override { return rows_; }

 private:
  std::vector<NearRow> rows_;
};

StoredCosts::NearRow row(const std::string& args, double time_us, double energy_mJ, double host_us,
                         std::string device_work = "", std::vector<std::string> flags = {}) {
  Measurement m;
  m.op = "aten::mm";
  m.args = args;
  m.time.per_call_us.median = m.time.per_call_us.mean = time_us;
  m.time.host_us_per_call = host_us;
  m.energy.available = true;
  m.energy.per_call_mJ.median = m.energy.per_call_mJ.mean = energy_mJ;
  m.device_work = std::move(device_work);
  m.flags = std::move(flags);
  return {m, args};
}

InventoryEntry entry(const std::string& args) { return {"aten::mm", "", args}; }

CostEstimate model_estimate(const CostModel& model, const std::string& args) {
  return model.estimate(parse_call_line("aten::mm " + args, "test"), "warm", kGpu);
}

const std::string kCall = "self=bf16[1000,4096] mat2=bf16[4096,768]";

TEST(EstimatingCosts, ScaledFromTheRowAtTheNearestSizeByTheirRooflineRatio) {
  const CostModel model = CostModel::from_json(made_up::valid_model());
  // 500 and 2000 are as near to 1000 (a factor of 2): the larger is taken; 100 is farther. A
  // view's row and a row with no time are never anchors.
  RowsAtOtherSizes stored({row("self=bf16[100,4096] mat2=bf16[4096,768]", 9, 2, 5),
                           row("self=bf16[500,4096] mat2=bf16[4096,768]", 40, 10, 6),
                           row("self=bf16[2000,4096] mat2=bf16[4096,768]", 150, 60, 7),
                           row("self=bf16[1200,4096] mat2=bf16[4096,768]", 99, 9, 9, "none-view"),
                           row("self=bf16[1100,4096] mat2=bf16[4096,768]", 0, 9, 9)});
  EstimatingCosts costs(stored, model, kGpu);
  const auto e = costs.estimated(entry(kCall), {"aten::mm", "", kCall, "", "warm"});
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->anchor_args, "self=bf16[2000,4096] mat2=bf16[4096,768]");

  const CostEstimate call = model_estimate(model, kCall);
  const CostEstimate anchor = model_estimate(model, "self=bf16[2000,4096] mat2=bf16[4096,768]");
  const Measurement& m = e->measurement;
  // Time and energy: the row's times the ratio of the two calls' roofline figures; the model's
  // relative interval kept. Host time: the row's times the model's ratio.
  const double time_us = 150 * call.base_us / anchor.base_us;
  EXPECT_DOUBLE_EQ(m.time.per_call_us.median, time_us);
  EXPECT_DOUBLE_EQ(m.time.per_call_us.ci95_low, time_us * call.time_low_us / call.time_us);
  EXPECT_DOUBLE_EQ(m.time.per_call_us.ci95_high, time_us * call.time_high_us / call.time_us);
  const double energy_mJ = 60 * *call.base_energy_mJ / *anchor.base_energy_mJ;
  EXPECT_DOUBLE_EQ(m.energy.per_call_mJ.median, energy_mJ);
  EXPECT_DOUBLE_EQ(m.energy.per_call_mJ.ci95_high, energy_mJ * *call.energy_high_mJ / *call.energy_mJ);
  EXPECT_DOUBLE_EQ(m.time.host_us_per_call, *call.host_us * 7 / *anchor.host_us);
  // The draw follows from the scaled energy over the loop's wall time (mJ/µs = 1000 W).
  const double wall_us = std::max(m.time.per_call_us.median, m.time.host_us_per_call);
  EXPECT_DOUBLE_EQ(m.energy.wall_us_per_call, wall_us);
  EXPECT_DOUBLE_EQ(m.energy.power_W, 1000 * m.energy.per_call_mJ.median / wall_us);
  EXPECT_NE(m.method.find("measured at 2000 where the call has 1000"), std::string::npos) << m.method;
}

TEST(EstimatingCosts, WithoutARowAtAnotherSizeTheModelsFigureStands) {
  const CostModel model = CostModel::from_json(made_up::valid_model());
  RowsAtOtherSizes stored({row("self=bf16[1200,4096] mat2=bf16[4096,768]", 99, 9, 9, "none-view")});
  EstimatingCosts costs(stored, model, kGpu);
  const auto e = costs.estimated(entry(kCall), {"aten::mm", "", kCall, "", "warm"});
  ASSERT_TRUE(e.has_value());
  EXPECT_TRUE(e->anchor_args.empty());
  const CostEstimate call = model_estimate(model, kCall);
  EXPECT_DOUBLE_EQ(e->measurement.time.per_call_us.median, call.time_us);
  EXPECT_DOUBLE_EQ(e->measurement.energy.per_call_mJ.median, *call.energy_mJ);
  EXPECT_DOUBLE_EQ(e->measurement.time.host_us_per_call, *call.host_us);
}

TEST(EstimatingCosts, ARowWithoutEnergyScalesTheTimeAlone) {
  const CostModel model = CostModel::from_json(made_up::valid_model());
  auto no_energy = row("self=bf16[500,4096] mat2=bf16[4096,768]", 40, 0, 6);
  no_energy.measurement.energy.available = false;
  RowsAtOtherSizes stored({no_energy});
  EstimatingCosts costs(stored, model, kGpu);
  const auto e = costs.estimated(entry(kCall), {"aten::mm", "", kCall, "", "warm"});
  ASSERT_TRUE(e.has_value());
  EXPECT_FALSE(e->anchor_args.empty());
  const CostEstimate call = model_estimate(model, kCall);
  EXPECT_DOUBLE_EQ(e->measurement.energy.per_call_mJ.median, *call.energy_mJ);
  EXPECT_DOUBLE_EQ(e->measurement.energy.power_W, *call.power_W);  // the model's, with its energy
  EXPECT_NE(e->measurement.time.per_call_us.median, call.time_us);
}

std::string rows_of(int64_t m) { return "self=bf16[" + std::to_string(m) + ",4096] mat2=bf16[4096,768]"; }

// The anchor chosen among `rows` for a call of `call_m` rows: its arguments.
std::string anchor_for(int64_t call_m, std::vector<StoredCosts::NearRow> rows) {
  const CostModel model = CostModel::from_json(made_up::valid_model());
  RowsAtOtherSizes stored(std::move(rows));
  EstimatingCosts costs(stored, model, kGpu);
  const auto e = costs.estimated(entry(rows_of(call_m)), {"aten::mm", "", rows_of(call_m), "", "warm"});
  return e ? e->anchor_args : "no estimate";
}

TEST(EstimatingCosts, TheRooflineRatioNotTheTrees) {
  // The batch-100 row lies in the other leaf of the made-up time tree (log2_flops 29.2 < 30):
  // the trees' ratio and the roofline's differ, and the roofline's is taken.
  const CostModel model = CostModel::from_json(made_up::valid_model());
  RowsAtOtherSizes stored({row(rows_of(100), 9, 2, 5)});
  EstimatingCosts costs(stored, model, kGpu);
  const auto e = costs.estimated(entry(kCall), {"aten::mm", "", kCall, "", "warm"});
  ASSERT_TRUE(e.has_value());
  const CostEstimate call = model_estimate(model, kCall), anchor = model_estimate(model, rows_of(100));
  const double by_roofline = 9 * call.base_us / anchor.base_us, by_trees = 9 * call.time_us / anchor.time_us;
  ASSERT_GT(std::abs(by_roofline / by_trees - 1), 0.1);  // the case tells the two apart
  EXPECT_DOUBLE_EQ(e->measurement.time.per_call_us.median, by_roofline);
}

TEST(EstimatingCosts, OfRowsAsNearAnUnflaggedOneThenTheLargerThenTheNewest) {
  // 96 against 64 and 144: both a ratio of 1.5, told apart exactly (not by rounded logarithms).
  EXPECT_EQ(anchor_for(96, {row(rows_of(64), 5, 1, 5), row(rows_of(144), 9, 2, 5)}), rows_of(144));
  EXPECT_EQ(anchor_for(1000, {row(rows_of(500), 40, 10, 6), row(rows_of(2000), 150, 60, 7)}), rows_of(2000));
  // A flagged row (measured at the power cap) yields to an unflagged one as near, however large.
  auto capped = row(rows_of(2000), 150, 60, 7, "", {"throttled:sw_power_cap"});
  EXPECT_EQ(anchor_for(1000, {row(rows_of(500), 40, 10, 6), capped}), rows_of(500));
  // Alone, a flagged row is an anchor still; nearer beats unflagged.
  EXPECT_EQ(anchor_for(1000, {capped}), rows_of(2000));
  EXPECT_EQ(anchor_for(1000, {row(rows_of(100), 9, 2, 5), capped}), rows_of(2000));
  // Two rows at one size: the first (the newest, as the database gives them).
  const CostModel model = CostModel::from_json(made_up::valid_model());
  RowsAtOtherSizes stored({row(rows_of(2000), 150, 60, 7), row(rows_of(2000), 300, 60, 7)});
  EstimatingCosts costs(stored, model, kGpu);
  const auto e = costs.estimated(entry(kCall), {"aten::mm", "", kCall, "", "warm"});
  ASSERT_TRUE(e.has_value());
  const CostEstimate call = model_estimate(model, kCall), anchor = model_estimate(model, rows_of(2000));
  EXPECT_DOUBLE_EQ(e->measurement.time.per_call_us.median, 150 * call.base_us / anchor.base_us);
}

TEST(EstimatingCosts, AnIntervalFittedToScaledRowsWidensWithTheDistanceToTheRow) {
  // The fit's interval for scaled estimates is per unit of distance, ln 2 + |ln(extent ratio)|:
  // a row at twice the call's size gives ±0.3·2 ln 2 (log space) on time, one at a tenth
  // ±0.3·(ln 2 + ln 10); energy its own.
  nlohmann::json j = made_up::valid_model();
  auto& targets = j["families"]["matmul"]["targets"];
  targets["time"]["scaled"] = {{"log_halfwidth_per_distance", 0.3}, {"held_out", made_up::held_out()}};
  targets["energy"]["scaled"] = {{"log_halfwidth_per_distance", 0.5}, {"held_out", made_up::held_out()}};
  const CostModel model = CostModel::from_json(j);
  for (const int64_t size : {2000, 100}) {
    RowsAtOtherSizes stored({row(rows_of(size), 150, 60, 7)});
    EstimatingCosts costs(stored, model, kGpu);
    const auto e = costs.estimated(entry(kCall), {"aten::mm", "", kCall, "", "warm"});
    ASSERT_TRUE(e.has_value());
    const double distance = std::log(2.0) + std::abs(std::log(1000.0 / double(size)));
    const Summary& t = e->measurement.time.per_call_us;
    EXPECT_NEAR(t.ci95_low, t.median * std::exp(-0.3 * distance), 1e-9 * t.median) << size;
    EXPECT_NEAR(t.ci95_high, t.median * std::exp(0.3 * distance), 1e-9 * t.median) << size;
    const Summary& en = e->measurement.energy.per_call_mJ;
    EXPECT_NEAR(en.ci95_high, en.median * std::exp(0.5 * distance), 1e-9 * en.median) << size;
    // Host time is scaled by the model's ratio: its interval keeps the model's relative width.
  }
  // `opcost estimate` says which interval each figure carries.
  CostEstimate est = model_estimate(model, kCall);
  const auto anchor = scale_to_nearest_row(est, parse_call_line("aten::mm " + kCall, "test"),
                                           {row(rows_of(2000), 150, 60, 7)}, model, kGpu, "warm");
  ASSERT_TRUE(anchor.has_value());
  EXPECT_TRUE(anchor->time_interval_fitted && anchor->energy_interval_fitted);
  const auto doc = call_estimate_document(parse_call_line("aten::mm " + kCall, "test"), kGpu, {est, anchor});
  EXPECT_EQ(doc["anchor"]["interval"]["time"], "fitted");
  EXPECT_EQ(doc["anchor"]["interval"]["energy"], "fitted");
}

TEST(EstimatingCosts, WithoutAFittedScaledIntervalTheModelsRelativeWidthIsKept) {
  const CostModel model = CostModel::from_json(made_up::valid_model());
  CostEstimate est = model_estimate(model, kCall);
  const double relative_low = est.time_low_us / est.time_us;
  const auto anchor = scale_to_nearest_row(est, parse_call_line("aten::mm " + kCall, "test"),
                                           {row(rows_of(2000), 150, 60, 7)}, model, kGpu, "warm");
  ASSERT_TRUE(anchor.has_value());
  EXPECT_FALSE(anchor->time_interval_fitted || anchor->energy_interval_fitted);
  EXPECT_DOUBLE_EQ(est.time_low_us / est.time_us, relative_low);
}

}  // namespace
}  // namespace opcost
