// FLOPs and bytes of a call counted from its arguments (core/estimate/call_work.h), against
// figures worked out by hand here, each call parsed from the text an inventory or sweep writes.
#include "core/estimate/call_work.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
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
  EXPECT_FALSE(work("aten::topk", "self=f32[4,8] k=2"));
  EXPECT_FALSE(work("aten::softmax", "f32[4,8] 1"));
  EXPECT_FALSE(work("aten::mm", "f32[4,5] f32[5,6]"));  // positional: the names say which is which
  EXPECT_EQ(family_name(OpFamily::kConvolution), "convolution");
  EXPECT_EQ(family_name(OpFamily::kMatmul), "matmul");
  EXPECT_EQ(family_name(OpFamily::kElementwise), "elementwise");
}

// 2^62: a dimension whose products overflow any integer (2^124 elements); counted in doubles.
const std::string kHuge = "4611686018427387904";

// A figure for a hostile shape: finite or infinite, never NaN or negative (no overflow).
void expect_huge(const std::optional<CallWork>& w) {
  ASSERT_TRUE(w);
  EXPECT_FALSE(std::isnan(w->flops));
  EXPECT_FALSE(std::isnan(w->bytes));
  EXPECT_GE(w->flops, 0);
  EXPECT_GT(w->bytes, 1e18);
}

TEST(CallWork, AttentionCountsBothProductsAndTheSoftmaxPerBatchAndHead) {
  // 2·4 batch-heads, L = 128, S = 256, E = 64, Ev = 32: per head L·S·(2·64 + 2·32 + 5 softmax).
  const std::string qkv = "query=f16[2,4,128,64] key=f16[2,4,256,64] value=f16[2,4,256,32]";
  auto w = work("aten::scaled_dot_product_attention", qkv);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->family, OpFamily::kAttention);
  EXPECT_DOUBLE_EQ(w->flops, 8.0 * 128 * 256 * (128 + 64 + 5));
  // q, k, v read, out [2,4,128,32] written, 2 bytes each.
  const double qkvo = 2.0 * 8 * (128 * 64 + 256 * 64 + 256 * 32 + 128 * 32);
  EXPECT_DOUBLE_EQ(w->bytes, qkvo);
  // is_causal keeps half the scores; a bool mask [L, S] is read once more.
  w = work("aten::scaled_dot_product_attention", qkv + " is_causal=True");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, 8.0 * 128 * 256 * (128 + 64 + 5) / 2);
  w = work("aten::scaled_dot_product_attention", qkv + " attn_mask=bool[128,256]");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->bytes, qkvo + 128.0 * 256);
  // Grouped-query: 8 query heads over 2 key heads, only with enable_gqa.
  const std::string gqa = "query=f32[1,8,16,64] key=f32[1,2,32,64] value=f32[1,2,32,64]";
  w = work("aten::scaled_dot_product_attention", gqa + " enable_gqa=True");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, 8.0 * 16 * 32 * (128 + 128 + 5));
  EXPECT_FALSE(work("aten::scaled_dot_product_attention", gqa));
  // Misfits: key's E is not query's; a mask that does not broadcast to [.., L, S].
  EXPECT_FALSE(work("aten::scaled_dot_product_attention", "query=f32[2,8,64] key=f32[2,8,32] value=f32[2,8,64]"));
  EXPECT_FALSE(work("aten::scaled_dot_product_attention", qkv + " attn_mask=bool[128,255]"));
  EXPECT_FALSE(work("aten::scaled_dot_product_attention", qkv + " attn_mask=bool[128,256] is_causal=True"));
  expect_huge(work("aten::scaled_dot_product_attention",
                   "query=f32[" + kHuge + ",2,8] key=f32[" + kHuge + ",4,8] value=f32[" + kHuge + ",4,8]"));
}

TEST(CallWork, NormalizationCountsAConstantPerElementAndItsParameters) {
  // 8·128·768 = 786432 elements, 5 each to normalize, 1 for the weight, 1 for the bias.
  auto w =
      work("aten::layer_norm",
           "input=f32[8,128,768] normalized_shape=[768] weight=f32[768] bias=f32[768] eps=1e-05 cudnn_enable=True");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->family, OpFamily::kNormalization);
  const double n = 8.0 * 128 * 768;
  EXPECT_DOUBLE_EQ(w->flops, 7 * n);
  EXPECT_DOUBLE_EQ(w->bytes, 4 * (2 * n + 768 + 768));
  // native_layer_norm also writes each of the 1024 rows' mean and 1/σ (f32).
  w = work("aten::native_layer_norm", "input=f32[8,128,768] normalized_shape=[768] weight=None bias=None eps=1e-05");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, 5 * n);
  EXPECT_DOUBLE_EQ(w->bytes, 4 * (2 * n + 2 * 1024));
  // batch_norm in eval: 4·16·8·8 = 4096 elements, 2 each with the running statistics given,
  // +2 for the affine; weight, bias, mean and var of 16 read.
  const std::string bn =
      "input=f32[4,16,8,8] weight=f32[16] bias=f32[16] running_mean=f32[16] running_var=f32[16] momentum=0.1 "
      "eps=1e-05";
  w = work("aten::batch_norm", bn + " training=False cudnn_enabled=True");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, 4096.0 * 4);
  EXPECT_DOUBLE_EQ(w->bytes, 4.0 * (2 * 4096 + 4 * 16));
  EXPECT_DOUBLE_EQ(work("aten::_native_batch_norm_legit_no_training", bn)->flops, 4096.0 * 4);
  // Training: statistics computed (5 + 2), running ones read and written, and native_ writes
  // the 16 channels' mean and 1/σ.
  w = work("aten::native_batch_norm", bn + " training=True");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, 4096.0 * 7);
  EXPECT_DOUBLE_EQ(w->bytes, 4.0 * (2 * 4096 + 2 * 16 + 2 * 2 * 16 + 2 * 16));
  // group_norm: 2·32·4·4 = 1024 elements, 7 each; group_norm's native form says N, C, HxW.
  w = work("aten::group_norm", "input=f32[2,32,4,4] num_groups=8 weight=f32[32] bias=f32[32]");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, 1024.0 * 7);
  EXPECT_DOUBLE_EQ(w->bytes, 4.0 * (2 * 1024 + 64));
  w = work("aten::native_group_norm", "input=f32[2,32,4,4] weight=None bias=None N=2 C=32 HxW=16 group=8 eps=1e-05");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->bytes, 4.0 * (2 * 1024 + 2 * 2 * 8));
  // rms_norm: 3 per element and 1 for the weight: 40·4; bf16 in, out and weight.
  w = work("aten::rms_norm", "input=bf16[4,10] normalized_shape=[10] weight=bf16[10] eps=None");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, 160);
  EXPECT_DOUBLE_EQ(w->bytes, 2.0 * (80 + 10));
  // Misfits: normalized_shape not the input's last dimensions, a weight of another shape,
  // channels not a multiple of the groups, batch_norm without its `training`, HxW that lies.
  EXPECT_FALSE(work("aten::layer_norm", "input=f32[8,768] normalized_shape=[512]"));
  EXPECT_FALSE(work("aten::layer_norm", "input=f32[8,768] normalized_shape=[768] weight=f32[512]"));
  EXPECT_FALSE(work("aten::group_norm", "input=f32[2,32,4,4] num_groups=5"));
  EXPECT_FALSE(work("aten::batch_norm", bn));
  EXPECT_FALSE(work("aten::native_group_norm", "input=f32[2,32,4,4] weight=None bias=None N=2 C=32 HxW=15 group=8"));
  expect_huge(work("aten::layer_norm", "input=f32[" + kHuge + "," + kHuge + "] normalized_shape=[" + kHuge + "]"));
}

