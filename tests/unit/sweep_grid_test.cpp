#include <gtest/gtest.h>

#include "core/sweep/expression.h"
#include "core/sweep/grid.h"
#include "core/sweep/model_list.h"

using namespace opcost;

namespace {

std::vector<std::string> lines(const Grid& g) {
  std::vector<std::string> out;
  for (const auto& i : g.items) out.push_back(i.call_line);
  return out;
}

TEST(SweepExpression, PythonsArithmeticAndLogic) {
  const ExprScope s = {{"k", int64_t(7)}, {"hw", int64_t(14)}, {"stride", int64_t(2)}, {"dtype", std::string("bf16")}};
  EXPECT_EQ(std::get<int64_t>(evaluate("k // 2", s)), 3);
  EXPECT_EQ(std::get<int64_t>(evaluate("-k // 2", s)), -4);  // floors, as Python's
  EXPECT_EQ(std::get<int64_t>(evaluate("-7 % 3", s)), 2);
  EXPECT_DOUBLE_EQ(std::get<double>(evaluate("k / 2", s)), 3.5);
  EXPECT_EQ(std::get<int64_t>(evaluate("2 ** 3 ** 2", s)), 512);  // right-associative
  EXPECT_EQ(std::get<int64_t>(evaluate("(hw + 1) * stride - max(k, 9)", s)), 21);
  EXPECT_TRUE(evaluate_condition("hw >= 7 * stride and dtype != 'f32'", s));
  EXPECT_FALSE(evaluate_condition("not (hw >= 7 * stride) or dtype == \"f32\"", s));
  EXPECT_EQ(to_text(evaluate("min(k, 2.5)", s)), "2.5");
}

TEST(SweepExpression, ErrorsNameTheExpressionAndTheFix) {
  const ExprScope s = {{"k", int64_t(3)}};
  try {
    evaluate("kk + 1", s);
    FAIL();
  } catch (const ExpressionError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown name 'kk' (axes and derived values here: k)"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("at character 1"), std::string::npos);
  }
  EXPECT_THROW(evaluate("k // 0", s), ExpressionError);
  EXPECT_THROW(evaluate("1 < k < 5", s), ExpressionError);
  EXPECT_THROW(evaluate("(k + 1", s), ExpressionError);
  EXPECT_THROW(evaluate_condition("k + 1", s), ExpressionError);  // a filter must compare
  EXPECT_THROW(evaluate("k and k", s), ExpressionError);
}

TEST(SweepGrid, ProductZipDerivedValuesAndFiltersGiveExactlyTheseCalls) {
  const Grid g = expand_grid_text(R"(
name: conv-small
op: aten::conv2d
args: {input: "{dtype}[{batch},{cin},{hw},{hw}]", weight: "{dtype}[{cout},{cin},{k},{k}]",
       stride: "{stride}", padding: "{pad}"}
axes: {batch: [1, 8], hw: [7, 14], k: [1, 3], stride: [1, 2], dtype: [f32]}
zip: [{cin: [16, 32], cout: [32, 64]}]
derive: {pad: "k // 2"}
where: ["hw >= 7 * stride", "k == 3 or cin == 16"]
)",
                                  "grid.yaml");
  EXPECT_EQ(g.name, "conv-small");
  // 2 batch × 2 hw × 2 k × 2 stride × 2 zip = 32; hw 7 with stride 2 drops 8; k 1 with cin 32
  // drops 6 of the remaining 24.
  EXPECT_EQ(g.items.size() + g.filtered_out, 32u);
  EXPECT_EQ(g.filtered_out, 14u);
  ASSERT_EQ(g.items.size(), 18u);
  const auto l = lines(g);
  EXPECT_EQ(l[0], "aten::conv2d input=f32[1,16,7,7] weight=f32[32,16,1,1] stride=1 padding=0");
  EXPECT_EQ(l[1], "aten::conv2d input=f32[1,16,7,7] weight=f32[32,16,3,3] stride=1 padding=1");
  EXPECT_EQ(l[2], "aten::conv2d input=f32[1,32,7,7] weight=f32[64,32,3,3] stride=1 padding=1");
  EXPECT_EQ(l[3], "aten::conv2d input=f32[1,16,14,14] weight=f32[32,16,1,1] stride=1 padding=0");
  EXPECT_EQ(l.back(), "aten::conv2d input=f32[8,32,14,14] weight=f32[64,32,3,3] stride=2 padding=1");
  // Each item keeps its values, axes first, derived last, and parses as a call.
  const auto& first = g.items.front();
  ASSERT_EQ(first.values.size(), 8u);
  EXPECT_EQ(first.values.front().first, "batch");
  EXPECT_EQ(first.values.back().first, "pad");
  EXPECT_EQ(first.call.op, "aten::conv2d");
  EXPECT_EQ(first.call.args.size(), 4u);
}

