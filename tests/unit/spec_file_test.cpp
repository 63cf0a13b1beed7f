#include <gtest/gtest.h>

#include <fmt/format.h>

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
                                     "t.yaml")
                         .calls;
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].op, "aten::conv2d");
  EXPECT_EQ(format_args(calls[0].args), "input=f32[32,64,56,56] weight=f32[64,64,3,3] padding=[1,1] bias=None");
  EXPECT_EQ(format_args(calls[1].args), "self=f32[8,768] approximate=tanh");
  EXPECT_EQ(calls[2].args[2].name, "eps");
  EXPECT_DOUBLE_EQ(std::get<double>(calls[2].args[2].value.v), 1e-5);
  EXPECT_NE(calls[1].origin.find("t.yaml:"), std::string::npos);
}

TEST(SpecFile, ReadsJson) {
  const auto calls =
      parse_spec_text(
          R"({"ops": [{"op": "aten::addmm.default", "args": {"self": "bf16[3072]", "mat1": "bf16[1024,768]",
         "mat2": "bf16[768,3072]", "beta": 1, "alpha": 1.0}}]})",
          "t.json")
          .calls;
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].overload, "default");
  EXPECT_EQ(format_args(calls[0].args), "self=bf16[3072] mat1=bf16[1024,768] mat2=bf16[768,3072] beta=1 alpha=1.0");
}

TEST(SpecFile, TopLevelListIsTheOpsList) {
  EXPECT_EQ(parse_spec_text("- aten::relu self=f32[4]\n- aten::relu self=f32[8]\n", "l.yaml").calls.size(), 2u);
}

// The first error the file gives: for the whole file (thrown) or for its first bad entry.
static std::string error_of(const std::string& text) {
  try {
    const auto entries = parse_spec_text(text, "bad.yaml");
    return entries.errors.empty() ? "" : entries.errors.front();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
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

TEST(SpecFile, SaysWhatIsWrongWithTheShapeOfTheFile) {
  // An empty file is empty, not a list problem; a list as 'op' is not a missing 'op'.
  EXPECT_NE(error_of("").find("the spec file is empty"), std::string::npos) << error_of("");
  EXPECT_NE(error_of("ops:\n").find("lists no operators"), std::string::npos) << error_of("ops:\n");
  const auto list_op = error_of("ops:\n  - op: [aten::relu]\n");
  EXPECT_NE(list_op.find("'op' must be one operator name"), std::string::npos) << list_op;
  EXPECT_EQ(list_op.find("missing"), std::string::npos) << list_op;
  EXPECT_NE(error_of("ops: {a: 1}\n").find("not a mapping"), std::string::npos);
}

TEST(SpecFile, EveryBadEntryIsReportedAndTheGoodOnesKept) {
  // A parse error in one entry no longer hides the others: all are reported, with their lines.
  const auto entries = parse_spec_text(
      "ops:\n"
      "  - aten::relu self=f32[4]\n"
      "  - aten::relu self=f32[4,\n"
      "  - op: aten::gelu\n"
      "    args: {self: \"q32[2]\"}\n"
      "  - aten::tanh self=f32[8]\n"
      "  - args: {}\n",
      "s.yaml");
  ASSERT_EQ(entries.calls.size(), 2u);
  EXPECT_EQ(entries.calls[0].op, "aten::relu");
  EXPECT_EQ(entries.calls[1].op, "aten::tanh");
  ASSERT_EQ(entries.errors.size(), 3u);
  EXPECT_NE(entries.errors[0].find("s.yaml:3 (ops[1])"), std::string::npos) << entries.errors[0];
  EXPECT_NE(entries.errors[1].find("unknown dtype 'q32'"), std::string::npos) << entries.errors[1];
  EXPECT_NE(entries.errors[2].find("(ops[4])"), std::string::npos) << entries.errors[2];
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
     "nested": {"aten::addmm": 1}, "phase": "forward", "cold_args": ["weight", "bias"]},
    {"signature": "aten::add.Tensor self=f32[2] other=f32[2]", "count": 3, "cold_args": []}]})";
  auto calls = parse_spec_text(doc, "inv.json").calls;
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].op, "aten::linear");
  EXPECT_EQ(format_args(calls[0].args), "input=f32[2,800] weight=f32[500,800]");
  EXPECT_EQ(calls[0].autocast, "bf16");
  EXPECT_EQ(calls[1].overload, "Tensor");
  // The inputs the model read from memory are rotated when measured; none: as the command says.
  EXPECT_EQ(calls[0].cache_mode, "cold:weight,bias");
  EXPECT_EQ(calls[1].cache_mode, "");
  EXPECT_EQ(parse_spec_text(R"({"ops": [{"signature": "aten::add self=f32[2"}]})", "bad.json").errors.size(), 1u);
}

}  // namespace
}  // namespace opcost