TEST(CallWork, ReductionsCountAnOperationPerInputElementAndWriteTheReducedShape) {
  // sum over dim 1 of [4,5,6]: 120 adds, 4·6 = 24 outputs.
  auto w = work("aten::sum", "self=f32[4,5,6] dim=[1]");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->family, OpFamily::kReduction);
  EXPECT_DOUBLE_EQ(w->flops, 120);
  EXPECT_DOUBLE_EQ(w->bytes, 4.0 * (120 + 24));
  EXPECT_DOUBLE_EQ(work("aten::sum", "self=f32[4,5,6]")->bytes, 4.0 * (120 + 1));  // no dim: a scalar
  EXPECT_DOUBLE_EQ(work("aten::sum", "self=i32[10]")->bytes, 4.0 * 10 + 8);        // an integer sum is i64
  // mean over the last dim with keepdim into f32: 24 adds and 4 divides; 4 outputs of 4 bytes.
  w = work("aten::mean", "self=bf16[4,6] dim=[-1] keepdim=True dtype=f32");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, 24 + 4);
  EXPECT_DOUBLE_EQ(w->bytes, 2.0 * 24 + 4.0 * 4);
  // max along a dim writes values (f32) and indices (i64): 21 compares, 3 of each written.
  w = work("aten::max", "self=f32[3,7] dim=1");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, 21);
  EXPECT_DOUBLE_EQ(w->bytes, 4.0 * 21 + 3 * (4 + 8));
  // max of two tensors is pointwise.
  EXPECT_EQ(work("aten::max", "self=f32[3,7] other=f32[7]")->family, OpFamily::kElementwise);
  // var over dim 0 of [10,4]: 4 per input element and a divide per output.
  w = work("aten::var", "self=f32[10,4] dim=[0]");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, 40.0 * 4 + 4);
  EXPECT_DOUBLE_EQ(w->bytes, 4.0 * (40 + 4));
  // softmax: 5 per element, output of the input's shape; _softmax's half_to_float writes f32.
  w = work("aten::softmax", "self=f32[8,10] dim=-1");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, 400);
  EXPECT_DOUBLE_EQ(w->bytes, 4.0 * 160);
  w = work("aten::_softmax", "self=f16[8,10] dim=1 half_to_float=True");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->bytes, 2.0 * 80 + 4.0 * 80);
  // Misfits: a dim out of range, a dim twice, softmax without its dim, max given a list.
  EXPECT_FALSE(work("aten::sum", "self=f32[4,5,6] dim=[3]"));
  EXPECT_FALSE(work("aten::sum", "self=f32[4,5,6] dim=[1,-2]"));
  EXPECT_FALSE(work("aten::softmax", "self=f32[4,8]"));
  EXPECT_FALSE(work("aten::max", "self=f32[4,8] dim=[0,1]"));
  expect_huge(work("aten::sum", "self=f32[" + kHuge + "," + kHuge + "] dim=[0]"));
}

