#include <gtest/gtest.h>

#include "core/spec/arg_value.h"
#include "core/spec/op_call.h"
#include "core/spec/spec_file.h"

using namespace opcost;

TEST(ArgValue, ParsesTensors) {
  auto v = parse_value("f32[32,64,56,56]");
  const auto& t = std::get<TensorSpec>(v.v);
  EXPECT_EQ(t.dtype, "f32");
  EXPECT_EQ(t.shape, (std::vector<int64_t>{32, 64, 56, 56}));
  EXPECT_FALSE(t.strides);
  EXPECT_EQ(std::get<TensorSpec>(parse_value("bfloat16[3]").v).dtype, "bf16");
  EXPECT_EQ(std::get<TensorSpec>(parse_value("f32[]").v).shape.size(), 0u);
}

TEST(ArgValue, ParsesTensorModifiers) {
  auto t = std::get<TensorSpec>(parse_value("f32[4,8]:stride[1,4]:cuda:1").v);
  EXPECT_EQ(*t.strides, (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(*t.device, "cuda:1");
  auto r = std::get<TensorSpec>(parse_value("i64[8,128]:range[0,50257]").v);
  EXPECT_EQ(r.range->first, 0);
  EXPECT_EQ(r.range->second, 50257);
}

TEST(ArgValue, ParsesScalarsAndLists) {
  EXPECT_TRUE(parse_value("None").is_none());
  EXPECT_EQ(std::get<int64_t>(parse_value("-3").v), -3);
  EXPECT_DOUBLE_EQ(std::get<double>(parse_value("1e-05").v), 1e-5);
  EXPECT_EQ(std::get<bool>(parse_value("false").v), false);
  EXPECT_EQ(std::get<ArgValue::Word>(parse_value("tanh").v).text, "tanh");
  auto l = std::get<ArgList>(parse_value("[1, 2]").v);
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(std::get<int64_t>(l[1].v), 2);
  auto ts = std::get<ArgList>(parse_value("[f32[2,3],f32[2,3]]").v);
  EXPECT_EQ(std::get<TensorSpec>(ts[0].v).shape, (std::vector<int64_t>{2, 3}));
}

TEST(ArgValue, FormatRoundTrips) {
  for (const char* s : {"f32[32,64,56,56]", "f32[4,8]:stride[1,4]", "i64[8]:range[0.0,10.0]", "[1,1]", "None", "true",
                        "1e-05", "0.5", "-2", "tanh", "[f32[2],bf16[3]:cpu]", "[]", "f32[]"}) {
    const std::string once = format_value(parse_value(s));
    EXPECT_EQ(format_value(parse_value(once)), once) << s;
  }
  EXPECT_EQ(format_value(parse_value("2.0")), "2.0");  // floats stay floats
  EXPECT_EQ(format_value(parse_value("float[2]")), "f32[2]");
}

TEST(ArgValue, ErrorsNameThePlace) {
  try {
    parse_value("f33[2,3]");
    FAIL();
  } catch (const ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown dtype 'f33'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_value("f32[2,x]"), ParseError);
  EXPECT_THROW(parse_value("f32[2,3"), ParseError);
  EXPECT_THROW(parse_value("f32[2]:stride[1,1]"), ParseError);  // rank mismatch
  EXPECT_THROW(parse_value("f32[2]:range[5,1]"), ParseError);
  EXPECT_THROW(parse_value("f32[2]:bogus"), ParseError);
  EXPECT_THROW(parse_value("[1,2"), ParseError);
  EXPECT_THROW(parse_value("12abc"), ParseError);
  try {
    parse_value("f32[-1]");
    FAIL();
  } catch (const ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("negative"), std::string::npos);
  }
}

TEST(OpCall, SplitsNamesAndParsesTokens) {
  EXPECT_EQ(split_op_name("aten::add.Tensor"), (std::pair<std::string, std::string>{"aten::add", "Tensor"}));
  EXPECT_EQ(split_op_name("relu"), (std::pair<std::string, std::string>{"aten::relu", ""}));
  auto c = parse_call("aten::conv2d", {"input=f32[1,3,8,8]", "weight=f32[4,3,3,3]", "padding=[1,1]"});
  ASSERT_EQ(c.args.size(), 3u);
  EXPECT_EQ(c.args[2].name, "padding");
  EXPECT_EQ(format_args(c.args), "input=f32[1,3,8,8] weight=f32[4,3,3,3] padding=[1,1]");
  auto p = parse_call("aten::relu", {"f32[4]"});
  EXPECT_TRUE(p.args[0].name.empty());
  try {
    parse_call("aten::conv2d", {"weight=f32[4,3"});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("argument 'weight'"), std::string::npos) << e.what();
  }
}

TEST(OpCall, HashIsStableAndDiscriminates) {
  EXPECT_EQ(stable_hash("abc"), stable_hash("abc"));
  EXPECT_NE(stable_hash("abc"), stable_hash("abd"));
  EXPECT_EQ(stable_hash("").size(), 16u);
  EXPECT_EQ(stable_hash(""), "cbf29ce484222325");  // FNV-1a offset basis
}

TEST(SplitCallLine, KeepsBracketsTogether) {
  auto t = split_call_line("aten::cat tensors=[f32[2, 3], f32[2, 3]]  dim=0");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[1], "tensors=[f32[2, 3], f32[2, 3]]");
}
