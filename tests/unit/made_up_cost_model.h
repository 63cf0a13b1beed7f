#pragma once
// A minimal valid cost model, by hand, for the tests of the model and of the estimates a
// prediction uses (cost_model_test.cpp, predict_estimates_test.cpp): the made-up GPU; the matmul
// family with a time tree splitting on log2_flops at 30, energy at e^0.15 times its base, power
// at e^0.2 times the base power and a host time of 10 µs.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstddef>
#include <string>

#include "core/estimate/cost_features.h"
#include "core/estimate/cost_model.h"

namespace opcost::made_up {

using json = nlohmann::json;

// A feature's place in the model's vectors.
inline std::size_t feature_index(const std::string& name) {
  const auto& names = cost_feature_names();
  for (std::size_t k = 0; k < names.size(); ++k)
    if (names[k] == name) return k;
  ADD_FAILURE() << "no feature " << name;
  return 0;
}

// The made-up GPU's draws: idle, at the compute-bound and at the memory-bound roofline.
constexpr double kIdleW = 60, kComputeW = 500, kMemoryW = 400;

inline json leaf_tree(double value) {
  return {{"feature", {-2}}, {"threshold", {-2.0}}, {"left", {-1}}, {"right", {-1}}, {"value", {value}}};
}

inline json split_tree(int feature_k, double threshold, double left_value, double right_value) {
  return {{"feature", {feature_k, -2, -2}},
          {"threshold", {threshold, -2.0, -2.0}},
          {"left", {1, -1, -1}},
          {"right", {2, -1, -1}},
          {"value", {0.0, left_value, right_value}}};
}

inline json held_out() { return {{"median_abs_error", 0.02}, {"p90_abs_error", 0.1}, {"n_test", 12}}; }

inline json valid_model() {
  const auto& names = cost_feature_names();
  json ranges = json::array();
  for (std::size_t k = 0; k < names.size(); ++k) ranges.push_back({-1e9, 1e9});
  json targets{
      {"time",
       {{"init", 0.1},
        {"learning_rate", 0.5},
        {"trees", {split_tree(int(feature_index("log2_flops")), 30.0, 0.2, -0.4)}},
        {"interval_log_halfwidth", 0.1},
        {"held_out", held_out()}}},
      {"power",
       {{"init", 0.2},
        {"learning_rate", 1.0},
        {"trees", {leaf_tree(0.0)}},
        {"interval_log_halfwidth", 0.05},
        {"held_out", held_out()}}},
      {"energy",
       {{"init", 0.05},
        {"learning_rate", 1.0},
        {"trees", {leaf_tree(0.1)}},
        {"interval_log_halfwidth", 0.2},
        {"held_out", held_out()}}},
      {"host",
       {{"init", std::log(10.0)},
        {"learning_rate", 1.0},
        {"trees", {leaf_tree(0.0)}},
        {"interval_log_halfwidth", 0.3},
        {"held_out", held_out()}}},
  };
  return {{"format", "opcost-cost-model"},
          {"version", 1},
          {"features_version", kCostFeaturesVersion},
          {"features", names},
          {"coverage", 0.9},
          {"time_floor_us", 3.0},
          {"data_hash", "sha256:made-up"},
          {"gpus",
           {{"Made-up GPU",
             {{"achieved_tflops", {{"bf16", 400.0}, {"f32", 50.0}}},
              {"achieved_GBps", 2000.0},
              {"idle_power_W", kIdleW},
              {"compute_power_W", kComputeW},
              {"memory_power_W", kMemoryW}}}}},
          {"families",
           {{"matmul",
             {{"ops", {"aten::linear", "aten::mm"}}, {"n_train", 40}, {"ranges", ranges}, {"targets", targets}}}}}};
}

}  // namespace opcost::made_up