TEST(CallWork, PoolingCountsOutputsTimesTheWindow) {
  // 10 + 2·1 − 3 + (2 − 1) for ceil_mode = 10; 10 / 2 + 1 = 6 a side; 3·36 outputs of 9 taps.
  auto w = work("aten::max_pool2d", "self=f32[1,3,10,10] kernel_size=[3,3] stride=[2,2] padding=[1,1] ceil_mode=True");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->family, OpFamily::kPooling);
  EXPECT_DOUBLE_EQ(w->flops, 3.0 * 36 * 9);
  EXPECT_DOUBLE_EQ(w->bytes, 4.0 * (300 + 108));
  // The default stride is the kernel: 8 / 2 = 4 a side, 2·4·16 = 128 outputs; with indices
  // an i64 more per output.
  w = work("aten::max_pool2d_with_indices", "self=f32[2,4,8,8] kernel_size=[2,2]");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, 128.0 * 4);
  EXPECT_DOUBLE_EQ(w->bytes, 4.0 * (512 + 128) + 8.0 * 128);
  // ceil_mode's last window would start past input and padding (5 + 2 − 2 + 1 = 6, /2 + 1 = 4,
  // but (4 − 1)·2 = 6 ≥ 5 + 1): 3 a side.
  w = work("aten::avg_pool2d", "self=f32[1,1,5,5] kernel_size=[2,2] stride=[2,2] padding=[1,1] ceil_mode=True");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, 9.0 * 4);
  // Adaptive 5×7 to 3×3: a side's windows add up to n + m − gcd(n, m): 5 + 3 − 1 = 7 rows
  // ([0,2) [1,4) [3,5)) and 7 + 3 − 1 = 9 columns ([0,3) [2,5) [4,7)); 2 channels.
  w = work("aten::adaptive_avg_pool2d", "self=f32[1,2,5,7] output_size=[3,3]");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, 2.0 * 7 * 9);
  EXPECT_DOUBLE_EQ(w->bytes, 4.0 * (70 + 18));
  EXPECT_DOUBLE_EQ(work("aten::adaptive_max_pool2d", "self=f32[1,2,5,7] output_size=[3,3]")->bytes,
                   4.0 * (70 + 18) + 8.0 * 18);
  // Misfits: a window larger than the input, a padding over half the kernel, a stride of 0,
  // a 2-d input, an output size of 0.
  EXPECT_FALSE(work("aten::max_pool2d", "self=f32[1,1,2,2] kernel_size=[3,3]"));
  EXPECT_FALSE(work("aten::max_pool2d", "self=f32[1,1,9,9] kernel_size=[3,3] padding=[2,2]"));
  EXPECT_FALSE(work("aten::avg_pool2d", "self=f32[1,1,9,9] kernel_size=[3,3] stride=[0,0]"));
  EXPECT_FALSE(work("aten::max_pool2d", "self=f32[9,9] kernel_size=[3,3]"));
  EXPECT_FALSE(work("aten::adaptive_avg_pool2d", "self=f32[1,2,5,7] output_size=[0,3]"));
  expect_huge(work("aten::max_pool2d", "self=f32[1,1," + kHuge + "," + kHuge + "] kernel_size=[2,2]"));
  expect_huge(
      work("aten::adaptive_avg_pool2d", "self=f32[1,1," + kHuge + "," + kHuge + "] output_size=[" + kHuge + ",3]"));
}

TEST(CallWork, EmbeddingReadsTheRowsItsIndicesSelect) {
  // 8·128 = 1024 i64 indices, each a row of 768 f32 read and written; nothing computed.
  auto w = work("aten::embedding", "weight=f32[50257,768] indices=i64[8,128]");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->family, OpFamily::kEmbedding);
  EXPECT_DOUBLE_EQ(w->flops, 0);
  EXPECT_DOUBLE_EQ(w->bytes, 8.0 * 1024 + 2 * 1024 * 768 * 4.0);
  EXPECT_FALSE(work("aten::embedding", "weight=f32[10,4] indices=f32[3]"));  // indices must be integers
  EXPECT_FALSE(work("aten::embedding", "weight=f32[10,4,2] indices=i64[3]"));
  expect_huge(work("aten::embedding", "weight=f32[10,4] indices=i64[" + kHuge + "," + kHuge + "]"));
}

TEST(CallWork, AGatherOfMoreThanItsSourceReadsTheSourceOnce) {
  // 32768 indices into a table of 1000 rows of 64 f32: the whole table (256 000 bytes) read at
  // least once, not 32768 rows; 32768 rows written; 8 bytes an index.
  auto w = work("aten::embedding", "weight=f32[1000,64] indices=i64[32768]");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->bytes, 8.0 * 32768 + 1000 * 64 * 4.0 + 32768 * 64 * 4.0);
  // Exactly as many indices as rows: either reading is the table.
  EXPECT_DOUBLE_EQ(work("aten::embedding", "weight=bf16[1000,64] indices=i32[1000]")->bytes,
                   4.0 * 1000 + 2 * 1000 * 64 * 2.0);
  // index_select of 40 rows of a [10,20] f32 source: 800 bytes read, 40·20·4 = 3200 written.
  EXPECT_DOUBLE_EQ(work("aten::index_select", "self=f32[10,20] dim=0 index=i64[40]")->bytes, 320 + 800 + 3200);
  // Along dim 1: 7 columns of 10 rows selected (280 bytes), less than the source: as selected.
  EXPECT_DOUBLE_EQ(work("aten::index_select", "self=f32[10,20] dim=1 index=i64[7]")->bytes, 56 + 2 * 280);
  // gather of 4·50 elements from a [4,5] f32 source (80 bytes): the source once, 800 written.
  EXPECT_DOUBLE_EQ(work("aten::gather", "self=f32[4,5] dim=1 index=i64[4,50]")->bytes, 1600 + 80 + 800);
}

