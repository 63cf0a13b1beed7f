// FLOPs and bytes of a call counted from its arguments (core/estimate/call_work.h), against
// figures worked out by hand here, each call parsed from the text an inventory or sweep writes.
#include "core/estimate/call_work.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace opcost {
namespace {

std::optional<CallWork> work(const std::string& op, const std::string& args) {
  std::vector<std::string> tokens;
  std::istringstream in(args);
  for (std::string t; in >> t;) tokens.push_back(t);
  return call_work(parse_call(op, tokens));
}

TEST(CallWork, Conv2dCountsItsOutputSizeFromStridePaddingAndDilation) {
  // 56 + 2·1 − 1·(3 − 1) − 1 = 55; 55 / 2 + 1 = 28 (floor).
  auto w = work("aten::conv2d", "input=f32[32,64,56,56] weight=f32[128,64,3,3] stride=[2,2] padding=[1,1]");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->family, OpFamily::kConvolution);
  EXPECT_DOUBLE_EQ(w->flops, 2.0 * 32 * 128 * 28 * 28 * 64 * 3 * 3);
  EXPECT_DOUBLE_EQ(w->bytes, 4.0 * (32 * 64 * 56 * 56 + 128 * 64 * 3 * 3 + 32 * 128 * 28 * 28));
  EXPECT_DOUBLE_EQ(w->flop_per_byte(), w->flops / w->bytes);
  // Dilation 2 widens the 3-tap kernel to 5: 10 − 4 = 6 outputs a side.
  w = work("aten::conv2d", "input=f32[1,1,10,10] weight=f32[1,1,3,3] dilation=[2,2]");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, 2.0 * 6 * 6 * 9);
}

TEST(CallWork, GroupedConvolutionsBiasAndThePaddingWords) {
  // Depthwise: 32 groups of one channel; 8×8 outputs; the bias adds one per output element.
  auto w = work("aten::conv2d", "input=f32[1,32,10,10] weight=f32[32,1,3,3] bias=f32[32] groups=32");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, 2.0 * 32 * 64 * 9 + 32 * 64);
  EXPECT_DOUBLE_EQ(w->bytes, 4.0 * (3200 + 288 + 32 + 32 * 64));
  // padding="same" keeps the size at stride 1, and is not counted at another stride.
  w = work("aten::conv2d", "input=bf16[1,3,9,9] weight=bf16[4,3,3,3] padding=same");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, 2.0 * 4 * 81 * 27);
  EXPECT_FALSE(work("aten::conv2d", "input=bf16[1,3,9,9] weight=bf16[4,3,3,3] padding=same stride=2"));
  // A stride of 0, a negative padding or dilation, and sizes that would overflow an integer are
  // no figure, never a division by zero.
  EXPECT_FALSE(work("aten::conv2d", "input=f32[1,3,9,9] weight=f32[4,3,3,3] stride=[0,0]"));
  EXPECT_FALSE(work("aten::conv2d", "input=f32[1,3,9,9] weight=f32[4,3,3,3] padding=[-5,-5]"));
  EXPECT_FALSE(work("aten::conv2d", "input=f32[1,3,9,9] weight=f32[4,3,3,3] dilation=[0,1]"));
  w = work("aten::conv2d", "input=f32[1,3,9,9] weight=f32[4,3,3,3] padding=[9223372036854775807,0]");
  ASSERT_TRUE(w);  // a huge but valid padding: counted in doubles, no overflow
  EXPECT_GT(w->flops, 0);
  // A weight whose channels do not match the input's (over the groups) is no figure.
  EXPECT_FALSE(work("aten::conv2d", "input=f32[1,32,10,10] weight=f32[32,2,3,3] groups=32"));
  // conv1d: one spatial dimension; 16 − 5 + 1 = 12 outputs.
  w = work("aten::conv1d", "input=f32[2,4,16] weight=f32[8,4,5]");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, 2.0 * 2 * 8 * 12 * 4 * 5);
}

TEST(CallWork, MatrixProductsAndLinear) {
  auto w = work("aten::mm", "self=bf16[256,512] mat2=bf16[512,768]");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->family, OpFamily::kMatmul);
  EXPECT_DOUBLE_EQ(w->flops, 2.0 * 256 * 512 * 768);
  EXPECT_DOUBLE_EQ(w->bytes, 2.0 * (256 * 512 + 512 * 768 + 256 * 768));
  w = work("aten::bmm", "self=f32[8,4,5] mat2=f32[8,5,6]");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, 2.0 * 8 * 4 * 5 * 6);
  // addmm: the product and self added to each of its 4×6 outputs.
  w = work("aten::addmm", "self=f32[6] mat1=f32[4,5] mat2=f32[5,6]");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, 2.0 * 4 * 5 * 6 + 24);
  EXPECT_DOUBLE_EQ(w->bytes, 4.0 * (20 + 30 + 6 + 24));
  // linear: every leading dimension of the input is a row: 2·3 rows of 16 by 16×8, plus the bias.
  w = work("aten::linear", "input=bf16[2,3,16] weight=bf16[8,16] bias=bf16[8]");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, 2.0 * 6 * 16 * 8 + 6 * 8);
  EXPECT_DOUBLE_EQ(w->bytes, 2.0 * (96 + 128 + 8 + 48));
  // Shapes that do not multiply are no figure.
  EXPECT_FALSE(work("aten::mm", "self=f32[4,5] mat2=f32[6,7]"));
  EXPECT_FALSE(work("aten::bmm", "self=f32[2,4,5] mat2=f32[3,5,6]"));
  EXPECT_FALSE(work("aten::linear", "input=f32[4,5] weight=f32[8,6]"));
}

TEST(CallWork, ElementwiseCountsOneOperationPerBroadcastOutputElement) {
  auto w = work("aten::add", "self=f32[4,1,3] other=f32[2,3]");  // broadcasts to [4,2,3]
  ASSERT_TRUE(w);
  EXPECT_EQ(w->family, OpFamily::kElementwise);
  EXPECT_DOUBLE_EQ(w->flops, 24);
  EXPECT_DOUBLE_EQ(w->bytes, 4.0 * (12 + 6 + 24));
  w = work("aten::relu", "self=bf16[1000]");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->bytes, 2.0 * 2000);
  w = work("aten::mul", "self=f32[10] other=2.5");  // a scalar is no tensor read
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->bytes, 4.0 * 20);
  EXPECT_FALSE(work("aten::add", "self=f32[4,3] other=f32[2,3]"));  // does not broadcast
}

TEST(CallWork, OperatorsNotCountedAndPositionalArgumentsHaveNoFigure) {
  EXPECT_FALSE(work("aten::softmax", "self=f32[4,8] dim=1"));
  EXPECT_FALSE(work("aten::mm", "f32[4,5] f32[5,6]"));  // positional: the names say which is which
  EXPECT_EQ(family_name(OpFamily::kConvolution), "convolution");
  EXPECT_EQ(family_name(OpFamily::kMatmul), "matmul");
  EXPECT_EQ(family_name(OpFamily::kElementwise), "elementwise");
}

}  // namespace
}  // namespace opcost
