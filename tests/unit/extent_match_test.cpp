// Matching a stored row of the same call at another size (the anchor an estimate scales from):
// which arguments may differ, and how.
#include "core/predict/extent_match.h"

#include <gtest/gtest.h>

#include <string>

#include "core/spec/spec_file.h"

namespace opcost {
namespace {

std::optional<ExtentPair> pair_of(const std::string& call, const std::string& row) {
  return extent_pair(parse_call_line(call, "test").args, parse_call_line(row, "test").args);
}

TEST(ExtentMatch, ABatchThatDiffersGivesThePair) {
  const auto p = pair_of("aten::conv2d input=bf16[128,3,224,224] weight=bf16[64,3,7,7] stride=[2,2] padding=[3,3]",
                         "aten::conv2d input=bf16[64,3,224,224] weight=bf16[64,3,7,7] stride=[2,2] padding=[3,3]");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->call, 128);
  EXPECT_EQ(p->row, 64);
  // Every tensor that differs, by the same pair: an add's two inputs.
  const auto add = pair_of("aten::add_.Tensor self=f32[8,256] other=f32[8,256]",
                           "aten::add_.Tensor self=f32[2,256] other=f32[2,256]");
  ASSERT_TRUE(add.has_value());
  EXPECT_EQ(add->call, 8);
  EXPECT_EQ(add->row, 2);
  // A list's tensors (a cat's), element by element; a 0-dimensional tensor has nothing to differ.
  const auto cat =
      pair_of("aten::cat tensors=[f32[4,8],f32[4,8]] dim=1", "aten::cat tensors=[f32[2,8],f32[2,8]] dim=1");
  ASSERT_TRUE(cat.has_value());
  EXPECT_EQ(cat->row, 2);
  EXPECT_TRUE(pair_of("aten::mul.Tensor self=f32[4,8] other=f32[]", "aten::mul.Tensor self=f32[2,8] other=f32[]"));
}

TEST(ExtentMatch, ASequenceLengthThatDiffersGivesThePair) {
  // GPT-2 at 2048 tokens against 1024: a linear layer's rows, attention's queries, keys and values.
  const auto linear = pair_of("aten::linear input=bf16[2,2048,768] weight=bf16[768,768]",
                              "aten::linear input=bf16[2,1024,768] weight=bf16[768,768]");
  ASSERT_TRUE(linear.has_value());
  EXPECT_EQ(linear->call, 2048);
  EXPECT_EQ(linear->row, 1024);
  EXPECT_TRUE(
      pair_of("aten::scaled_dot_product_attention query=bf16[2,12,2048,64] key=bf16[2,12,2048,64] "
              "value=bf16[2,12,2048,64] is_causal=True",
              "aten::scaled_dot_product_attention query=bf16[2,12,1024,64] key=bf16[2,12,1024,64] "
              "value=bf16[2,12,1024,64] is_causal=True"));
  // addmm's first tensor is its bias: the input is the first of rank 2 (HF GPT-2's Conv1D).
  const auto addmm = pair_of("aten::addmm self=bf16[2304] mat1=bf16[4096,768] mat2=bf16[768,2304]",
                             "aten::addmm self=bf16[2304] mat1=bf16[2048,768] mat2=bf16[768,2304]");
  ASSERT_TRUE(addmm.has_value());
  EXPECT_EQ(addmm->call, 4096);
}

TEST(ExtentMatch, AnOuterStrideMayDifferAnInnerOneMayNot) {
  // A transposed view of [B,S,H,D]: S differs; the batch's stride spans it.
  EXPECT_TRUE(pair_of("aten::transpose.int self=f32[1,2048,12,64]:stride[4718592,2304,64,1] dim0=1 dim1=2",
                      "aten::transpose.int self=f32[1,1024,12,64]:stride[2359296,2304,64,1] dim0=1 dim1=2"));
  // Column-major: the batch's stride is the inner one, and the other dimension's spans it.
  EXPECT_TRUE(pair_of("aten::relu self=f32[4,12]:stride[1,4]", "aten::relu self=f32[2,12]:stride[1,2]"));
  // A stride inside the differing dimension, or its own, is another layout.
  EXPECT_FALSE(pair_of("aten::relu self=f32[4,12]:stride[24,2]", "aten::relu self=f32[2,12]:stride[12,1]"));
  // An outer stride out of proportion with the extent: a batch-expanded tensor against a slice
  // of a larger cache; a sequence-first transpose against half of a wider tensor.
  EXPECT_FALSE(
      pair_of("aten::relu self=f32[4,128,64]:stride[0,64,1]", "aten::relu self=f32[4,256,64]:stride[32768,64,1]"));
  EXPECT_FALSE(pair_of("aten::relu self=f32[8,512,1024]:stride[1024,8192,1]",
                       "aten::relu self=f32[8,512,2048]:stride[2097152,4096,1]"));
  // A tensor recorded without strides is contiguous: at batch 1 a transpose is, at 64 it is not.
  EXPECT_TRUE(pair_of("aten::relu self=f32[64,12,64]:stride[768,64,1]", "aten::relu self=f32[1,12,64]"));
  // An [H, B, D] buffer seen as [B, H, D]: H's stride spans the batch, in proportion.
  EXPECT_TRUE(pair_of("aten::relu self=f32[1,12,64]:stride[64,64,1]", "aten::relu self=f32[2,12,64]:stride[64,128,1]"));
  EXPECT_FALSE(
      pair_of("aten::relu self=f32[4,12,64]:stride[768,1,12]", "aten::relu self=f32[2,12,64]:stride[768,64,1]"));
  // Contiguous strides written out are the same as none.
  EXPECT_TRUE(pair_of("aten::relu self=f32[4,12]:stride[12,1]", "aten::relu self=f32[2,12]"));
}

TEST(ExtentMatch, AnythingElseThatDiffersIsNoMatch) {
  // Two extents of one tensor; a dtype; a scalar; a list's length; data marks.
  EXPECT_FALSE(pair_of("aten::linear input=f32[4,2048,768] weight=f32[768,768]",
                       "aten::linear input=f32[2,1024,768] weight=f32[768,768]"));
  EXPECT_FALSE(pair_of("aten::relu self=bf16[4,8]", "aten::relu self=f32[2,8]"));
  EXPECT_FALSE(pair_of("aten::softmax.int self=f32[4,8] dim=1", "aten::softmax.int self=f32[2,8] dim=0"));
  EXPECT_FALSE(pair_of("aten::cat tensors=[f32[4,8],f32[4,8]] dim=1", "aten::cat tensors=[f32[2,8]] dim=1"));
  EXPECT_FALSE(pair_of("aten::relu self=f32[4,8]:zeros[0.5]", "aten::relu self=f32[2,8]"));
  // Two tensors differing by two pairs: not one size.
  EXPECT_FALSE(pair_of("aten::conv2d input=f32[8,16,8,8] weight=f32[32,16,3,3]",
                       "aten::conv2d input=f32[4,16,8,8] weight=f32[64,16,3,3]"));
  // Only a weight differs (a layer's width), the input the same: no size of the input. Also
  // where the weight's extents happen to equal the input's batch.
  EXPECT_FALSE(pair_of("aten::linear input=f32[4,100] weight=f32[50,100] bias=f32[50]",
                       "aten::linear input=f32[4,100] weight=f32[100,100] bias=f32[100]"));
  EXPECT_FALSE(pair_of("aten::linear input=f32[50,100] weight=f32[50,100] bias=f32[50]",
                       "aten::linear input=f32[50,100] weight=f32[100,100] bias=f32[100]"));
  EXPECT_FALSE(pair_of("aten::conv2d input=bf16[64,64,56,56] weight=bf16[64,64,1,1]",
                       "aten::conv2d input=bf16[64,64,56,56] weight=bf16[256,64,1,1]"));
  // Ranks that differ; arguments named or placed otherwise; the very same call.
  EXPECT_FALSE(pair_of("aten::relu self=f32[4,8]", "aten::relu self=f32[4,8,1]"));
  EXPECT_FALSE(pair_of("aten::add.Tensor self=f32[4] other=f32[4]", "aten::add.Tensor other=f32[2] self=f32[2]"));
  EXPECT_FALSE(pair_of("aten::relu self=f32[4,8]", "aten::relu self=f32[4,8]"));
}

}  // namespace
}  // namespace opcost