TEST(CallWork, CopiesMoveTheirBytesAndViewsMoveNone) {
  // copy_: an 8-element bf16 source broadcast into a [4,8] f32 self: 16 bytes read, 128 written.
  auto w = work("aten::copy_", "self=f32[4,8] src=bf16[8]");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->family, OpFamily::kDataMovement);
  EXPECT_DOUBLE_EQ(w->flops, 0);
  EXPECT_DOUBLE_EQ(w->bytes, 16 + 128);
  EXPECT_FALSE(work("aten::copy_", "self=f32[4,8] src=f32[3]"));
  EXPECT_DOUBLE_EQ(work("aten::clone", "self=f16[10,10]")->bytes, 400);
  EXPECT_DOUBLE_EQ(work("aten::_to_copy", "self=f32[10] dtype=bf16")->bytes, 40 + 20);
  EXPECT_FALSE(work("aten::_to_copy", "self=f32[10] dtype=nonsense"));
  // contiguous copies only what is not laid out so already.
  EXPECT_DOUBLE_EQ(work("aten::contiguous", "self=f32[4,8]")->bytes, 0);
  EXPECT_DOUBLE_EQ(work("aten::contiguous", "self=f32[4,8]:stride[1,4]")->bytes, 2 * 128);
  EXPECT_DOUBLE_EQ(work("aten::contiguous", "self=f32[2,3,4,4] memory_format=channels_last")->bytes, 2 * 384);
  EXPECT_DOUBLE_EQ(work("aten::contiguous", "self=f32[2,3,4,4]:stride[48,1,12,3] memory_format=channels_last")->bytes,
                   0);
  // cat along dim 0: 6 + 12 elements read, 18 written; f16 with bf16 is written as f32; a
  // legacy empty [0] is skipped.
  EXPECT_DOUBLE_EQ(work("aten::cat", "tensors=[f32[2,3],f32[4,3]]")->bytes, 4.0 * (18 + 18));
  EXPECT_DOUBLE_EQ(work("aten::cat", "tensors=[f16[2,3],bf16[2,3]] dim=-1")->bytes, 2.0 * 12 + 4.0 * 12);
  EXPECT_DOUBLE_EQ(work("aten::cat", "tensors=[f32[0],f32[2,3]] dim=1")->bytes, 4.0 * (6 + 6));
  EXPECT_FALSE(work("aten::cat", "tensors=[f32[2,3],f32[2,4]] dim=0"));
  EXPECT_DOUBLE_EQ(work("aten::stack", "tensors=[f32[2,3],f32[2,3]] dim=2")->bytes, 4.0 * (12 + 12));
  EXPECT_FALSE(work("aten::stack", "tensors=[f32[2,3],f32[2,3]] dim=3"));
  // index_select of 4 rows of 20: 4 · 8 index bytes, 80 elements read and written.
  EXPECT_DOUBLE_EQ(work("aten::index_select", "self=f32[10,20] dim=0 index=i64[4]")->bytes, 32 + 2 * 80 * 4.0);
  // gather: one element per index (10·5): 400 index bytes, 50 f32 read and written.
  EXPECT_DOUBLE_EQ(work("aten::gather", "self=f32[10,20] dim=1 index=i64[10,5]")->bytes, 400 + 2 * 50 * 4.0);
  EXPECT_FALSE(work("aten::gather", "self=f32[10,20] dim=1 index=i64[11,5]"));
  // Views: zero, a figure all the same.
  for (const auto& [op, args] : std::vector<std::pair<std::string, std::string>>{
           {"aten::view", "self=f32[4,6] size=[-1,3]"},
           {"aten::reshape", "self=f32[4,6] shape=[24]"},
           {"aten::_unsafe_view", "self=f32[4,6] size=[2,12]"},
           {"aten::transpose", "self=f32[4,6] dim0=0 dim1=-1"},
           {"aten::permute", "self=f32[2,3,4] dims=[2,0,1]"},
           {"aten::t", "self=f32[4,6]"},
           {"aten::expand", "self=f32[1,3] size=[4,-1]"},
           {"aten::unsqueeze", "self=f32[4,6] dim=2"},
           {"aten::squeeze", "self=f32[4,1] dim=1"},
           {"aten::slice", "self=f32[4,6] dim=1 start=1 end=9223372036854775807"},
           {"aten::select", "self=f32[4,6] dim=0 index=-4"},
           {"aten::as_strided", "self=f32[4,6] size=[2,2] stride=[6,1] storage_offset=3"},
           {"aten::detach", "self=f32[4,6]"},
           {"aten::alias", "self=f32[4,6]"}}) {
    w = work(op, args);
    ASSERT_TRUE(w) << op;
    EXPECT_EQ(w->flops, 0) << op;
    EXPECT_EQ(w->bytes, 0) << op;
  }
  // A transposed [4,6] (strides 1, 4) cannot be flattened by a view; reshape copies it.
  EXPECT_FALSE(work("aten::view", "self=f32[4,6]:stride[1,4] size=[24]"));
  EXPECT_DOUBLE_EQ(work("aten::reshape", "self=f32[4,6]:stride[1,4] shape=[24]")->bytes, 2 * 96);
  // ... but splitting a dimension of it is a view.
  EXPECT_DOUBLE_EQ(work("aten::view", "self=f32[4,6]:stride[1,4] size=[2,2,6]")->bytes, 0);
  // Misfits: dims out of range or repeated, sizes that do not hold the elements.
  EXPECT_FALSE(work("aten::transpose", "self=f32[4,6] dim0=0 dim1=2"));
  EXPECT_FALSE(work("aten::permute", "self=f32[4,6] dims=[0,0]"));
  EXPECT_FALSE(work("aten::view", "self=f32[4,6] size=[5,5]"));
  EXPECT_FALSE(work("aten::expand", "self=f32[2,3] size=[4,2]"));
  EXPECT_FALSE(work("aten::select", "self=f32[4,6] dim=0 index=4"));
  EXPECT_FALSE(work("aten::slice", "self=f32[4,6] dim=0 step=0"));
  EXPECT_FALSE(work("aten::t", "self=f32[2,3,4]"));
  // Hostile sizes: an inferred size past int64 is no figure; a copy of 2^124 elements is.
  EXPECT_FALSE(work("aten::view", "self=f32[" + kHuge + "," + kHuge + "] size=[-1]"));
  expect_huge(work("aten::cat", "tensors=[f32[" + kHuge + "," + kHuge + "],f32[1," + kHuge + "]]"));
  expect_huge(work("aten::clone", "self=f32[" + kHuge + "," + kHuge + "]"));
}

TEST(CallWork, MatmulDispatchesAsTorchMatmulDoes) {
  // Batched, broadcast: [9,3,49,32] by [9,3,32,49] (Swin's scores): 27 products of 49×32 by 32×49.
  auto w = work("aten::matmul", "self=f32[9,3,49,32] other=f32[9,3,32,49]");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->family, OpFamily::kMatmul);
  EXPECT_DOUBLE_EQ(w->flops, 2.0 * 27 * 49 * 32 * 49);
  EXPECT_DOUBLE_EQ(w->bytes, 4.0 * (27 * 49 * 32 * 2 + 27 * 49 * 49));
  // A batch against one matrix: the batch broadcasts; [4,10,8] by [8,6] is 4 products of 10×8 by 8×6.
  w = work("aten::matmul", "self=bf16[4,10,8] other=bf16[8,6]");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, 2.0 * 4 * 10 * 8 * 6);
  EXPECT_DOUBLE_EQ(w->bytes, 2.0 * (4 * 10 * 8 + 8 * 6 + 4 * 10 * 6));
  // 1-D operands: a matrix by a vector, and a dot product.
  w = work("aten::matmul", "self=f32[10,8] other=f32[8]");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, 2.0 * 10 * 8);
  w = work("aten::matmul", "self=f32[8] other=f32[8]");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, 2.0 * 8);
  EXPECT_DOUBLE_EQ(w->bytes, 4.0 * (8 + 8 + 1));
  // A vector by a batch of matrices: [8] is a row, squeezed out: 3 products of 1×8 by 8×6.
  w = work("aten::matmul", "self=f32[8] other=f32[3,8,6]");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, 2.0 * 3 * 8 * 6);
  EXPECT_DOUBLE_EQ(w->bytes, 4.0 * (8 + 3 * 8 * 6 + 3 * 6));
  // Batches broadcast through their 1s: [1,3] with [9,1] is 27.
  w = work("aten::matmul", "self=f32[1,3,5,4] other=f32[9,1,4,2]");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, 2.0 * 27 * 5 * 4 * 2);
  // Misfits: inner sizes differ; batches that do not broadcast.
  EXPECT_FALSE(work("aten::matmul", "self=f32[10,8] other=f32[7,6]"));
  EXPECT_FALSE(work("aten::matmul", "self=f32[3,10,8] other=f32[4,8,6]"));
}

