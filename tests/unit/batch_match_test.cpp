// Matching a stored row of the same call at another batch size (the anchor an estimate scales
// from): which arguments may differ, and how.
#include "core/predict/batch_match.h"

#include <gtest/gtest.h>

#include <string>

#include "core/spec/spec_file.h"

namespace opcost {
namespace {

std::optional<BatchPair> pair_of(const std::string& call, const std::string& row) {
  return batch_pair(parse_call_line(call, "test").args, parse_call_line(row, "test").args);
}

TEST(BatchMatch, ALeadingExtentThatDiffersGivesThePair) {
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
  // A list's tensors (a cat's), element by element; a 0-dimensional tensor needs no batch.
  const auto cat =
      pair_of("aten::cat tensors=[f32[4,8],f32[4,8]] dim=1", "aten::cat tensors=[f32[2,8],f32[2,8]] dim=1");
  ASSERT_TRUE(cat.has_value());
  EXPECT_EQ(cat->row, 2);
  EXPECT_TRUE(pair_of("aten::mul.Tensor self=f32[4,8] other=f32[]", "aten::mul.Tensor self=f32[2,8] other=f32[]"));
}

TEST(BatchMatch, AStrideOfTheLeadingDimensionMayDifferNoOtherMay) {
  EXPECT_TRUE(pair_of("aten::transpose.int self=f32[4,12,64]:stride[9000,64,1] dim0=1 dim1=2",
                      "aten::transpose.int self=f32[2,12,64]:stride[768,64,1] dim0=1 dim1=2"));
  EXPECT_FALSE(pair_of("aten::transpose.int self=f32[4,12,64]:stride[768,1,12] dim0=1 dim1=2",
                       "aten::transpose.int self=f32[2,12,64]:stride[768,64,1] dim0=1 dim1=2"));
  EXPECT_FALSE(pair_of("aten::relu self=f32[4,12]:stride[12,1]", "aten::relu self=f32[2,12]"));
}

TEST(BatchMatch, AnythingElseThatDiffersIsNoMatch) {
  // Another extent than the leading one (a sequence length), a dtype, a scalar, a list's length.
  EXPECT_FALSE(pair_of("aten::linear input=f32[2,2048,768] weight=f32[768,768]",
                       "aten::linear input=f32[2,1024,768] weight=f32[768,768]"));
  EXPECT_FALSE(pair_of("aten::relu self=bf16[4,8]", "aten::relu self=f32[2,8]"));
  EXPECT_FALSE(pair_of("aten::softmax.int self=f32[4,8] dim=1", "aten::softmax.int self=f32[2,8] dim=0"));
  EXPECT_FALSE(pair_of("aten::cat tensors=[f32[4,8],f32[4,8]] dim=1", "aten::cat tensors=[f32[2,8]] dim=1"));
  EXPECT_FALSE(pair_of("aten::relu self=f32[4,8]:zeros[0.5]", "aten::relu self=f32[2,8]"));
  // Two tensors differing by two pairs: not one batch (a weight's leading extent is its outputs).
  EXPECT_FALSE(pair_of("aten::conv2d input=f32[8,16,8,8] weight=f32[32,16,3,3]",
                       "aten::conv2d input=f32[4,16,8,8] weight=f32[64,16,3,3]"));
  // Only a weight's leading extent (a layer's width), the input the same: no batch.
  EXPECT_FALSE(pair_of("aten::linear input=f32[4,100] weight=f32[50,100] bias=f32[50]",
                       "aten::linear input=f32[4,100] weight=f32[100,100] bias=f32[100]"));
  // Ranks that differ; arguments named or placed otherwise; the very same call.
  EXPECT_FALSE(pair_of("aten::relu self=f32[4,8]", "aten::relu self=f32[4,8,1]"));
  EXPECT_FALSE(pair_of("aten::add.Tensor self=f32[4] other=f32[4]", "aten::add.Tensor other=f32[2] self=f32[2]"));
  EXPECT_FALSE(pair_of("aten::relu self=f32[4,8]", "aten::relu self=f32[4,8]"));
}

}  // namespace
}  // namespace opcost