// Nesting from a spec file: YAML's own lists and the argument language inside a string. Each
// is refused with the file and a message, never a stack overflow.
TEST(SpecFile, DeepNestingIsRefusedWithTheEntryNamed) {
  const std::size_t levels = 100000;
  const std::string deep = std::string(levels, '[') + "1" + std::string(levels, ']');
  // A string in the argument language, 10^5 levels deep.
  const auto in_string = error_of("ops:\n  - \"aten::cat tensors=" + deep + "\"\n");
  EXPECT_NE(in_string.find("bad.yaml:2"), std::string::npos) << in_string.substr(0, 300);
  EXPECT_NE(in_string.find("lists nest deeper than 32 levels"), std::string::npos) << in_string.substr(0, 300);
  EXPECT_LT(in_string.size(), 600u);
  // YAML's flow lists, 10^5 levels deep: yaml-cpp's own depth limit refuses the file.
  const auto in_yaml = error_of("ops:\n  - op: aten::cat\n    args: {tensors: " + deep + "}\n");
  EXPECT_NE(in_yaml.find("bad.yaml:"), std::string::npos) << in_yaml.substr(0, 300);
  EXPECT_LT(in_yaml.size(), 600u);
  // YAML lists within yaml-cpp's limit but past the argument language's.
  const std::string forty = std::string(40, '[') + "1" + std::string(40, ']');
  const auto in_yaml_40 = error_of("ops:\n  - op: aten::cat\n    args: {tensors: " + forty + "}\n");
  EXPECT_NE(in_yaml_40.find("argument 'tensors'"), std::string::npos) << in_yaml_40;
  EXPECT_NE(in_yaml_40.find("deeper than 32"), std::string::npos) << in_yaml_40;
}

// YAML aliases multiply a list tenfold per line: a few lines must not become 10^9 values.
TEST(SpecFile, AliasBombsAreRefused) {
  std::string yaml = "a0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n";
  for (int i = 1; i <= 8; ++i)
    yaml +=
        fmt::format("a{0}: &a{0} [*a{1}, *a{1}, *a{1}, *a{1}, *a{1}, *a{1}, *a{1}, *a{1}, *a{1}, *a{1}]\n", i, i - 1);
  yaml += "ops:\n  - op: aten::cat\n    args: {tensors: *a8}\n";
  const auto what = error_of(yaml);
  EXPECT_NE(what.find("more than 100000 values in one argument"), std::string::npos) << what;
}

// yaml-cpp's own message can hold the input's character ("unknown escape character: " and a
// line break: fuzz_spec_file), and a key, a name or the file's path a newline: every message
// is one line, cut.
TEST(SpecFile, MessagesAreOneLineWhateverYamlOrTheFileSays) {
  auto one_line = [](const std::string& what, const std::string& expected) {
    EXPECT_NE(what.find(expected), std::string::npos) << what.substr(0, 400);
    EXPECT_EQ(what.find_first_of("\n\r"), std::string::npos) << what.substr(0, 400);
    EXPECT_LT(what.size(), 600u) << what.substr(0, 400);
  };
  one_line(error_of("ops: [\"aten::relu \\\r\"]\n"), "malformed YAML/JSON: unknown escape character: \\r");
  one_line(error_of("ops:\n  - op: aten::relu\n    \"ar\\ngz\": {}\n"), "unknown key 'ar\\ngz'");
  // (An implicit YAML key is at most 1024 characters; an explicit one, "? key", has no bound.)
  one_line(error_of("ops:\n  - op: aten::relu\n    ? " + std::string(16000, 'k') + "\n    : {}\n"), "unknown key 'kkk");
  one_line(error_of("ops:\n  - op: aten::relu\n    args: {\"se\\nlf\": \"f32[x]\"}\n"), "argument 'se\\nlf'");
  one_line(error_of("ops:\n  - op: \"aten::f32[64,3:\\n3\\n]\"\n    args: [\"f32[x]\"]\n"),
           "bad.yaml:2 (ops[0]): 'aten::f32[64,3:\\n3\\n]' is not an operator name");
  one_line(error_of("ops:\n  - \"aten::r" + std::string(16000, 'e') + "lu f32[x]\"\n"), "is not an operator name");
  try {
    parse_spec_text("ops: []\n", "dir\nwith a newline/spec.yaml");
    FAIL();
  } catch (const std::invalid_argument& e) {
    one_line(e.what(), "dir\\nwith a newline/spec.yaml: the spec file lists no operators");
  }
}