TEST(CallWork, ComparesFillsAndNewTensorsWriteTheirOutputs) {
  // eq of f32 [9,49,49] with a number: each element read (4 bytes) and a bool written (1).
  auto w = work("aten::eq", "self=f32[9,49,49] other=0");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->family, OpFamily::kElementwise);
  EXPECT_DOUBLE_EQ(w->flops, 9.0 * 49 * 49);
  EXPECT_DOUBLE_EQ(w->bytes, 9.0 * 49 * 49 * (4 + 1));
  // A hostile shape's figure is huge, never NaN (an infinite count less an infinite one).
  expect_huge(work("aten::eq", "self=f32[" + kHuge + "," + kHuge + "," + kHuge + "," + kHuge + "," + kHuge + "," +
                                   kHuge + "," + kHuge + "," + kHuge + "," + kHuge + "," + kHuge + "," + kHuge + "," +
                                   kHuge + "," + kHuge + "," + kHuge + "," + kHuge + "," + kHuge + "," + kHuge +
                                   "] other=0"));
  // where: a select per output, written in what self and other promote to (bf16 with f32: f32).
  w = work("aten::where", "condition=bool[16,16] self=bf16[16,16] other=f32[16]");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->bytes, 256.0 * 1 + 256.0 * 2 + 16.0 * 4 + 256.0 * 4);
  // all and any: reductions to a bool; sin, __and__: pointwise.
  w = work("aten::all", "self=bool[2,16]");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->family, OpFamily::kReduction);
  EXPECT_DOUBLE_EQ(w->bytes, 32.0 + 1);
  w = work("aten::any", "self=f32[4,8] dim=1");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->bytes, 4.0 * 32 + 4);
  w = work("aten::__and__", "self=bool[] other=bool[1,1,16,16]");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->bytes, 1.0 + 256 + 256);
  EXPECT_TRUE(work("aten::sin", "self=f32[1,16,32]"));
  // masked_fill: self and the bool mask read, self's dtype written.
  w = work("aten::masked_fill", "self=f32[9,49,49] mask=bool[9,49,49] value=-100.0");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->bytes, 9.0 * 49 * 49 * (4 + 1 + 4));
  // hardswish, as every pointwise operator: read and written.
  w = work("aten::hardswish_", "self=bf16[2,16,32,32]");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->bytes, 2.0 * 2 * 2 * 16 * 32 * 32);
  // fill_ writes self (a strided [14,14] window), its 0-dim value read.
  w = work("aten::fill_", "self=f32[14,14]:stride[21,1] value=f32[]");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, 196);
  EXPECT_DOUBLE_EQ(w->bytes, 4.0 * 196 + 4);
  EXPECT_FALSE(work("aten::fill_", "self=f32[14,14] value=f32[14]"));  // PyTorch wants a 0-dim value
  // new_zeros writes [21,21] in self's dtype; empty writes nothing; zeros in its dtype.
  w = work("aten::new_zeros", "self=bf16[9,49,96] size=[21,21] pin_memory=false");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->bytes, 2.0 * 21 * 21);
  w = work("aten::empty", "size=[4,8] dtype=f32 layout=strided device=cpu pin_memory=false");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->flops, 0);
  EXPECT_EQ(w->bytes, 0);
  w = work("aten::zeros", "size=[4,8] dtype=f16");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->bytes, 2.0 * 32);
  EXPECT_FALSE(work("aten::zeros", "size=[4,-8]"));
  // ones and full of a size; the *_like ones of self's shape and dtype, empty_like writing nothing.
  w = work("aten::full", "size=[3,5] fill_value=2");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->bytes, 4.0 * 15);
  w = work("aten::full_like", "self=i64[16,16] fill_value=15 pin_memory=false");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->bytes, 8.0 * 256);
  w = work("aten::new_ones", "self=i64[1,1,16,1] size=[] dtype=bool pin_memory=false");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->bytes, 1);
  w = work("aten::empty_like", "self=f32[16,16]");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->bytes, 0);
  // arange: ⌈(end − start) / step⌉ values, i64 from integers, f32 from a real bound.
  w = work("aten::arange", "end=32 device=cpu pin_memory=false");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->bytes, 8.0 * 32);
  w = work("aten::arange", "start=0 end=1.0 step=0.25");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, 4);
  EXPECT_DOUBLE_EQ(w->bytes, 4.0 * 4);
  EXPECT_FALSE(work("aten::arange", "start=5 end=0 step=1"));  // PyTorch refuses the wrong sign
  EXPECT_FALSE(work("aten::arange", "end=8 step=0"));
}

