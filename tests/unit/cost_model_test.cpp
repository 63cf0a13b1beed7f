// The cost model's C++ half (issue 26): a call's features, base time and base power against
// figures worked out by hand here (core/estimate/cost_features.h), a GPU's rates and roofline
// draws read back (core/estimate/gpu_profile.h), a fitted model's JSON refused where it is hostile and
// evaluated as scikit-learn evaluates it (core/estimate/cost_model.h), estimates with their
// intervals and out-of-range reasons, and models stored beside, never among, the measurements
// (core/store/cost_model_store.h). The models here are built by hand: no Python, no fit.
#include "core/estimate/cost_model.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/estimate/cost_features.h"
#include "core/store/cost_model_store.h"
#include "core/store/database.h"
#include "core/store/sql_connection.h"
#include "made_up_cost_model.h"
#include "test_databases.h"

namespace opcost {
namespace {

using json = nlohmann::json;
using namespace made_up;  // NOLINT: the made-up model and its GPU's draws

OpCall call_of(const std::string& op, const std::string& args) {
  std::vector<std::string> tokens;
  std::istringstream in(args);
  for (std::string t; in >> t;) tokens.push_back(t);
  return parse_call(op, tokens);
}

double feature(const CostFeatures& f, const std::string& name) { return f.values.at(feature_index(name)); }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A made-up GPU: 400 TFLOP/s in bf16, 50 in f32, 2000 GB/s; idle at 60 W, 500 W at its FLOP
// roofline, 400 W at its byte roofline.
GpuProfile made_up_gpu() {
  GpuProfile p;
  p.name = "Made-up GPU";
  p.achieved_tflops = {{"bf16", 400.0}, {"f32", 50.0}};
  p.achieved_GBps = 2000;
  p.idle_power_W = kIdleW;
  p.compute_power_W = kComputeW;
  p.memory_power_W = kMemoryW;
  return p;
}

// The worked example: an mm of bf16 [1000,4096] × [4096,768].
const std::string kMmArgs = "self=bf16[1000,4096] mat2=bf16[4096,768]";
constexpr double kMmFlops = 2.0 * 1000 * 4096 * 768;                        // 6 291 456 000
constexpr double kMmBytes = 2.0 * (1000 * 4096 + 4096 * 768 + 1000 * 768);  // 16 019 456

TEST(CostFeatures, AMatrixProductWorkedByHand) {
  const auto f = cost_features(call_of("aten::mm", kMmArgs), "warm", made_up_gpu());
  ASSERT_TRUE(f);
  EXPECT_EQ(f->family, OpFamily::kMatmul);
  EXPECT_DOUBLE_EQ(f->work.flops, kMmFlops);
  EXPECT_DOUBLE_EQ(f->work.bytes, kMmBytes);
  // Compute: 6.291456e9 / 400e12 s = 15.72864 µs; memory: 16019456 / 2000e9 s = 8.009728 µs.
  EXPECT_DOUBLE_EQ(f->roofline_us, 15.72864);
  // The base: the roofline plus the 3 µs floor; its power the compute side's 500 W for the
  // roofline's 15.72864 µs and idle 60 W for the floor's 3.
  EXPECT_EQ(kTimeFloorUs, 3.0);
  EXPECT_DOUBLE_EQ(f->base_us, 18.72864);
  ASSERT_TRUE(f->base_power_W);
  EXPECT_DOUBLE_EQ(*f->base_power_W, (15.72864 * 500 + 3 * 60) / 18.72864);
  EXPECT_TRUE(f->notes.empty());
  ASSERT_EQ(f->values.size(), cost_feature_names().size());
  EXPECT_DOUBLE_EQ(feature(*f, "log2_flops"), std::log2(1 + kMmFlops));
  EXPECT_DOUBLE_EQ(feature(*f, "log2_bytes"), std::log2(1 + kMmBytes));
  EXPECT_DOUBLE_EQ(feature(*f, "log2_flop_per_byte"), std::log2((1 + kMmFlops) / (1 + kMmBytes)));
  EXPECT_DOUBLE_EQ(feature(*f, "log2_roofline_us"), std::log2(15.72864 + 1e-3));
  EXPECT_EQ(feature(*f, "dtype_bytes"), 2);
  EXPECT_EQ(feature(*f, "dtype_kind"), 2);      // bf16
  EXPECT_EQ(feature(*f, "alignment_log2"), 7);  // last dimensions 4096 and 768 = 3·256: capped at 7
  EXPECT_DOUBLE_EQ(feature(*f, "log2_smallest_extent"), std::log2(768.0));
  EXPECT_DOUBLE_EQ(feature(*f, "log2_largest_tensor"), std::log2(1 + 1000.0 * 4096));
  EXPECT_EQ(feature(*f, "tensor_count"), 2);
  EXPECT_EQ(feature(*f, "cold_cache"), 0);
  EXPECT_EQ(feature(*f, "zeros_fraction"), 0);
  EXPECT_EQ(feature(*f, "operator_code"), operator_code("aten::mm"));
  EXPECT_DOUBLE_EQ(feature(*f, "log2_gemm_m"), std::log2(1000.0));
  EXPECT_DOUBLE_EQ(feature(*f, "log2_gemm_n"), std::log2(768.0));
  EXPECT_DOUBLE_EQ(feature(*f, "log2_gemm_k"), 12);
  EXPECT_EQ(feature(*f, "gemm_alignment_log2"), 7);

  // A GEMM has no dim, window or stride: neutral values.
  EXPECT_EQ(feature(*f, "rank"), 2);
  EXPECT_DOUBLE_EQ(feature(*f, "log2_first_extent"), std::log2(1000.0));
  EXPECT_DOUBLE_EQ(feature(*f, "log2_last_extent"), 12);
  EXPECT_EQ(feature(*f, "log2_inner_extent"), 0);
  EXPECT_EQ(feature(*f, "dim_is_last"), 0.5);
  EXPECT_EQ(feature(*f, "non_contiguous"), 0);
  EXPECT_EQ(feature(*f, "log2_window"), 0);
  EXPECT_EQ(feature(*f, "stride"), 1);

  // On a GPU with a quarter of the bandwidth the memory side wins: 16019456 / 500e9 s, and the
  // base power is the memory side's 400 W.
  GpuProfile slow = made_up_gpu();
  slow.achieved_GBps = 500;
  const auto memory_bound = cost_features(call_of("aten::mm", kMmArgs), "warm", slow);
  ASSERT_TRUE(memory_bound);
  EXPECT_DOUBLE_EQ(memory_bound->roofline_us, 32.038912);
  EXPECT_DOUBLE_EQ(memory_bound->base_us, 35.038912);
  ASSERT_TRUE(memory_bound->base_power_W);
  EXPECT_DOUBLE_EQ(*memory_bound->base_power_W, (32.038912 * 400 + 3 * 60) / 35.038912);

  // Cold caches and zeros asked of an input are features of their own.
  const auto cold =
      cost_features(call_of("aten::mm", "self=bf16[1000,4096]:zeros[0.5] mat2=bf16[4096,768]"), "cold", made_up_gpu());
  ASSERT_TRUE(cold);
  EXPECT_EQ(feature(*cold, "cold_cache"), 1);
  EXPECT_EQ(feature(*cold, "zeros_fraction"), 0.5);
}

TEST(CostFeatures, ATorchMatmulIsTheGemmOfItsBatchedRows) {
  // [9,3,49,32] by [9,3,32,49]: m = 27 · 49 rows, n = 49, k = 32.
  const auto f =
      cost_features(call_of("aten::matmul", "self=f32[9,3,49,32] other=f32[9,3,32,49]"), "warm", made_up_gpu());
  ASSERT_TRUE(f);
  EXPECT_DOUBLE_EQ(feature(*f, "log2_gemm_m"), std::log2(27.0 * 49));
  EXPECT_DOUBLE_EQ(feature(*f, "log2_gemm_n"), std::log2(49.0));
  EXPECT_DOUBLE_EQ(feature(*f, "log2_gemm_k"), 5);
}

TEST(CostFeatures, ACallWithoutTensorsTakesTheDtypeItWrites) {
  // zeros in bf16: its dtype features are bf16's, and no note says the dtype has no rate.
  const auto f = cost_features(call_of("aten::zeros", "size=[64,64] dtype=bf16"), "warm", made_up_gpu());
  ASSERT_TRUE(f);
  EXPECT_EQ(feature(*f, "dtype_bytes"), 2);
  EXPECT_EQ(feature(*f, "dtype_kind"), 2);
  EXPECT_TRUE(f->notes.empty()) << f->notes.front();
}

TEST(CostFeatures, AlignmentIsTheLargestPowerOfTwoFactorOfTheWorstLastDimension) {
  // k = 1000 = 2^3 · 125 is both the worst-aligned last dimension and the GEMM's worse of n, k.
  const auto f = cost_features(call_of("aten::mm", "self=bf16[4096,1000] mat2=bf16[1000,768]"), "warm", made_up_gpu());
  ASSERT_TRUE(f);
  EXPECT_EQ(feature(*f, "alignment_log2"), 3);
  EXPECT_EQ(feature(*f, "gemm_alignment_log2"), 3);
  EXPECT_DOUBLE_EQ(feature(*f, "log2_gemm_m"), 12);
  EXPECT_DOUBLE_EQ(feature(*f, "log2_gemm_k"), std::log2(1000.0));
  // An odd extent has no factor of two.
  const auto odd = cost_features(call_of("aten::mm", "self=f32[8,7] mat2=f32[7,9]"), "warm", made_up_gpu());
  ASSERT_TRUE(odd);
  EXPECT_EQ(feature(*odd, "alignment_log2"), 0);
  // linear: every leading dimension of the input is a row of the GEMM: m = 2·3, n = 8, k = 16.
  const auto linear = cost_features(call_of("aten::linear", "input=bf16[2,3,16] weight=bf16[8,16] bias=bf16[8]"),
                                    "warm", made_up_gpu());
  ASSERT_TRUE(linear);
  EXPECT_DOUBLE_EQ(feature(*linear, "log2_gemm_m"), std::log2(6.0));
  EXPECT_DOUBLE_EQ(feature(*linear, "log2_gemm_n"), 3);
  EXPECT_DOUBLE_EQ(feature(*linear, "log2_gemm_k"), 4);
  EXPECT_EQ(feature(*linear, "tensor_count"), 3);
}

TEST(CostFeatures, AConvolutionIsItsImplicitGemmWithOrWithoutBias) {
  // 8 images of 56×56 outputs (padding 1 keeps the size) → m = 8·56·56 = 25088; n = 128 output
  // channels; k = 64 input channels · 3·3 taps = 576. The bias adds FLOPs, not GEMM rows.
  const std::string conv = "input=f32[8,64,56,56] weight=f32[128,64,3,3] padding=[1,1]";
  for (const std::string& args : {conv, conv + " bias=f32[128]"}) {
    SCOPED_TRACE(args);
    const auto f = cost_features(call_of("aten::conv2d", args), "warm", made_up_gpu());
    ASSERT_TRUE(f);
    EXPECT_EQ(f->family, OpFamily::kConvolution);
    EXPECT_DOUBLE_EQ(feature(*f, "log2_gemm_m"), std::log2(25088.0));
    EXPECT_DOUBLE_EQ(feature(*f, "log2_gemm_n"), 7);
    EXPECT_DOUBLE_EQ(feature(*f, "log2_gemm_k"), std::log2(576.0));
    EXPECT_EQ(feature(*f, "gemm_alignment_log2"), 6);  // 576 = 2^6 · 9
    EXPECT_EQ(feature(*f, "dtype_kind"), 3);           // f32
    EXPECT_EQ(feature(*f, "dtype_bytes"), 4);
    // 2·25088·128·576 FLOPs (+ 25088·128 with the bias), f32 on TF32 tensor cores (cuDNN's
    // default): at half the bf16 rate, 200 TFLOP/s, not the f32 GEMM's 50.
    const double flops = 2.0 * 25088 * 128 * 576 + (contains(args, "bias") ? 25088.0 * 128 : 0);
    EXPECT_DOUBLE_EQ(f->work.flops, flops);
    EXPECT_DOUBLE_EQ(f->roofline_us, flops / 200e12 * 1e6);
    // Without a bf16 rate to read TF32's from, the f32 rate stands.
    GpuProfile no_bf16 = made_up_gpu();
    no_bf16.achieved_tflops.erase("bf16");
    EXPECT_DOUBLE_EQ(cost_features(call_of("aten::conv2d", args), "warm", no_bf16)->roofline_us, flops / 50e12 * 1e6);
  }
  // An f32 matrix product stays at the f32 rate: PyTorch keeps matmuls in full f32 by default.
  const auto mm = cost_features(call_of("aten::mm", "self=f32[1000,4096] mat2=f32[4096,768]"), "warm", made_up_gpu());
  ASSERT_TRUE(mm);
  EXPECT_DOUBLE_EQ(mm->roofline_us, kMmFlops / 50e12 * 1e6);
  // A call that is no GEMM has m = n = k = 0 and the best alignment.
  const auto relu = cost_features(call_of("aten::relu", "self=bf16[1000]"), "warm", made_up_gpu());
  ASSERT_TRUE(relu);
  EXPECT_EQ(feature(*relu, "log2_gemm_m"), 0);
  EXPECT_EQ(feature(*relu, "gemm_alignment_log2"), 7);
  EXPECT_DOUBLE_EQ(relu->roofline_us, 4000.0 / 2000e9 * 1e6);  // memory-bound: 2·1000 elements of 2 bytes
}

TEST(CostFeatures, ADtypeWithoutARateSaysSoAndUsesTheBestRate) {
  const auto f = cost_features(call_of("aten::mm", "self=f16[1000,4096] mat2=f16[4096,768]"), "warm", made_up_gpu());
  ASSERT_TRUE(f);
  ASSERT_EQ(f->notes.size(), 1u);
  EXPECT_TRUE(contains(f->notes[0], "Made-up GPU")) << f->notes[0];
  EXPECT_TRUE(contains(f->notes[0], "f16")) << f->notes[0];
  EXPECT_TRUE(contains(f->notes[0], "400.0 TFLOP/s")) << f->notes[0];
  EXPECT_DOUBLE_EQ(f->roofline_us, 15.72864);  // the bf16 rate, the best of any dtype
  EXPECT_EQ(feature(*f, "dtype_kind"), 1);
}

TEST(CostFeatures, AnOperatorNotCountedHasNoFeatures) {
  EXPECT_FALSE(cost_features(call_of("aten::topk", "self=f32[4,8] k=2"), "warm", made_up_gpu()));
  EXPECT_FALSE(cost_features(call_of("aten::mm", "self=f32[4,5] mat2=f32[6,7]"), "warm", made_up_gpu()));
}

TEST(CostFeatures, ACallWhoseFiguresAreNotFiniteHasNoFeatures) {
  // A linear of zero-width rows: m = 0 / 0 in its work, NaN features that would pass every range
  // check as false comparisons do; no figure instead.
  EXPECT_FALSE(cost_features(call_of("aten::linear", "input=bf16[4,0] weight=bf16[5,0]"), "warm", made_up_gpu()));
}

TEST(CostFeatures, TheBasePowerIsTheRooflineSidesDrawAndIdleForTheFloor) {
  // relu of 1000 bf16: 1000 FLOPs in 2.5 ps, 4000 bytes in 2 ns: memory-bound.
  const auto relu = cost_features(call_of("aten::relu", "self=bf16[1000]"), "warm", made_up_gpu());
  ASSERT_TRUE(relu && relu->base_power_W);
  EXPECT_DOUBLE_EQ(relu->base_us, 0.002 + 3);
  EXPECT_DOUBLE_EQ(*relu->base_power_W, (0.002 * kMemoryW + 3 * kIdleW) / 3.002);
  // A copy computes nothing: the memory side, whatever its times.
  const auto copy = cost_features(call_of("aten::copy_", "self=f32[1000] src=f32[1000]"), "warm", made_up_gpu());
  ASSERT_TRUE(copy && copy->base_power_W);
  EXPECT_DOUBLE_EQ(copy->roofline_us, 0.004);  // 8000 bytes at 2000 GB/s
  EXPECT_DOUBLE_EQ(*copy->base_power_W, (0.004 * kMemoryW + 3 * kIdleW) / 3.004);
  // A view moves nothing: a roofline of 0, so the base is the floor alone, drawing idle power.
  const auto view = cost_features(call_of("aten::view", "self=f32[4,6] size=[24]"), "warm", made_up_gpu());
  ASSERT_TRUE(view && view->base_power_W);
  EXPECT_EQ(view->roofline_us, 0);
  EXPECT_EQ(view->base_us, kTimeFloorUs);
  EXPECT_DOUBLE_EQ(*view->base_power_W, kIdleW);

  // No draw of the call's side, or no idle draw: no base power (never a guess). The other side's
  // draw is not borrowed.
  GpuProfile no_compute = made_up_gpu();
  no_compute.compute_power_W.reset();
  EXPECT_FALSE(cost_features(call_of("aten::mm", kMmArgs), "warm", no_compute)->base_power_W);
  EXPECT_TRUE(cost_features(call_of("aten::relu", "self=bf16[1000]"), "warm", no_compute)->base_power_W);
  GpuProfile no_memory = made_up_gpu();
  no_memory.memory_power_W.reset();
  EXPECT_TRUE(cost_features(call_of("aten::mm", kMmArgs), "warm", no_memory)->base_power_W);
  EXPECT_FALSE(cost_features(call_of("aten::relu", "self=bf16[1000]"), "warm", no_memory)->base_power_W);
  GpuProfile no_idle = made_up_gpu();
  no_idle.idle_power_W.reset();
  const auto idle_less = cost_features(call_of("aten::mm", kMmArgs), "warm", no_idle);
  ASSERT_TRUE(idle_less);
  EXPECT_FALSE(idle_less->base_power_W);
  EXPECT_DOUBLE_EQ(idle_less->base_us, 18.72864);  // the time's base stands without power
}

TEST(CostFeatures, TheLayoutFeaturesWorkedByHand) {
  ASSERT_EQ(cost_feature_names().size(), 26u);
  const std::vector<std::string> added = {"rank",        "log2_first_extent", "log2_last_extent", "log2_inner_extent",
                                          "dim_is_last", "non_contiguous",    "log2_window",      "stride",
                                          "causal"};
  EXPECT_EQ(std::vector<std::string>(cost_feature_names().end() - 9, cost_feature_names().end()), added);

  // A transposed copy: its source's strides are not [128, 1].
  const auto transposed =
      cost_features(call_of("aten::copy_", "self=bf16[64,128] src=bf16[64,128]:stride[1,64]"), "warm", made_up_gpu());
  ASSERT_TRUE(transposed);
  EXPECT_EQ(feature(*transposed, "non_contiguous"), 1);
  EXPECT_EQ(feature(*transposed, "rank"), 2);
  EXPECT_DOUBLE_EQ(feature(*transposed, "log2_first_extent"), 6);
  EXPECT_DOUBLE_EQ(feature(*transposed, "log2_last_extent"), 7);
  EXPECT_EQ(feature(*transposed, "log2_inner_extent"), 0);  // rank 2: no dimension after the second
  const auto plain =
      cost_features(call_of("aten::copy_", "self=bf16[64,128] src=bf16[64,128]:stride[128,1]"), "warm", made_up_gpu());
  ASSERT_TRUE(plain);
  EXPECT_EQ(feature(*plain, "non_contiguous"), 0);  // strides given, but the contiguous ones
  EXPECT_EQ(feature(*plain, "log2_window"), 0);
  EXPECT_EQ(feature(*plain, "stride"), 1);

  // A reduction's dim: the last (as -1 or as rank − 1), another, or none.
  const auto sum_over = [](const std::string& dim) {
    const auto f = cost_features(call_of("aten::sum", "self=f32[8,16]" + dim), "warm", made_up_gpu());
    EXPECT_TRUE(f) << dim;
    return f ? feature(*f, "dim_is_last") : -1.0;
  };
  EXPECT_EQ(sum_over(" dim=[-1]"), 1);
  EXPECT_EQ(sum_over(" dim=[1]"), 1);
  EXPECT_EQ(sum_over(" dim=[0]"), 0);
  EXPECT_EQ(sum_over(" dim=[0,1]"), 1);  // any of them the last
  EXPECT_EQ(sum_over(""), 0.5);

  // A 3×3 convolution of stride 2 over NCHW [2,3,8,8]: 9 taps, stride 2, 8·8 positions a channel.
  const auto conv =
      cost_features(call_of("aten::conv2d", "input=f32[2,3,8,8] weight=f32[4,3,3,3] stride=[2,2] padding=[1,1]"),
                    "warm", made_up_gpu());
  ASSERT_TRUE(conv);
  EXPECT_DOUBLE_EQ(feature(*conv, "log2_window"), std::log2(9.0));
  EXPECT_EQ(feature(*conv, "stride"), 2);
  EXPECT_EQ(feature(*conv, "rank"), 4);
  EXPECT_DOUBLE_EQ(feature(*conv, "log2_first_extent"), 1);
  EXPECT_DOUBLE_EQ(feature(*conv, "log2_last_extent"), 3);
  EXPECT_DOUBLE_EQ(feature(*conv, "log2_inner_extent"), 6);
  EXPECT_EQ(feature(*conv, "non_contiguous"), 0);
  // A pooling's window is its kernel_size; its stride the largest entry.
  const auto pool = cost_features(call_of("aten::max_pool2d", "self=f32[1,2,8,8] kernel_size=[3,2] stride=[1,2]"),
                                  "warm", made_up_gpu());
  ASSERT_TRUE(pool);
  EXPECT_DOUBLE_EQ(feature(*pool, "log2_window"), std::log2(6.0));
  EXPECT_EQ(feature(*pool, "stride"), 2);
  EXPECT_EQ(feature(*pool, "causal"), 0);

  // An attention's is_causal: 1 when true; false or left out, 0.
  const auto attention = [](const std::string& causal) {
    const auto f = cost_features(call_of("aten::scaled_dot_product_attention",
                                         "query=bf16[2,4,64,32] key=bf16[2,4,64,32] value=bf16[2,4,64,32]" + causal),
                                 "warm", made_up_gpu());
    EXPECT_TRUE(f) << causal;
    return f ? feature(*f, "causal") : -1.0;
  };
  EXPECT_EQ(attention(" is_causal=true"), 1);
  EXPECT_EQ(attention(" is_causal=false"), 0);
  EXPECT_EQ(attention(""), 0);
}

TEST(CostFeatures, TheOperatorCodeIsStable) {
  // Stored models split on these codes: a change of the hash would silently misroute every one
  // (FNV-1a 32-bit of the name, high 12 bits folded onto the low 20, worked out apart from opcost).
  EXPECT_EQ(operator_code("aten::mm"), 379867);
  EXPECT_EQ(operator_code("aten::conv2d"), 80702);
  EXPECT_EQ(operator_code("aten::bmm"), 861410);
  EXPECT_LT(operator_code("aten::addmm"), double(1 << 20));
}

// The message of from_json's refusal; a failure where it accepts.
std::string refusal(const json& j) {
  try {
    CostModel::from_json(j);
  } catch (const std::invalid_argument& e) {
    EXPECT_FALSE(contains(e.what(), "\n")) << e.what();  // one line
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << j.dump().substr(0, 300);
  return "";
}

TEST(CostModel, AValidModelIsRead) {
  const CostModel m = CostModel::from_json(valid_model());
  EXPECT_EQ(m.data_hash(), "sha256:made-up");
  EXPECT_EQ(m.coverage(), 0.9);
  ASSERT_EQ(m.gpus().count("Made-up GPU"), 1u);
  const GpuProfile& gpu = m.gpus().at("Made-up GPU");
  EXPECT_EQ(gpu.name, "Made-up GPU");
  EXPECT_EQ(gpu.tflops_for("f32"), 50.0);
  EXPECT_FALSE(gpu.tflops_for("f16"));
  EXPECT_EQ(gpu.idle_power_W, kIdleW);
  EXPECT_EQ(gpu.compute_power_W, kComputeW);
  EXPECT_EQ(gpu.memory_power_W, kMemoryW);
  ASSERT_EQ(m.families().count("matmul"), 1u);
  const FamilyModel& f = m.families().at("matmul");
  EXPECT_EQ(f.n_train, 40u);
  EXPECT_EQ(f.targets.size(), 4u);
  EXPECT_EQ(f.targets.at("time").n_test, 12u);
  // The same through text, as a file or the database gives it.
  EXPECT_EQ(CostModel::from_text(valid_model().dump(), "model.json").families().size(), 1u);
}

TEST(GpuProfile, ItsRatesAndDrawsGoToJsonAndBackAndAMissingDrawIsNull) {
  const GpuProfile p = made_up_gpu();
  const json j = to_json(p);
  EXPECT_EQ(j["compute_power_W"], kComputeW);
  EXPECT_EQ(j["memory_power_W"], kMemoryW);
  const GpuProfile back = gpu_profile_from_json("Made-up GPU", j);
  EXPECT_EQ(back.achieved_tflops, p.achieved_tflops);
  EXPECT_EQ(back.achieved_GBps, p.achieved_GBps);
  EXPECT_EQ(back.idle_power_W, p.idle_power_W);
  EXPECT_EQ(back.compute_power_W, p.compute_power_W);
  EXPECT_EQ(back.memory_power_W, p.memory_power_W);
  GpuProfile without = p;
  without.compute_power_W.reset();
  without.memory_power_W.reset();
  EXPECT_TRUE(to_json(without)["memory_power_W"].is_null());
  const GpuProfile none = gpu_profile_from_json("Made-up GPU", to_json(without));
  EXPECT_FALSE(none.compute_power_W);
  EXPECT_FALSE(none.memory_power_W);
  json absent = j;
  absent.erase("compute_power_W");  // an older profile: no such key at all
  EXPECT_FALSE(gpu_profile_from_json("Made-up GPU", absent).compute_power_W);
}

TEST(GpuProfile, ADrawThatIsNoPositiveNumberIsRefusedByName) {
  for (const char* key : {"compute_power_W", "memory_power_W", "idle_power_W"}) {
    for (const json& bad_value : {json(0.0), json(-5.0), json("500"), json::array({500})}) {
      json j = to_json(made_up_gpu());
      j[key] = bad_value;
      try {
        gpu_profile_from_json("Made-up GPU", j);
        ADD_FAILURE() << key << " = " << bad_value.dump() << " accepted";
      } catch (const std::invalid_argument& e) {
        EXPECT_TRUE(contains(e.what(), fmt::format("gpus.\"Made-up GPU\".{}", key))) << e.what();
        EXPECT_TRUE(contains(e.what(), "positive number")) << e.what();
      }
    }
  }
  // And so through a model.
  json m = valid_model();
  m["gpus"]["Made-up GPU"]["memory_power_W"] = -400;
  EXPECT_TRUE(contains(refusal(m), "memory_power_W"));
}

TEST(CostModel, RefusesAModelOfAnotherFormatOrFeatureSet) {
  json j = valid_model();
  j["format"] = "some-other-model";
  EXPECT_TRUE(contains(refusal(j), "format"));
  j = valid_model();
  j.erase("format");
  EXPECT_TRUE(contains(refusal(j), "format"));
  j = valid_model();
  j["version"] = 2;
  EXPECT_TRUE(contains(refusal(j), "version"));
  j = valid_model();
  j["features_version"] = kCostFeaturesVersion + 1;
  EXPECT_TRUE(contains(refusal(j), "features"));
  j = valid_model();
  std::swap(j["features"][0], j["features"][1]);  // the same names in another order
  EXPECT_TRUE(contains(refusal(j), "features"));
  j = valid_model();
  j["features"].push_back("log2_something_new");
  EXPECT_TRUE(contains(refusal(j), "features"));
  j = valid_model();
  j["features"].erase(j["features"].size() - 1);  // a model of the 24 features before `stride`
  EXPECT_TRUE(contains(refusal(j), "features"));
  // A model fitted relative to another floor than this opcost's base: its ratios mean other times.
  j = valid_model();
  j["time_floor_us"] = 1.0;
  std::string why = refusal(j);
  EXPECT_TRUE(contains(why, "time_floor_us")) << why;
  EXPECT_TRUE(contains(why, "refit")) << why;
  j = valid_model();
  j.erase("time_floor_us");
  EXPECT_TRUE(contains(refusal(j), "time_floor_us"));
}

TEST(CostModel, RefusesATreeAWalkCouldLoopInOrLeave) {
  const std::string where = "families.matmul.targets.time.trees[0]";
  json j = valid_model();
  j["families"]["matmul"]["targets"]["time"]["trees"][0]["left"][0] = 0;  // node 0's child is itself
  std::string why = refusal(j);
  EXPECT_TRUE(contains(why, where + " node 0")) << why;
  EXPECT_TRUE(contains(why, "child 0")) << why;
  j = valid_model();
  // Node 2 pointing back to node 1: a loop a walk would never leave.
  auto& tree = j["families"]["matmul"]["targets"]["time"]["trees"][0];
  tree["left"][2] = 1;
  tree["right"][2] = 1;
  tree["feature"][2] = 0;
  why = refusal(j);
  EXPECT_TRUE(contains(why, where + " node 2")) << why;
  j = valid_model();
  j["families"]["matmul"]["targets"]["time"]["trees"][0]["right"][0] = 3;  // past the end
  EXPECT_TRUE(contains(refusal(j), where + " node 0"));
  j = valid_model();
  j["families"]["matmul"]["targets"]["time"]["trees"][0]["right"][0] = -1;  // one child only
  EXPECT_TRUE(contains(refusal(j), "one child only"));
  j = valid_model();
  j["families"]["matmul"]["targets"]["time"]["trees"][0]["feature"][0] = int(cost_feature_names().size());
  why = refusal(j);
  EXPECT_TRUE(contains(why, where + " node 0")) << why;
  EXPECT_TRUE(contains(
      why, fmt::format("feature {} is not one of the {}", cost_feature_names().size(), cost_feature_names().size())))
      << why;
  j = valid_model();
  j["families"]["matmul"]["targets"]["time"]["trees"][0]["feature"][0] = -1;
  EXPECT_TRUE(contains(refusal(j), where + " node 0"));
  j = valid_model();
  j["families"]["matmul"]["targets"]["time"]["trees"][0]["value"].erase(2);
  why = refusal(j);
  EXPECT_TRUE(contains(why, where)) << why;
  EXPECT_TRUE(contains(why, "one length")) << why;
  j = valid_model();
  j["families"]["matmul"]["targets"]["time"]["trees"][0]["feature"][0] = 0.5;
  EXPECT_TRUE(contains(refusal(j), where + ".feature[0]: expected an integer"));
  j = valid_model();
  j["families"]["matmul"]["targets"]["time"]["trees"] = json::array();
  EXPECT_TRUE(contains(refusal(j), "families.matmul.targets.time.trees"));
}

TEST(CostModel, RefusesNumbersThatAreNotFiniteOrInTheirRange) {
  json j = valid_model();
  j["families"]["matmul"]["targets"]["time"]["trees"][0]["threshold"][0] = std::nan("");
  std::string why = refusal(j);
  EXPECT_TRUE(contains(why, "families.matmul.targets.time.trees[0].threshold[0]: expected a finite number")) << why;
  j = valid_model();
  j["families"]["matmul"]["targets"]["power"]["init"] = std::numeric_limits<double>::infinity();
  why = refusal(j);
  EXPECT_TRUE(contains(why, "families.matmul.targets.power.init")) << why;
  j = valid_model();
  j["families"]["matmul"]["targets"]["time"]["interval_log_halfwidth"] = -0.1;
  why = refusal(j);
  EXPECT_TRUE(contains(why, "families.matmul.targets.time.interval_log_halfwidth")) << why;
  EXPECT_TRUE(contains(why, "between 0 and 50")) << why;
  j["families"]["matmul"]["targets"]["time"]["interval_log_halfwidth"] = 51;  // e^51: hostile
  EXPECT_TRUE(contains(refusal(j), "between 0 and 50"));
  // The interval of scaled estimates is optional, and checked as hostile where it is there.
  j = valid_model();
  j["families"]["matmul"]["targets"]["time"]["scaled"] = {{"log_halfwidth_per_distance", 0.25},
                                                          {"held_out", made_up::held_out()}};
  const auto scaled = CostModel::from_json(j).families().at("matmul").targets.at("time").scaled;
  ASSERT_TRUE(scaled.has_value());
  EXPECT_DOUBLE_EQ(scaled->log_halfwidth_per_distance, 0.25);
  EXPECT_EQ(scaled->n_test, 12u);
  EXPECT_FALSE(CostModel::from_json(valid_model()).families().at("matmul").targets.at("time").scaled.has_value());
  j["families"]["matmul"]["targets"]["time"]["scaled"]["log_halfwidth_per_distance"] = 51;
  why = refusal(j);
  EXPECT_TRUE(contains(why, "families.matmul.targets.time.scaled.log_halfwidth_per_distance")) << why;
  EXPECT_TRUE(contains(why, "between 0 and 50")) << why;
  j["families"]["matmul"]["targets"]["time"]["scaled"] = {{"log_halfwidth_per_distance", 0.25}};
  EXPECT_TRUE(contains(refusal(j), "families.matmul.targets.time.scaled: 'held_out' is missing")) << refusal(j);
  j["families"]["matmul"]["targets"]["time"]["scaled"] = 0.25;
  EXPECT_TRUE(contains(refusal(j), "families.matmul.targets.time.scaled: expected an object")) << refusal(j);
  j = valid_model();
  j["families"]["matmul"]["targets"]["time"]["init"] = 1e6;  // its exp would be infinite
  EXPECT_TRUE(contains(refusal(j), "families.matmul.targets.time.init: beyond ±50"));
  j = valid_model();
  j["families"]["matmul"]["n_train"] = -3;  // would wrap around as a size
  EXPECT_TRUE(contains(refusal(j), "families.matmul.n_train: must not be negative"));
  j = valid_model();
  j["coverage"] = 1.5;
  EXPECT_TRUE(contains(refusal(j), "coverage"));
  j = valid_model();
  j["gpus"]["Made-up GPU"]["achieved_GBps"] = -5;
  why = refusal(j);
  EXPECT_TRUE(contains(why, "achieved_GBps")) << why;
  j = valid_model();
  j["families"]["matmul"]["ranges"][3] = {2.0, 1.0};  // min above max
  EXPECT_TRUE(contains(refusal(j), "families.matmul.ranges[3]"));
  j = valid_model();
  j["families"]["matmul"]["ranges"].erase(0);  // one pair short of the features
  why = refusal(j);
  EXPECT_TRUE(contains(why, "families.matmul.ranges")) << why;
  EXPECT_TRUE(contains(why, fmt::format("expected {} [min, max] pairs", cost_feature_names().size()))) << why;
  j = valid_model();
  j["families"]["matmul"]["ranges"].push_back({0.0, 1.0});  // one too many
  EXPECT_TRUE(contains(refusal(j), "families.matmul.ranges"));
}

TEST(CostModel, RefusesAFamilyWithoutTimeAndReadsEveryOtherTargetOnItsOwn) {
  json j = valid_model();
  j["families"]["matmul"]["targets"].erase("time");
  std::string why = refusal(j);
  EXPECT_TRUE(contains(why, "families.matmul.targets")) << why;
  EXPECT_TRUE(contains(why, "'time' is missing")) << why;
  // Energy, power and host each stand alone: any of them may be missing.
  for (const char* target : {"energy", "power", "host"}) {
    j = valid_model();
    j["families"]["matmul"]["targets"].erase(target);
    const auto targets = CostModel::from_json(j).families().at("matmul").targets;
    EXPECT_EQ(targets.size(), 3u) << target;
    EXPECT_FALSE(targets.count(target)) << target;
  }
  // Each is a tree ensemble of its own: one without its trees (energy as time × power once was)
  // is refused by name.
  for (const char* target : {"energy", "power", "host"}) {
    for (const char* key : {"init", "learning_rate", "trees", "interval_log_halfwidth", "held_out"}) {
      j = valid_model();
      j["families"]["matmul"]["targets"][target].erase(key);
      why = refusal(j);
      EXPECT_TRUE(contains(why, fmt::format("families.matmul.targets.{}", target))) << why;
      EXPECT_TRUE(contains(why, fmt::format("'{}' is missing", key))) << why;
    }
  }
}

TEST(CostModel, TextThatIsNotJsonIsRefusedNamingItsSource) {
  for (const std::string text : {"", "{\"format\": ", "not a model", "{\"coverage\": NaN}"}) {
    try {
      CostModel::from_text(text, "my-model.json");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const std::invalid_argument& e) {
      EXPECT_TRUE(contains(e.what(), "my-model.json: not JSON")) << e.what();
    }
  }
  // A JSON that is no model names its source and the place.
  try {
    CostModel::from_text("[1, 2]", "my-model.json");
    ADD_FAILURE() << "accepted an array";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "my-model.json: cost model, format")) << e.what();
  }
}

TEST(CostModel, TreesAreEvaluatedAsScikitLearnDoes) {
  RegressionTree t;
  const double threshold = double(0.1f);  // a float32 value, as scikit-learn's thresholds sit between them
  t.feature = {0, -2, -2};
  t.threshold = {threshold, -2, -2};
  t.left = {1, -1, -1};
  t.right = {2, -1, -1};
  t.value = {0, 1.5, -2.5};
  EXPECT_EQ(t.evaluate({threshold - 1e-3}), 1.5);
  EXPECT_EQ(t.evaluate({threshold}), 1.5);  // ≤ goes left
  EXPECT_EQ(t.evaluate({threshold + 1e-3}), -2.5);
  // Above the threshold as a double, on it as a float32 (whose spacing here is 7.5e-9): left,
  // as scikit-learn, which compares its float32 copy of the features.
  const double x = threshold + 1e-12;
  ASSERT_GT(x, threshold);
  ASSERT_EQ(double(float(x)), threshold);
  EXPECT_EQ(t.evaluate({x}), 1.5);

  BoostedTrees b;
  b.init = 0.25;
  b.learning_rate = 0.1;
  b.trees = {t, t};
  EXPECT_DOUBLE_EQ(b.evaluate({0.0}), 0.25 + 0.1 * (1.5 + 1.5));
  EXPECT_DOUBLE_EQ(b.evaluate({1.0}), 0.25 + 0.1 * (-2.5 - 2.5));
}

std::string estimate_refusal(const CostModel& m, const std::string& op, const std::string& args,
                             const std::string& gpu) {
  try {
    m.estimate(call_of(op, args), "warm", gpu);
  } catch (const std::invalid_argument& e) {
    EXPECT_FALSE(contains(e.what(), "\n")) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "estimated " << op << " " << args << " on " << gpu;
  return "";
}

TEST(CostModel, EstimateRefusesAnUnknownGpuAnUncountedOperatorAndAFamilyWithoutAModel) {
  const CostModel m = CostModel::from_json(valid_model());
  std::string why = estimate_refusal(m, "aten::mm", kMmArgs, "NVIDIA H200");
  EXPECT_TRUE(contains(why, "--gpu NVIDIA H200")) << why;
  EXPECT_TRUE(contains(why, "Made-up GPU")) << why;
  why = estimate_refusal(m, "aten::topk", "self=f32[4,8] k=2", "Made-up GPU");
  EXPECT_TRUE(contains(why, "aten::topk")) << why;
  EXPECT_TRUE(contains(why, "not counted")) << why;
  why = estimate_refusal(m, "aten::relu", "self=bf16[1000]", "Made-up GPU");
  EXPECT_TRUE(contains(why, "no elementwise rows")) << why;
  EXPECT_TRUE(contains(why, "matmul")) << why;  // the families it has
}

TEST(CostModel, AnEstimateCarriesItsIntervalsAndEachFigureIsItsBaseTimesItsTrees) {
  const CostModel m = CostModel::from_json(valid_model());
  const CostEstimate e = m.estimate(call_of("aten::mm", kMmArgs), "warm", "Made-up GPU");
  EXPECT_EQ(e.family, "matmul");
  EXPECT_EQ(e.coverage, 0.9);
  EXPECT_TRUE(e.out_of_range.empty());
  // log2_flops ≈ 32.6 > 30: the right leaf; (roofline + floor) · exp(0.1 + 0.5 · −0.4).
  const double time_us = (15.72864 + 3.0) * std::exp(-0.1);
  EXPECT_NEAR(e.time_us, time_us, 1e-12 * time_us);
  EXPECT_DOUBLE_EQ(e.time_low_us, e.time_us * std::exp(-0.1));
  EXPECT_DOUBLE_EQ(e.time_high_us, e.time_us * std::exp(0.1));
  // The base power: 500 W (compute-bound) for the roofline's 15.72864 µs, 60 W for the floor.
  const double base_power_W = (15.72864 * 500 + 3 * 60) / (15.72864 + 3.0);
  ASSERT_TRUE(e.power_W && e.energy_mJ && e.energy_low_mJ && e.energy_high_mJ);
  EXPECT_DOUBLE_EQ(*e.power_W, base_power_W * std::exp(0.2));
  // Energy: base time × base power (µs × W = µJ) × e^(0.05 + 0.1), not time × power.
  const double energy_mJ = (15.72864 + 3.0) * base_power_W * std::exp(0.15) * 1e-3;
  EXPECT_NEAR(*e.energy_mJ, energy_mJ, 1e-12 * energy_mJ);
  EXPECT_NE(*e.energy_mJ, e.time_us * *e.power_W * 1e-3);
  EXPECT_DOUBLE_EQ(*e.energy_low_mJ, *e.energy_mJ * std::exp(-0.2));
  EXPECT_DOUBLE_EQ(*e.energy_high_mJ, *e.energy_mJ * std::exp(0.2));
  EXPECT_TRUE(e.notes.empty());
  ASSERT_TRUE(e.host_us);
  EXPECT_DOUBLE_EQ(*e.host_us, 10.0);
  // A small product (log2_flops < 30) takes the left leaf.
  const CostEstimate small =
      m.estimate(call_of("aten::mm", "self=bf16[64,64] mat2=bf16[64,64]"), "warm", "Made-up GPU");
  const double roofline = std::max(2.0 * 64 * 64 * 64 / 400e12, 2.0 * 3 * 64 * 64 / 2000e9) * 1e6;
  EXPECT_NEAR(small.time_us, (roofline + 3.0) * std::exp(0.1 + 0.5 * 0.2), 1e-12);

  // The document is marked estimated, with each interval.
  const json doc = estimate_document(call_of("aten::mm", kMmArgs), "Made-up GPU", e);
  EXPECT_EQ(doc["estimated"], true);
  EXPECT_EQ(doc["op"], "aten::mm");
  EXPECT_EQ(doc["gpu"], "Made-up GPU");
  EXPECT_EQ(doc["time_us"]["estimate"].get<double>(), e.time_us);
  EXPECT_EQ(doc["time_us"]["low"].get<double>(), e.time_low_us);
  EXPECT_EQ(doc["energy_mJ"]["high"].get<double>(), *e.energy_high_mJ);
  EXPECT_TRUE(doc["out_of_range"].empty());

  EXPECT_EQ(doc["power_W"].get<double>(), *e.power_W);
  EXPECT_EQ(doc["host_us"].get<double>(), *e.host_us);

  // Without power and energy: neither, the document says null, and no note (nothing was asked).
  json j = valid_model();
  j["families"]["matmul"]["targets"].erase("power");
  j["families"]["matmul"]["targets"].erase("energy");
  const CostEstimate timed = CostModel::from_json(j).estimate(call_of("aten::mm", kMmArgs), "warm", "Made-up GPU");
  EXPECT_FALSE(timed.energy_mJ);
  EXPECT_FALSE(timed.power_W);
  EXPECT_TRUE(timed.notes.empty());
  EXPECT_DOUBLE_EQ(timed.time_us, e.time_us);
  const json timed_doc = estimate_document(call_of("aten::mm", kMmArgs), "Made-up GPU", timed);
  EXPECT_TRUE(timed_doc["energy_mJ"].is_null());
  EXPECT_TRUE(timed_doc["power_W"].is_null());
  // Power without energy, and energy without power: each given alone.
  j = valid_model();
  j["families"]["matmul"]["targets"].erase("energy");
  const CostEstimate power_only = CostModel::from_json(j).estimate(call_of("aten::mm", kMmArgs), "warm", "Made-up GPU");
  EXPECT_FALSE(power_only.energy_mJ);
  ASSERT_TRUE(power_only.power_W);
  EXPECT_DOUBLE_EQ(*power_only.power_W, *e.power_W);
  j = valid_model();
  j["families"]["matmul"]["targets"].erase("power");
  const CostEstimate energy_only =
      CostModel::from_json(j).estimate(call_of("aten::mm", kMmArgs), "warm", "Made-up GPU");
  EXPECT_FALSE(energy_only.power_W);
  ASSERT_TRUE(energy_only.energy_mJ);
  EXPECT_DOUBLE_EQ(*energy_only.energy_mJ, *e.energy_mJ);
}

TEST(CostModel, OnAGpuItsFamilyWasNotFittedOnTheTreesReadTheFittedGpusFeatures) {
  // The family fitted on the made-up GPU's rows alone. Two others: "Wider GPU", its FLOP rates
  // and twice its bandwidth (as an H200 to an H100), and "Faster GPU", twice both.
  json j = valid_model();
  j["gpus"]["Wider GPU"] = j["gpus"]["Made-up GPU"];
  j["gpus"]["Wider GPU"]["achieved_GBps"] = 4000.0;
  j["gpus"]["Faster GPU"] = j["gpus"]["Wider GPU"];
  j["gpus"]["Faster GPU"]["achieved_tflops"] = {{"bf16", 800.0}, {"f32", 100.0}};
  j["families"]["matmul"]["gpus"] = {{"Made-up GPU", 40}};
  // A thin, memory-bound product: its roofline halves on both others.
  const OpCall mm = call_of("aten::mm", "self=bf16[65536,64] mat2=bf16[64,64]");
  const CostModel read = CostModel::from_json(j);
  const auto roofline_us = [&](const std::string& gpu) {
    return cost_features(mm, "warm", gpu_profile_from_json(gpu, j["gpus"][gpu]))->roofline_us;
  };
  const double made_up_us = roofline_us("Made-up GPU"), wider_us = roofline_us("Wider GPU");
  ASSERT_NEAR(wider_us, made_up_us / 2, 1e-9);
  ASSERT_NEAR(roofline_us("Faster GPU"), wider_us, 1e-9);
  // Time and energy split on the roofline feature between the made-up GPU's (right: −0.4 and
  // +0.3) and the others' (left: +0.2 and 0): a tree that read the wrong GPU's features would
  // take the other leaf.
  const double split = (std::log2(made_up_us + 1e-3) + std::log2(wider_us + 1e-3)) / 2;
  const int roofline_feature = int(feature_index("log2_roofline_us"));
  j["families"]["matmul"]["targets"]["time"]["trees"] = {split_tree(roofline_feature, split, 0.2, -0.4)};
  j["families"]["matmul"]["targets"]["energy"]["trees"] = {split_tree(roofline_feature, split, 0.0, 0.3)};
  const CostModel m = CostModel::from_json(j);
  // On its own GPU, as ever: (roofline + floor) · e^(0.1 − 0.5 · 0.4), no note.
  const CostEstimate own = m.estimate(mm, "warm", "Made-up GPU");
  const double own_us = (made_up_us + 3.0) * std::exp(-0.1);
  EXPECT_NEAR(own.time_us, own_us, 1e-12 * own_us);
  EXPECT_TRUE(own.notes.empty());
  ASSERT_GT(own_us, made_up_us);

  // Alike FLOP rates: the wider GPU's roofline and the time beyond the made-up GPU's kept.
  const CostEstimate wider = m.estimate(mm, "warm", "Wider GPU");
  const double wider_estimate_us = wider_us + (own_us - made_up_us);
  EXPECT_NEAR(wider.time_us, wider_estimate_us, 1e-12 * wider_estimate_us);
  EXPECT_DOUBLE_EQ(wider.time_low_us, wider.time_us * std::exp(-0.1));
  EXPECT_DOUBLE_EQ(wider.base_us, wider_us + 3.0);  // the figures' base is this GPU's
  ASSERT_EQ(wider.notes.size(), 1u);
  EXPECT_TRUE(contains(wider.notes[0], "fitted on Made-up GPU's rows")) << wider.notes[0];
  EXPECT_TRUE(contains(wider.notes[0], "for Wider GPU")) << wider.notes[0];
  EXPECT_TRUE(contains(wider.notes[0], "the time beyond the roofline kept")) << wider.notes[0];
  // Energy: the trees' right leaf (the made-up GPU's features), over this GPU's base.
  ASSERT_TRUE(wider.energy_mJ && wider.base_energy_mJ);
  EXPECT_NEAR(*wider.energy_mJ, *wider.base_energy_mJ * std::exp(0.05 + 0.3), 1e-12 * *wider.energy_mJ);
  EXPECT_NEAR(*wider.base_energy_mJ, (wider_us * 400 + 3 * 60) * 1e-3, 1e-12);  // memory-bound: 400 W

  // Unlike FLOP rates: the whole time scaled by the rooflines' ratio, still by the made-up
  // GPU's leaf.
  const CostEstimate faster = m.estimate(mm, "warm", "Faster GPU");
  EXPECT_NEAR(faster.time_us, (wider_us + 3.0) * std::exp(-0.1), 1e-9);
  ASSERT_EQ(faster.notes.size(), 1u);
  EXPECT_TRUE(contains(faster.notes[0], "scaled by the rooflines' ratio")) << faster.notes[0];

  // Of two fitted GPUs, the one with the most rows: the made-up GPU, alike to the wider one
  // (the faster one, unlike, would scale the whole time).
  j["families"]["matmul"]["gpus"] = {{"Made-up GPU", 40}, {"Faster GPU", 5}};
  EXPECT_NEAR(CostModel::from_json(j).estimate(mm, "warm", "Wider GPU").time_us, wider_estimate_us,
              1e-12 * wider_estimate_us);

  // A time below the source's roofline (trees at e^−1.2) moves with the rates as a whole.
  j["families"]["matmul"]["gpus"] = {{"Made-up GPU", 40}};
  j["families"]["matmul"]["targets"]["time"]["init"] = -0.6;
  const double fast_source_us = (made_up_us + 3.0) * std::exp(-0.6 - 0.2);
  ASSERT_LT(fast_source_us, made_up_us);
  EXPECT_NEAR(CostModel::from_json(j).estimate(mm, "warm", "Wider GPU").time_us, fast_source_us / 2, 1e-9);

  // A model that does not name its family's GPUs: this GPU's features, base × the trees (left
  // leaves), no note.
  j["families"]["matmul"]["targets"]["time"]["init"] = 0.1;
  j["families"]["matmul"].erase("gpus");
  const CostEstimate scaled = CostModel::from_json(j).estimate(mm, "warm", "Wider GPU");
  EXPECT_NEAR(scaled.time_us, (wider_us + 3.0) * std::exp(0.1 + 0.5 * 0.2), 1e-9);
  EXPECT_NEAR(*scaled.energy_mJ, *scaled.base_energy_mJ * std::exp(0.05), 1e-12 * *scaled.energy_mJ);
  EXPECT_TRUE(scaled.notes.empty());

  // A family that names a GPU the model has no rates of, or none of its rows, is refused.
  for (const json& gpus : {json{{"Unknown GPU", 40}}, json{{"Made-up GPU", 0}}, json{{"Made-up GPU", "40"}}}) {
    j["families"]["matmul"]["gpus"] = gpus;
    try {
      CostModel::from_json(j);
      ADD_FAILURE() << "read: " << gpus.dump();
    } catch (const std::invalid_argument& e) {
      EXPECT_TRUE(contains(e.what(), "families.matmul.gpus")) << e.what();
    }
  }
}

TEST(CostModel, GpusOfAlikeComputeHaveEveryCommonFlopRateWithin15Percent) {
  GpuProfile a, b;
  a.achieved_tflops = {{"bf16", 720}, {"f32", 51.7}};
  b.achieved_tflops = {{"bf16", 704}, {"f32", 51.3}, {"f16", 690}};  // the H100's and H200's
  EXPECT_TRUE(alike_compute(a, b));
  EXPECT_TRUE(alike_compute(b, a));
  b.achieved_tflops["f32"] = 60;  // 16% apart
  EXPECT_FALSE(alike_compute(a, b));
  b.achieved_tflops = {{"f16", 690}};  // nothing in common to compare
  EXPECT_FALSE(alike_compute(a, b));
}

TEST(CostModel, WithoutTheDrawOfTheCallsRooflineSideThereIsNoEnergyAndANoteSaysWhy) {
  // The GPU's rows gave no memory-bound draw: a compute-bound mm still has energy, a
  // memory-bound one (64³: 0.5 MFLOP in 1.3 ns, 24 KiB in 12 ns) has none, and says why.
  json j = valid_model();
  j["gpus"]["Made-up GPU"]["memory_power_W"] = nullptr;
  const CostModel m = CostModel::from_json(j);
  const CostEstimate big = m.estimate(call_of("aten::mm", kMmArgs), "warm", "Made-up GPU");
  EXPECT_TRUE(big.energy_mJ && big.power_W);
  EXPECT_TRUE(big.notes.empty());
  const std::string small_args = "self=bf16[64,64] mat2=bf16[64,64]";
  const CostEstimate small = m.estimate(call_of("aten::mm", small_args), "warm", "Made-up GPU");
  EXPECT_FALSE(small.energy_mJ);
  EXPECT_FALSE(small.energy_low_mJ);
  EXPECT_FALSE(small.power_W);
  EXPECT_GT(small.time_us, 0);
  ASSERT_TRUE(small.host_us);  // the host time needs no power
  ASSERT_EQ(small.notes.size(), 1u);
  EXPECT_TRUE(contains(small.notes[0], "no energy estimate: ")) << small.notes[0];
  EXPECT_TRUE(contains(small.notes[0], "Made-up GPU")) << small.notes[0];
  const json doc = estimate_document(call_of("aten::mm", small_args), "Made-up GPU", small);
  EXPECT_TRUE(doc["energy_mJ"].is_null());
  EXPECT_EQ(doc["notes"], json(small.notes));
  // No idle draw: no call has a base power.
  j = valid_model();
  j["gpus"]["Made-up GPU"].erase("idle_power_W");
  const CostEstimate idle_less = CostModel::from_json(j).estimate(call_of("aten::mm", kMmArgs), "warm", "Made-up GPU");
  EXPECT_FALSE(idle_less.energy_mJ);
  ASSERT_EQ(idle_less.notes.size(), 1u);
  EXPECT_TRUE(contains(idle_less.notes[0], "no energy estimate: ")) << idle_less.notes[0];
}

TEST(CostModel, ACallOutsideTheFitsDataIsFlagged) {
  // The rows' data: this mm's features, a little either side.
  const auto seen = cost_features(call_of("aten::mm", kMmArgs), "warm", made_up_gpu());
  ASSERT_TRUE(seen);
  json j = valid_model();
  for (std::size_t k = 0; k < seen->values.size(); ++k)
    j["families"]["matmul"]["ranges"][k] = {seen->values[k] - 0.5, seen->values[k] + 0.5};
  const CostModel m = CostModel::from_json(j);
  EXPECT_TRUE(m.estimate(call_of("aten::mm", kMmArgs), "warm", "Made-up GPU").out_of_range.empty());
  // 16 times the FLOPs: log2_flops 4 above the rows'.
  const CostEstimate big =
      m.estimate(call_of("aten::mm", "self=bf16[16000,4096] mat2=bf16[4096,768]"), "warm", "Made-up GPU");
  ASSERT_FALSE(big.out_of_range.empty());
  bool flops_named = false;
  for (const auto& why : big.out_of_range) flops_named |= contains(why, "log2_flops = ");
  EXPECT_TRUE(flops_named) << big.out_of_range.front();
  // bmm is of the family but not among its rows' operators: said by name (its operator code is
  // not listed as a range).
  const CostEstimate bmm =
      m.estimate(call_of("aten::bmm", "self=bf16[1,1000,4096] mat2=bf16[1,4096,768]"), "warm", "Made-up GPU");
  ASSERT_FALSE(bmm.out_of_range.empty());
  EXPECT_EQ(bmm.out_of_range.front(), "aten::bmm is not among the operators its matmul rows had");
  for (const auto& why : bmm.out_of_range) EXPECT_FALSE(contains(why, "operator_code")) << why;
  const json doc =
      estimate_document(call_of("aten::bmm", "self=bf16[1,1000,4096] mat2=bf16[1,4096,768]"), "Made-up GPU", bmm);
  EXPECT_EQ(doc["out_of_range"].size(), bmm.out_of_range.size());
}

// Stored models: beside the measurements, never among them, on each engine.
class CostModelStoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    OPCOST_SKIP_WITHOUT_ENGINE(GetParam());
    db_.emplace(GetParam());
  }
  const std::string& location() const { return db_->location(); }

