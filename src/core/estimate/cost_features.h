#pragma once
// The features a call's cost is fitted on and estimated from (issue 26, must-have 1): its work
// (core/estimate/call_work.h), the roofline time that work takes on a GPU's achieved rates
// (core/estimate/gpu_profile.h), its dtype, its shapes' alignment to tensor-core tiles, the
// cache mode and the input data. One definition serves the fit (Python, through the bindings)
// and every estimate (C++), so the two can never disagree. Torch-free.
//
// Sizes enter as log2: a cost spans six orders of magnitude, and a tree splits a log scale
// evenly. The names are stored with a fitted model; a model made with other features is refused.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/estimate/call_work.h"
#include "core/estimate/gpu_profile.h"
#include "core/spec/op_call.h"

namespace opcost {

// The features' names, in the order of CostFeatures::values.
const std::vector<std::string>& cost_feature_names();
// Bumped whenever a feature's meaning changes (a stored model names the version it was fitted on).
inline constexpr int kCostFeaturesVersion = 3;  // 2: an f32 convolution's roofline at the TF32 rate; 3: causal
// A call's time is fitted as its ratio to its base time, roofline time + this floor: a call's fixed
// cost of a few µs (launch to the end of its kernel). Without it a tiny call's ratio to its
// nanoseconds of roofline spans orders of magnitude. In an early fit of issue 13's H100 rows (the
// first 13 features, rates from the best rows), 3 µs cut the held-out median error of the
// convolutions from 13% to 9% and of the GEMMs from 2.6% to 2.0%, against 1 ns, 1 and 10 µs.
inline constexpr double kTimeFloorUs = 3.0;

struct CostFeatures {
  OpFamily family = OpFamily::kElementwise;
  CallWork work;
  double roofline_us = 0;  // max(FLOPs / achieved FLOP rate, bytes / achieved byte rate)
  double base_us = 0;      // roofline_us + kTimeFloorUs: what a call's time is fitted relative to
  // What a call's energy is fitted relative to (divided by base_us): the draw it would have running
  // at its roofline for roofline_us (the GPU's compute or memory power, as its bound side is) and
  // idle for the floor. None where the GPU's rows gave no such figures.
  std::optional<double> base_power_W;
  std::vector<double> values;  // cost_feature_names() order
  // Where the figures stand on less than the GPU's own rates (no row of the call's dtype showed
  // a FLOP rate): said, never hidden.
  std::vector<std::string> notes;
};

// nullopt where the call's work has no figure (call_work: an operator not counted, shapes that
// do not fit). `cache_mode`: "warm" or "cold" (core/spec/cache_mode.h).
std::optional<CostFeatures> cost_features(const OpCall& call, std::string_view cache_mode, const GpuProfile& gpu);

// A stable code of the operator's name (FNV-1a, folded to 20 bits): one feature, so that a tree
// can tell two operators of one family apart without a table that reorders as operators are added.
double operator_code(std::string_view op);

}  // namespace opcost
