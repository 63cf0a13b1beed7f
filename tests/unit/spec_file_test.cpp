#include <gtest/gtest.h>

#include "core/spec/spec_file.h"

using namespace opcost;

TEST(SpecFile, ReadsYamlEntriesInBothForms) {
  const auto calls = parse_spec_text(R"(
ops:
  - op: aten::conv2d
    args:
      input: f32[32,64,56,56]
      weight: "f32[64,64,3,3]"
      padding: [1, 1]
      bias: null
  - "aten::gelu self=f32[8,768] approximate=tanh"
  - op: aten::layer_norm
    args: {input: "f32[8,768]", normalized_shape: [768], eps: 1e-5}
)",
                                     "t.yaml");
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].op, "aten::conv2d");
  EXPECT_EQ(format_args(calls[0].args), "input=f32[32,64,56,56] weight=f32[64,64,3,3] padding=[1,1] bias=None");
  EXPECT_EQ(format_args(calls[1].args), "self=f32[8,768] approximate=tanh");
  EXPECT_EQ(calls[2].args[2].name, "eps");
  EXPECT_DOUBLE_EQ(std::get<double>(calls[2].args[2].value.v), 1e-5);
  EXPECT_NE(calls[1].origin.find("t.yaml:"), std::string::npos);
}

TEST(SpecFile, ReadsJson) {
  const auto calls = parse_spec_text(
      R"({"ops": [{"op": "aten::addmm.default", "args": {"self": "bf16[3072]", "mat1": "bf16[1024,768]",
         "mat2": "bf16[768,3072]", "beta": 1, "alpha": 1.0}}]})",
      "t.json");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].overload, "default");
  EXPECT_EQ(format_args(calls[0].args), "self=bf16[3072] mat1=bf16[1024,768] mat2=bf16[768,3072] beta=1 alpha=1.0");
}

TEST(SpecFile, TopLevelListIsTheOpsList) {
  EXPECT_EQ(parse_spec_text("- aten::relu self=f32[4]\n- aten::relu self=f32[8]\n", "l.yaml").size(), 2u);
}

static std::string error_of(const std::string& text) {
  try {
    parse_spec_text(text, "bad.yaml");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(SpecFile, ErrorsNameFileLineAndFix) {
  EXPECT_NE(error_of("ops: [\n  {op: aten::relu\n").find("bad.yaml:"), std::string::npos);
  EXPECT_NE(error_of("ops: [\n  {op: aten::relu\n").find("malformed"), std::string::npos);
  const auto e = error_of("ops:\n  - op: aten::relu\n    args:\n      self: f32[4,x]\n");
  EXPECT_NE(e.find("bad.yaml:4"), std::string::npos) << e;
  EXPECT_NE(e.find("'self'"), std::string::npos) << e;
  EXPECT_NE(error_of("ops:\n  - args: {}\n").find("missing 'op'"), std::string::npos);
  EXPECT_NE(error_of("ops:\n  - op: aten::relu\n    argz: {}\n").find("unknown key 'argz'"), std::string::npos);
  EXPECT_NE(error_of("foo: 1\n").find("no 'ops' list"), std::string::npos);
  EXPECT_NE(error_of("ops: []\n").find("lists no operators"), std::string::npos);
  EXPECT_NE(error_of("ops:\n  - op: aten::relu\n    args: {self: {a: 1}}\n").find("mapping"), std::string::npos);
}

TEST(SpecFile, MissingFileIsAClearError) {
  try {
    load_spec_file("/nonexistent/spec.yaml");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/spec.yaml: cannot open"), std::string::npos);
  }
}

namespace opcost {
namespace {

TEST(SpecFile, ReadsAnInventoryDocument) {
  const std::string doc = R"({"model": "mnist-cnn", "autocast": "bf16", "ops": [
    {"op": "aten::linear", "overload": "", "args": "input=f32[2,800] weight=f32[500,800]",
     "signature": "aten::linear input=f32[2,800] weight=f32[500,800]", "count": 1, "layers": ["fc1"],
     "nested": {"aten::addmm": 1}, "phase": "forward"},
    {"signature": "aten::add.Tensor self=f32[2] other=f32[2]", "count": 3}]})";
  auto calls = parse_spec_text(doc, "inv.json");
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].op, "aten::linear");
  EXPECT_EQ(format_args(calls[0].args), "input=f32[2,800] weight=f32[500,800]");
  EXPECT_EQ(calls[0].autocast, "bf16");
  EXPECT_EQ(calls[1].overload, "Tensor");
  EXPECT_THROW(parse_spec_text(R"({"ops": [{"signature": "aten::add self=f32[2"}]})", "bad.json"),
               std::invalid_argument);
}

}  // namespace
}  // namespace opcost