 private:
  std::optional<opcost::testing::TestDatabase> db_;
};

INSTANTIATE_TEST_SUITE_P(Engines, CostModelStoreTest, ::testing::Values("sqlite", "postgres"));

int64_t stored_models(Database& db) {
  auto q = db.connection().query("SELECT COUNT(*) FROM cost_models", {});
  EXPECT_TRUE(q->step());
  return q->column(0).get<int64_t>();
}

TEST_P(CostModelStoreTest, TheNewestStoredModelIsReadBackAndNoMeasurementIsAdded) {
  Database db(location());
  EXPECT_FALSE(latest_cost_model(db));  // none stored: no table yet
  const std::string first = valid_model().dump();
  json second_json = valid_model();
  second_json["data_hash"] = "sha256:second";
  const std::string second = second_json.dump();
  const int64_t first_id = store_cost_model(db, first);
  const int64_t second_id = store_cost_model(db, second);
  EXPECT_GT(second_id, first_id);
  auto latest = latest_cost_model(db);
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->id, second_id);
  EXPECT_EQ(latest->data_hash, "sha256:second");
  EXPECT_EQ(latest->model_json, second);
  EXPECT_FALSE(latest->created_at.empty());
  // Estimates from it are never measurements: the measurements table stays empty.
  const CostModel m = CostModel::from_text(latest->model_json, "stored");
  (void)m.estimate(call_of("aten::mm", kMmArgs), "warm", "Made-up GPU");
  EXPECT_EQ(db.count(), 0u);
  EXPECT_EQ(stored_models(db), 2);
  // Read back through a fresh, read-only connection too.
  Database reader(location(), Database::Access::kReadOnly);
  EXPECT_EQ(latest_cost_model(reader)->id, second_id);
}

TEST_P(CostModelStoreTest, ATextThatIsNoModelIsRefusedAndNothingIsStored) {
  Database db(location());
  const int64_t id = store_cost_model(db, valid_model().dump());
  json loop = valid_model();
  loop["families"]["matmul"]["targets"]["time"]["trees"][0]["left"][0] = 0;
  for (const std::string& text : {std::string("not json"), std::string("{}"), loop.dump()}) {
    try {
      store_cost_model(db, text);
      ADD_FAILURE() << "stored " << text.substr(0, 80);
    } catch (const std::invalid_argument& e) {
      EXPECT_TRUE(contains(e.what(), "the fitted model: ")) << e.what();
    }
  }
  EXPECT_EQ(stored_models(db), 1);
  EXPECT_EQ(latest_cost_model(db)->id, id);
  EXPECT_EQ(db.count(), 0u);
}

TEST_P(CostModelStoreTest, ARefusedFirstModelLeavesNoTable) {
  Database db(location());
  EXPECT_THROW(store_cost_model(db, "{}"), std::invalid_argument);
  EXPECT_FALSE(db.connection().has_table("cost_models"));
  EXPECT_FALSE(latest_cost_model(db));
}

}  // namespace
}  // namespace opcost
