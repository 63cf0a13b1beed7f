// predict --estimate's costs (workflow/predict_estimates.h) against a made-up cost model and a
// fake look-up: an estimate scaled from the row measured at the nearest other batch size by the
// two calls' roofline figures.
#include "workflow/predict_estimates.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/spec/spec_file.h"
#include "made_up_cost_model.h"

namespace opcost {
namespace {

constexpr const char* kGpu = "Made-up GPU";

// A look-up with no exact rows: only the rows at other batch sizes it is given.
class RowsAtOtherBatches final : public StoredCosts {
 public:
  explicit RowsAtOtherBatches(std::vector<NearRow> rows) : rows_(std::move(rows)) {}
  std::optional<Measurement> newest(const StoredCallKey&) override { return std::nullopt; }
  std::optional<NearRow> ignoring_float_scalars(const InventoryEntry&, const StoredCallKey&) override {
    return std::nullopt;
  }
  std::vector<NearRow> at_other_batches(const InventoryEntry&, const StoredCallKey&) override { return rows_; }

 private:
  std::vector<NearRow> rows_;
};

StoredCosts::NearRow row(const std::string& args, double time_us, double energy_mJ, double host_us,
                         std::string device_work = "") {
  Measurement m;
  m.op = "aten::mm";
  m.args = args;
  m.time.per_call_us.median = m.time.per_call_us.mean = time_us;
  m.time.host_us_per_call = host_us;
  m.energy.available = true;
  m.energy.per_call_mJ.median = m.energy.per_call_mJ.mean = energy_mJ;
  m.device_work = std::move(device_work);
  return {m, args};
}

InventoryEntry entry(const std::string& args) { return {"aten::mm", "", args}; }

CostEstimate model_estimate(const CostModel& model, const std::string& args) {
  return model.estimate(parse_call_line("aten::mm " + args, "test"), "warm", kGpu);
}

const std::string kCall = "self=bf16[1000,4096] mat2=bf16[4096,768]";

TEST(EstimatingCosts, ScaledFromTheRowAtTheNearestBatchByTheirRooflineRatio) {
  const CostModel model = CostModel::from_json(made_up::valid_model());
  // 500 and 2000 are as near to 1000 (a factor of 2): the larger is taken; 100 is farther. A
  // view's row and a row with no time are never anchors.
  RowsAtOtherBatches stored({row("self=bf16[100,4096] mat2=bf16[4096,768]", 9, 2, 5),
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
  EXPECT_NE(m.method.find("measured at batch 2000"), std::string::npos) << m.method;
}

TEST(EstimatingCosts, WithoutARowAtAnotherBatchTheModelsFigureStands) {
  const CostModel model = CostModel::from_json(made_up::valid_model());
  RowsAtOtherBatches stored({row("self=bf16[1200,4096] mat2=bf16[4096,768]", 99, 9, 9, "none-view")});
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
  RowsAtOtherBatches stored({no_energy});
  EstimatingCosts costs(stored, model, kGpu);
  const auto e = costs.estimated(entry(kCall), {"aten::mm", "", kCall, "", "warm"});
  ASSERT_TRUE(e.has_value());
  EXPECT_FALSE(e->anchor_args.empty());
  const CostEstimate call = model_estimate(model, kCall);
  EXPECT_DOUBLE_EQ(e->measurement.energy.per_call_mJ.median, *call.energy_mJ);
  EXPECT_NE(e->measurement.time.per_call_us.median, call.time_us);
}

}  // namespace
}  // namespace opcost