TEST(CallWork, FlattenSplitDropoutAndToAreViewsOrCopiesAsPyTorchMakesThem) {
  // flatten of a row-major tensor: a view; of a transposed one: a copy (read and write).
  auto w = work("aten::flatten", "self=f32[2,512,1,1] start_dim=1");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->family, OpFamily::kDataMovement);
  EXPECT_EQ(w->bytes, 0);
  w = work("aten::flatten", "self=f32[4,6]:stride[1,4]");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->bytes, 2.0 * 4 * 4 * 6);
  EXPECT_FALSE(work("aten::flatten", "self=f32[4,6] start_dim=1 end_dim=0"));
  // split into views along dim 2; a split size of 0 of a non-empty dimension is refused.
  w = work("aten::split", "self=f32[1,32,192] split_size=64 dim=2");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->bytes, 0);
  EXPECT_FALSE(work("aten::split", "self=f32[1,32,192] split_size=0 dim=2"));
  EXPECT_TRUE(work("aten::split_with_sizes", "self=f32[10,4] split_sizes=[3,7]"));
  EXPECT_FALSE(work("aten::split_with_sizes", "self=f32[10,4] split_sizes=[3,6]"));
  EXPECT_TRUE(work("aten::split", "self=f32[10,4] split_size=[3,7]"));  // split.sizes
  EXPECT_FALSE(work("aten::split", "self=f32[10,4] split_size=[3,6]"));
  w = work("aten::chunk", "self=f32[10,4] chunks=3 dim=1");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->bytes, 0);
  EXPECT_FALSE(work("aten::chunk", "self=f32[10,4] chunks=0"));
  // dropout in eval, or at p = 0: the input itself; in training a mask (1 byte) and the output.
  w = work("aten::dropout", "input=f32[9,3,49,49] p=0.0 train=false");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->bytes, 0);
  w = work("aten::dropout_", "self=f32[2,1024] p=0.2 train=true");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, 2048);
  EXPECT_DOUBLE_EQ(w->bytes, 2048.0 * (4 + 4 + 1));
  EXPECT_FALSE(work("aten::dropout", "input=f32[4] p=1.5 train=true"));
  // to: the same dtype is self (no work); another, a copy; a move off the GPU is not counted.
  w = work("aten::to", "self=f32[1,32,64] dtype=f32 layout=strided device=cuda:0");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->bytes, 0);
  w = work("aten::to", "self=f32[1,32,64] dtype=bf16");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->bytes, 2048.0 * (4 + 2));
  EXPECT_FALSE(work("aten::to", "self=f32[1,32,64] dtype=f32 layout=strided device=cpu"));
  // A memory format self is not in already is a copy into it; one it is in, self itself.
  w = work("aten::to", "self=f32[2,3,4,5] dtype=f32 memory_format=channels_last");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->bytes, 2.0 * 4 * 120);
  w = work("aten::to", "self=f32[2,3,4,5]:stride[60,1,15,3] dtype=f32 memory_format=channels_last");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->bytes, 0);
  EXPECT_FALSE(work("aten::to", "self=f32[2,3,4] dtype=f32 memory_format=channels_last"));
  // to.other: other's dtype; a tensor on another device is a transfer, not counted.
  w = work("aten::to", "self=f32[8] other=bf16[2]");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->bytes, 8.0 * (4 + 2));
  EXPECT_FALSE(work("aten::to", "self=f32[8] other=bf16[2]:cpu"));
  // detach_ and lift_fresh: self itself.
  for (const char* op : {"aten::lift_fresh", "aten::detach_"}) {
    w = work(op, "self=f32[4]");
    ASSERT_TRUE(w) << op;
    EXPECT_EQ(w->bytes, 0) << op;
  }
}

TEST(CallWork, PadRollAndIndexMoveWhatTheyReadAndWrite) {
  // pad [0,0,0,5,0,5] of [1,16,16,96]: the last dimension as it is, 16 → 21 twice.
  auto w = work("aten::pad", "self=f32[1,16,16,96] pad=[0,0,0,5,0,5]");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->family, OpFamily::kDataMovement);
  EXPECT_DOUBLE_EQ(w->bytes, 4.0 * (16 * 16 * 96 + 21 * 21 * 96));
  w = work("aten::pad", "self=f32[8,10] pad=[-2,-2]");  // a negative pad crops: 10 → 6
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->bytes, 4.0 * (80 + 48));
  EXPECT_FALSE(work("aten::pad", "self=f32[8,10] pad=[1,1,1]"));
  EXPECT_FALSE(work("aten::pad", "self=f32[8,10] pad=[-6,-6]"));
  EXPECT_TRUE(work("aten::pad", "self=f32[1,8,10] pad=[1,1] mode=reflect"));
  EXPECT_FALSE(work("aten::pad", "self=f32[1,8,10] pad=[1,1] mode=mirror"));
  // roll: every element read and written.
  w = work("aten::roll", "self=f32[1,21,21,96] shifts=[-3,-3] dims=[1,2]");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->bytes, 2.0 * 4 * 21 * 21 * 96);
  EXPECT_FALSE(work("aten::roll", "self=f32[4,4] shifts=[1,1] dims=[0]"));
  // index: Swin's relative position table [169,3] by 2401 indices: 2401 rows of 3 written, the
  // whole table (less than the rows selected) read once, the indices read.
  w = work("aten::index", "self=f32[169,3] indices=[i64[2401]]");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->bytes, 8.0 * 2401 + 4.0 * 169 * 3 + 4.0 * 2401 * 3);
  // A None keeps its dimension whole; the index tensors broadcast ([4,1] with [5]: 20 picks).
  w = work("aten::index", "self=bf16[6,100,7] indices=[None,i64[4,1],i64[5]]");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->bytes, 8.0 * (4 + 5) + 2.0 * 6 * 20 * 2);
  // Index tensors apart (None between them): the picks go first, the same count of elements.
  w = work("aten::index", "self=bf16[6,100,7] indices=[i64[4],None,i64[4]]");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->bytes, 8.0 * 8 + 2.0 * 4 * 100 * 2);
  EXPECT_FALSE(work("aten::index", "self=f32[6,4] indices=[bool[6]]"));  // as many as the mask's values say
  EXPECT_FALSE(work("aten::index", "self=f32[6,4] indices=[i64[3],i64[2]]"));
}

