// Matching a stored row whose arguments differ from a call's only in floating-point scalar
// values: which differences are ignored, which are not, and which operators never match so.
#include "core/predict/float_scalar_match.h"

#include <gtest/gtest.h>

#include <string>

#include "core/spec/spec_file.h"

namespace opcost {
namespace {

std::vector<NamedArg> args_of(const std::string& line) { return parse_call_line(line, "test").args; }

bool same(const std::string& a, const std::string& b) { return same_but_float_scalars(args_of(a), args_of(b)); }

TEST(FloatScalarMatch, AdamWsStepSizeIsIgnored) {
  EXPECT_TRUE(same("aten::addcdiv_ self=f32[32,16] tensor1=f32[32,16] tensor2=f32[32,16] value=-0.003690036900369005",
                   "aten::addcdiv_ self=f32[32,16] tensor1=f32[32,16] tensor2=f32[32,16] value=-0.001044267718120547"));
  // _foreach_div_.ScalarList on a GPU: a list of floats, one per parameter.
  EXPECT_TRUE(same("aten::_foreach_div_ self=[f32[4],f32[8]] scalars=[0.5,0.25]",
                   "aten::_foreach_div_ self=[f32[4],f32[8]] scalars=[0.9,1e-08]"));
}

TEST(FloatScalarMatch, EverythingButFloatScalarsMustBeEqual) {
  // A tensor's shape, dtype, strides or value range.
  EXPECT_FALSE(same("aten::addcdiv_ self=f32[32] tensor1=f32[32] tensor2=f32[32] value=0.5",
                    "aten::addcdiv_ self=f32[16] tensor1=f32[16] tensor2=f32[16] value=0.5"));
  EXPECT_FALSE(same("aten::mul.Scalar self=f32[8] other=0.5", "aten::mul.Scalar self=bf16[8] other=0.5"));
  EXPECT_FALSE(same("aten::mul.Scalar self=f32[8]:range[0.0,1.0] other=0.5",
                    "aten::mul.Scalar self=f32[8]:range[0.0,2.0] other=0.5"));
  // An integer against a float: a Scalar's type sets the result's dtype.
  EXPECT_FALSE(same("aten::mul.Scalar self=i64[8] other=2", "aten::mul.Scalar self=i64[8] other=2.0"));
  EXPECT_FALSE(
      same("aten::add.Tensor self=f32[8] other=f32[8] alpha=2", "aten::add.Tensor self=f32[8] other=f32[8] alpha=3"));
  // Booleans, words, None, complex numbers.
  EXPECT_FALSE(same("aten::gelu self=f32[8] approximate=tanh", "aten::gelu self=f32[8] approximate=none"));
  EXPECT_FALSE(same("aten::clamp self=f32[8] min=0.0 max=None", "aten::clamp self=f32[8] min=0.0 max=1.0"));
  EXPECT_FALSE(same("aten::mul.Scalar self=c64[8] other=1.5-2.0j", "aten::mul.Scalar self=c64[8] other=1.5+2.0j"));
  EXPECT_FALSE(same("aten::native_dropout input=f32[8] p=0.5 train=true",
                    "aten::native_dropout input=f32[8] p=0.5 train=false"));
  // A float left out (its default) against one given; lists of other lengths; other names.
  EXPECT_FALSE(same("aten::addcdiv_ self=f32[4] tensor1=f32[4] tensor2=f32[4]",
                    "aten::addcdiv_ self=f32[4] tensor1=f32[4] tensor2=f32[4] value=0.5"));
  EXPECT_FALSE(
      same("aten::_foreach_div_ self=[f32[4]] scalars=[0.5]", "aten::_foreach_div_ self=[f32[4]] scalars=[0.5,0.5]"));
  EXPECT_FALSE(same("aten::clamp self=f32[8] min=0.0", "aten::clamp self=f32[8] max=0.0"));
  // Clamp's bounds are values only: the same elementwise kernel whatever they are.
  EXPECT_TRUE(same("aten::clamp self=f32[8] min=-1.0 max=1.0", "aten::clamp self=f32[8] min=0.0 max=6.0"));
  EXPECT_TRUE(same("aten::native_layer_norm input=f32[2,8] normalized_shape=[8] weight=f32[8] bias=f32[8] eps=1e-05",
                   "aten::native_layer_norm input=f32[2,8] normalized_shape=[8] weight=f32[8] bias=f32[8] eps=1e-06"));
}

TEST(FloatScalarMatch, OperatorsWhoseWorkAFloatChangesNeverMatchSo) {
  for (const char* op : {"aten::pow",
                         "aten::pow_",
                         "aten::float_power",
                         "aten::_foreach_pow_",
                         "aten::addmm",
                         "aten::baddbmm",
                         "aten::_addmm_activation",
                         "aten::addmv",
                         "aten::addr",
                         "aten::dropout",
                         "aten::native_dropout",
                         "aten::scaled_dot_product_attention",
                         "aten::_scaled_dot_product_flash_attention",
                         "aten::norm",
                         "aten::linalg_vector_norm",
                         "aten::_foreach_norm",
                         "aten::cdist",
                         "aten::_cdist_forward",
                         "aten::upsample_nearest2d",
                         "aten::upsample_bilinear2d_backward",
                         "aten::arange",
                         "aten::smooth_l1_loss",
                         "aten::histc",
                         "aten::fill_",
                         "aten::full",
                         "aten::cross_entropy_loss",
                         "aten::_fused_sgd_",
                         "torchvision::nms"})
    EXPECT_TRUE(float_scalars_may_change_work(op)) << op;
  for (const char* op : {"aten::addcdiv_", "aten::_foreach_addcdiv_", "aten::_foreach_div_", "aten::mul", "aten::add",
                         "aten::clamp", "aten::native_layer_norm", "aten::native_batch_norm", "aten::masked_fill",
                         "aten::lerp_", "aten::leaky_relu", "aten::_fused_adamw_", "aten::rms_norm", "aten::elu"})
    EXPECT_FALSE(float_scalars_may_change_work(op)) << op;
}

TEST(FloatScalarMatch, OnlyCallsWithAFloatLookFurther) {
  EXPECT_TRUE(has_float_scalars(args_of("aten::mul.Scalar self=f32[8] other=0.5")));
  EXPECT_TRUE(has_float_scalars(args_of("aten::_foreach_div_ self=[f32[4]] scalars=[0.5]")));
  EXPECT_FALSE(has_float_scalars(args_of("aten::mm self=f32[8,8]:range[0.0,1.0] mat2=f32[8,8]")));
  EXPECT_FALSE(has_float_scalars(args_of("aten::mul.Scalar self=i64[8] other=2")));
}

}  // namespace
}  // namespace opcost