TEST(SweepGrid, ListsTextAndNoAxes) {
  const Grid one = expand_grid_text("op: aten::relu\nargs: {self: \"f32[4]\"}\n", "g.yaml");
  EXPECT_EQ(lines(one), (std::vector<std::string>{"aten::relu self=f32[4]"}));
  const Grid g = expand_grid_text(R"(
op: aten::add.Tensor
args: {self: "{dtype}[{n}]", other: "{dtype}[{n}]"}
axes: {dtype: [f32, bf16], n: [1024]}
)",
                                  "g.yaml");
  EXPECT_EQ(lines(g), (std::vector<std::string>{"aten::add.Tensor self=f32[1024] other=f32[1024]",
                                                "aten::add.Tensor self=bf16[1024] other=bf16[1024]"}));
  const Grid lists = expand_grid_text(R"(
op: aten::max_pool2d
args: {self: "f32[1,4,{hw},{hw}]", kernel_size: ["{k}", "{k}"]}
axes: {hw: [8], k: [2, 3]}
)",
                                      "g.yaml");
  EXPECT_EQ(lists.items[1].call_line, "aten::max_pool2d self=f32[1,4,8,8] kernel_size=[3,3]");
}

TEST(SweepGrid, BadGridsSayWhereAndHow) {
  auto message = [](const std::string& yaml) {
    try {
      expand_grid_text(yaml, "bad.yaml");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("args: {}\n").find("bad.yaml: missing 'op'"), std::string::npos);
  EXPECT_NE(message("op: aten::relu\nzip: [{a: [1, 2], b: [1]}]\n").find("need the same length"), std::string::npos);
  EXPECT_NE(message("op: aten::relu\naxes: {n: []}\n").find("axes.n must be a non-empty list"), std::string::npos);
  EXPECT_NE(message("op: aten::relu\naxis: {n: [1]}\n").find("unknown key 'axis'"), std::string::npos);
  // An expression that fails names the combination it failed for.
  const std::string e = message("op: aten::relu\nargs: {self: \"f32[{n // m}]\"}\naxes: {n: [4], m: [2, 0]}\n");
  EXPECT_NE(e.find("(item n=4, m=0)"), std::string::npos) << e;
  EXPECT_NE(e.find("division by zero"), std::string::npos) << e;
}

}  // namespace