TEST(CallWork, FusedMultiHeadAttentionCountsItsProjectionsAndItsHeads) {
  // ViT-B/16's: 17 tokens of 768, 12 heads of 64, one tensor as query, key and value.
  const std::string args =
      "query=f32[1,17,768] key=f32[1,17,768]:same[query] value=f32[1,17,768]:same[query] embed_dim=768 num_head=12 "
      "qkv_weight=f32[2304,768] qkv_bias=f32[2304] proj_weight=f32[768,768] proj_bias=f32[768] need_weights=false";
  auto w = work("aten::_native_multi_head_attention", args);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->family, OpFamily::kAttention);
  // In-projection 2·17·768·2304, out-projection 2·17·768·768, 12 heads of 17·17·(4·64 + 5).
  EXPECT_DOUBLE_EQ(w->flops, 2.0 * 17 * 768 * 2304 + 2.0 * 17 * 768 * 768 + 12.0 * 17 * 17 * (4 * 64 + 5));
  // The input read once, the weights and biases, the output written.
  EXPECT_DOUBLE_EQ(w->bytes, 4.0 * (17 * 768 + 2304 * 768 + 2304 + 768 * 768 + 768 + 17 * 768));
  // Three tensors are three reads; with need_weights the averaged scores [1,17,17] are written too.
  auto three = work("aten::_native_multi_head_attention",
                    "query=f32[1,17,768] key=f32[1,17,768] value=f32[1,17,768] embed_dim=768 num_head=12 "
                    "qkv_weight=f32[2304,768] qkv_bias=f32[2304] proj_weight=f32[768,768] proj_bias=f32[768]");
  ASSERT_TRUE(three);
  EXPECT_DOUBLE_EQ(three->bytes, w->bytes + 4.0 * 2 * 17 * 768 + 4.0 * 17 * 17);
  // A value given as the key is read once too.
  auto kv = work("aten::_native_multi_head_attention",
                 "query=f32[1,17,768] key=f32[1,9,768] value=f32[1,9,768]:same[key] embed_dim=768 num_head=12 "
                 "qkv_weight=f32[2304,768] proj_weight=f32[768,768] need_weights=false");
  ASSERT_TRUE(kv);
  EXPECT_DOUBLE_EQ(kv->bytes, 4.0 * (17 * 768 + 9 * 768 + 2304 * 768 + 768 * 768 + 17 * 768));
  // A width whose three times is past int64: no figure, and no overflow on the way.
  EXPECT_FALSE(work("aten::_native_multi_head_attention", "query=f32[1,1," + kHuge + "] key=f32[1,1," + kHuge +
                                                              "] value=f32[1,1," + kHuge + "] embed_dim=" + kHuge +
                                                              " num_head=1 qkv_weight=f32[4,4] proj_weight=f32[4,4]"));
  // Misfits: heads that do not divide the width; a weight of another shape.
  EXPECT_FALSE(work("aten::_native_multi_head_attention",
                    "query=f32[1,17,768] key=f32[1,17,768] value=f32[1,17,768] embed_dim=768 num_head=5 "
                    "qkv_weight=f32[2304,768] proj_weight=f32[768,768]"));
  EXPECT_FALSE(work("aten::_native_multi_head_attention",
                    "query=f32[1,17,768] key=f32[1,17,768] value=f32[1,17,768] embed_dim=768 num_head=12 "
                    "qkv_weight=f32[768,768] proj_weight=f32[768,768]"));
}