namespace {

TEST(SweepGrid, DataIsTheFastestAxisAndFillsOnlyFloatingInputs) {
  const Grid g = expand_grid_text(
      "op: aten::embedding\n"
      "args: {weight: 'f32[{n},4]', indices: 'i64[8]'}\n"
      "axes: {n: [10, 20]}\n"
      "data: [normal, uniform, {zeros: 0.5}, {uniform: [0, 2]}]\n"
      "where: \"data != 'uniform' or n == 10\"\n",
      "d.yaml");
  EXPECT_EQ(lines(g), (std::vector<std::string>{
                          "aten::embedding weight=f32[10,4] indices=i64[8]",
                          "aten::embedding weight=f32[10,4]:range[-1.0,1.0] indices=i64[8]",
                          "aten::embedding weight=f32[10,4]:zeros[0.5] indices=i64[8]",
                          "aten::embedding weight=f32[10,4]:range[0.0,2.0] indices=i64[8]",
                          "aten::embedding weight=f32[20,4] indices=i64[8]",
                          "aten::embedding weight=f32[20,4]:zeros[0.5] indices=i64[8]",
                          "aten::embedding weight=f32[20,4]:range[0.0,2.0] indices=i64[8]",
                      }));
  EXPECT_EQ(g.filtered_out, 1u);
  EXPECT_EQ(to_text(g.items[2].values.back().second), "zeros=0.5");
  EXPECT_EQ(g.items[2].values.back().first, "data");
}

TEST(SweepGrid, BadDataSaysWhatAnEntryMayBe) {
  for (const char* bad : {"data: [{zeros: 2}]", "data: [gaussian]", "data: []", "data: [{uniform: [2, 1]}]"}) {
    try {
      expand_grid_text(std::string("op: aten::relu\nargs: {self: 'f32[4]'}\n") + bad + "\n", "d.yaml");
      ADD_FAILURE() << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("d.yaml: data"), std::string::npos) << e.what();
    }
  }
}

}  // namespace

namespace {

TEST(SweepModelList, ListsAreAxesAndEveryConfigurationIsLabelled) {
  const ModelList l = read_model_list_text(
      "name: zoo\n"
      "models:\n"
      "  - {model: resnet50, batch: [1, 8], dtype: [fp32, bf16]}\n"
      "  - {model: net.pt, input: ['f32[1,3,8,8]'], train: true}\n"
      "  - {model: distilgpt2, seq: 256, autocast: fp16}\n",
      "dir/zoo.yaml", "dir");
  EXPECT_EQ(l.name, "zoo");
  std::vector<std::string> labels;
  for (const auto& c : l.configs) labels.push_back(c.label);
  EXPECT_EQ(labels, (std::vector<std::string>{"resnet50 batch=1 dtype=fp32", "resnet50 batch=1 dtype=bf16",
                                              "resnet50 batch=8 dtype=fp32", "resnet50 batch=8 dtype=bf16",
                                              "net.pt train=true", "distilgpt2 seq=256 autocast=fp16"}));
  EXPECT_EQ(l.configs[3].batch, 8);
  EXPECT_EQ(l.configs[3].dtype, "bf16");
  EXPECT_EQ(l.configs[4].model, "dir/net.pt");  // relative to the list's folder
  EXPECT_EQ(l.configs[4].inputs, (std::vector<std::string>{"f32[1,3,8,8]"}));
  EXPECT_TRUE(l.configs[4].train);
  EXPECT_EQ(l.configs[5].seq, 256);
  EXPECT_EQ(l.configs[5].autocast, "fp16");
  EXPECT_FALSE(l.configs[0].python);
  const ModelList py = read_model_list_text(
      "models: [{model: 'torchvision.models:resnet18', input: 'f32[1,3,32,32]'}, {model: 'nets.py:build'}]",
      "dir/m.yaml", "dir");
  EXPECT_TRUE(py.configs[0].python);
  EXPECT_EQ(py.configs[0].model, "torchvision.models:resnet18");
  EXPECT_EQ(py.configs[1].model, "dir/nets.py:build");  // a file, relative to the list's folder
  EXPECT_TRUE(is_model_list_text("models: [{model: resnet50}]"));
  EXPECT_FALSE(is_model_list_text("op: aten::relu"));
}

TEST(SweepModelList, ErrorsNameTheEntryAndTheFix) {
  auto error = [](const std::string& yaml) {
    try {
      read_model_list_text(yaml, "m.yaml");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("models: [{model: resnet50, batch: 0}]").find("m.yaml: models[0]: batch is a positive integer"),
            std::string::npos);
  EXPECT_NE(error("models: [{model: resnet50, dtyp: bf16}]").find("unknown key 'dtyp'"), std::string::npos);
  EXPECT_NE(error("models: [{model: resnet50, autocast: f64}]").find("autocast is bf16 or fp16"), std::string::npos);
  EXPECT_NE(error("models: []").find("a model list has `models:`"), std::string::npos);
}

}  // namespace