TEST(CallWork, ATrainingStepsBackwardOperatorsAreCountedFromTheirForwards) {
  // convolution_backward of a 3×3, 64 → 128 at stride 2 (grad_output [2,128,8,8]), grad_input and
  // grad_weight asked: the forward's product twice, 2 · 2·128·8·8 · 64·9 FLOPs each.
  const std::string conv =
      "grad_output=f32[2,128,8,8] input=f32[2,64,16,16] weight=f32[128,64,3,3] bias_sizes=[0] stride=[2,2] "
      "padding=[1,1] dilation=[1,1] transposed=false output_padding=[0,0] groups=1 ";
  auto w = work("aten::convolution_backward", conv + "output_mask=[true,true,false]");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->family, OpFamily::kConvolution);
  const double product = 2.0 * (2 * 128 * 8 * 8) * 64 * 9;
  EXPECT_DOUBLE_EQ(w->flops, 2 * product);
  // grad_output read; the weight read and grad_input written; the input read and grad_weight written.
  const double g = 4.0 * 2 * 128 * 64, in = 4.0 * 2 * 64 * 256, wt = 4.0 * 128 * 64 * 9;
  EXPECT_DOUBLE_EQ(w->bytes, g + 2 * (in + wt));
  // grad_weight and grad_bias only (a first layer's): one product, a sum, [128] written.
  w = work("aten::convolution_backward", conv + "output_mask=[false,true,true]");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, product + 2.0 * 128 * 64);
  EXPECT_DOUBLE_EQ(w->bytes, g + in + wt + 4.0 * 128);
  EXPECT_FALSE(work("aten::convolution_backward", conv + "output_mask=[true,true]"));
  EXPECT_FALSE(work("aten::convolution_backward",
                    "grad_output=f32[2,128,8,8] input=f32[2,64,16,16] weight=f32[128,64,3,3] transposed=true "
                    "output_mask=[true,true,false]"));
  // Misfits: a grad_output the forward could not have made (stride 1 makes 16 × 16, not 8 × 8);
  // a weight of another rank (read past its end, were it not refused).
  EXPECT_FALSE(work("aten::convolution_backward",
                    "grad_output=f32[2,128,8,8] input=f32[2,64,16,16] weight=f32[128,64,3,3] stride=[1,1] "
                    "padding=[1,1] transposed=false output_mask=[true,true,false]"));
  EXPECT_FALSE(work("aten::convolution_backward",
                    "grad_output=f32[2,128,8,8] input=f32[2,64,16,16] weight=f32[128] transposed=false "
                    "output_mask=[true,true,false]"));

  // native_batch_norm_backward in training: 7 per element; grad_out, input, weight and the saved
  // statistics read; grad_input and the [512] weight and bias gradients written.
  w = work("aten::native_batch_norm_backward",
           "grad_out=f32[2,512,2,2] input=f32[2,512,2,2] weight=f32[512] running_mean=f32[512] running_var=f32[512] "
           "save_mean=f32[512] save_invstd=f32[512] train=true eps=1e-05 output_mask=[true,true,true]");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->family, OpFamily::kNormalization);
  EXPECT_DOUBLE_EQ(w->flops, 7.0 * 4096);
  EXPECT_DOUBLE_EQ(w->bytes, 4.0 * (3 * 4096 + 3 * 512 + 2 * 512));
  // In eval: 2 per element, the running statistics read; only grad_input asked.
  w = work("aten::native_batch_norm_backward",
           "grad_out=f32[2,512,2,2] input=f32[2,512,2,2] weight=f32[512] running_mean=f32[512] running_var=f32[512] "
           "save_mean=None save_invstd=None train=false eps=1e-05 output_mask=[true,false,false]");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, 2.0 * 4096);
  EXPECT_DOUBLE_EQ(w->bytes, 4.0 * (3 * 4096 + 3 * 512));
  EXPECT_FALSE(work("aten::native_batch_norm_backward",  // train has no default
                    "grad_out=f32[2,512,2,2] input=f32[2,512,2,2] output_mask=[true,false,false]"));
  // native_layer_norm_backward over [2,16,64] rows of 64.
  w = work("aten::native_layer_norm_backward",
           "grad_out=f32[2,16,64] input=f32[2,16,64] normalized_shape=[64] mean=f32[2,16,1] rstd=f32[2,16,1] "
           "weight=f32[64] bias=f32[64] output_mask=[true,true,true]");
  ASSERT_TRUE(w);
  // grad_input 7 per element, the weight's gradient 2 more and the bias's 1 (across the rows).
  EXPECT_DOUBLE_EQ(w->flops, 10.0 * 2048);
  EXPECT_DOUBLE_EQ(w->bytes, 4.0 * (3 * 2048 + 64 + 2 * 32 + 2 * 64));
  EXPECT_FALSE(
      work("aten::native_layer_norm_backward",
           "grad_out=f32[2,16,64] input=f32[2,16,64] normalized_shape=[32] mean=f32[2,16,1] rstd=f32[2,16,1]"));

  // _softmax_backward_data: 4 per element, grad and output read, grad_input written.
  w = work("aten::_softmax_backward_data", "grad_output=f32[2,2,16,16] output=f32[2,2,16,16] dim=-1 input_dtype=f32");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->family, OpFamily::kReduction);
  EXPECT_DOUBLE_EQ(w->flops, 4.0 * 1024);
  EXPECT_DOUBLE_EQ(w->bytes, 3.0 * 4 * 1024);
  // max_pool2d_with_indices_backward: grad_output and indices read, grad_input (self's shape) written.
  w = work("aten::max_pool2d_with_indices_backward",
           "grad_output=f32[2,64,16,16] self=f32[2,64,32,32] kernel_size=[3,3] stride=[2,2] padding=[1,1] "
           "dilation=[1,1] ceil_mode=false indices=i64[2,64,16,16]");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->family, OpFamily::kPooling);
  EXPECT_DOUBLE_EQ(w->bytes, (4.0 + 8) * 2 * 64 * 256 + 4.0 * 2 * 64 * 1024);
  // embedding_backward: grad [1,16,64] and its indices read, the [512,64] gradient written.
  w = work("aten::embedding_backward",
           "grad=f32[1,16,64] indices=i64[1,16] num_weights=512 padding_idx=-1 scale_grad_by_freq=false sparse=false");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->family, OpFamily::kEmbedding);
  EXPECT_DOUBLE_EQ(w->bytes, 4.0 * 1024 + 8.0 * 16 + 4.0 * 512 * 64);
  EXPECT_FALSE(work("aten::embedding_backward", "grad=f32[1,16,64] indices=i64[1,8] num_weights=512"));
  EXPECT_FALSE(work("aten::embedding_backward", "grad=f32[1,16,64] indices=i64[1,16] num_weights=512 sparse=true"));
  // The pointwise ones: threshold_backward and AdamW's lerp_, addcmul_, addcdiv_.
  w = work("aten::threshold_backward", "grad_output=f32[2,512,2,2] self=f32[2,512,2,2] threshold=0");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->bytes, 3.0 * 4 * 4096);
  EXPECT_TRUE(work("aten::addcdiv_", "self=f32[64,3] tensor1=f32[64,3] tensor2=f32[64,3] value=-0.0037"));
  // The multi-tensor (foreach) kernels: each position of the lists as one pointwise call.
  w = work("aten::_foreach_addcmul_",
           "self=[f32[4,8],f32[4]] tensor1=[f32[4,8],f32[4]] tensor2=[f32[4,8],f32[4]] value=0.001");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->flops, 32 + 4);
  EXPECT_DOUBLE_EQ(w->bytes, 4.0 * 4 * (32 + 4));
  w = work("aten::_foreach_add_", "self=[f32[],f32[]] other=f32[] alpha=1.0");  // one tensor for all
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->bytes, 2 * 4.0 * 3);
  w = work("aten::_foreach_div_", "self=[f32[4,8],f32[4]] scalars=[0.5,0.5]");  // numbers are no tensors
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->bytes, 2 * 4.0 * 36);
  EXPECT_FALSE(work("aten::_foreach_lerp_", "self=[f32[4,8],f32[4]] tensors1=[f32[4,8]] weight=0.1"));
}

TEST(CallWork, EveryCountedOperatorIsListedOnceWithItsFamily) {
  const auto ops = counted_operators();
  const std::set<std::string_view> distinct(ops.begin(), ops.end());
  EXPECT_EQ(distinct.size(), ops.size());
  for (std::string_view op : {"aten::conv2d", "aten::scaled_dot_product_attention", "aten::layer_norm", "aten::softmax",
                              "aten::max_pool2d", "aten::embedding", "aten::cat", "aten::view"})
    EXPECT_TRUE(distinct.count(op)) << op;
  for (std::string_view op : ops) {
    const auto family = family_of(op);
    ASSERT_TRUE(family) << op;
    EXPECT_NE(family_name(*family), "other") << op;
  }
  EXPECT_FALSE(family_of("aten::topk"));
  EXPECT_EQ(family_of("aten::rms_norm"), OpFamily::kNormalization);
  const std::vector<std::pair<OpFamily, std::string_view>> names = {
      {OpFamily::kAttention, "attention"}, {OpFamily::kNormalization, "normalization"},
      {OpFamily::kReduction, "reduction"}, {OpFamily::kPooling, "pooling"},
      {OpFamily::kEmbedding, "embedding"}, {OpFamily::kDataMovement, "data_movement"}};
  for (const auto& [family, name] : names) EXPECT_EQ(family_name(family), name);
}

}  // namespace
}  // namespace opcost
