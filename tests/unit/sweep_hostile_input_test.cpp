// Grid files and expressions as a hostile (or careless) user writes them: sizes that would
// exhaust memory, nesting that would exhaust the stack, numbers that would wrap, input echoed
// without bound, and the mistakes YAML lets through silently. Each is refused in one line that
// names the input, the place and the fix.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>

#include "core/sweep/expression.h"
#include "core/sweep/grid.h"
#include "core/sweep/model_list.h"

using namespace opcost;

namespace {

// The message `body` throws (of type E), or "no error".
template <typename E = std::invalid_argument>
std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const E& e) {
    return e.what();
  }
  return "no error";
}

std::string grid_error(const std::string& yaml, std::uint64_t max_items = kDefaultMaxSweepItems) {
  return error_of([&] { expand_grid_text(yaml, "g.yaml", max_items); });
}

std::string expression_error(const std::string& expression, const ExprScope& scope = {}) {
  return error_of<ExpressionError>([&] { evaluate(expression, scope); });
}

// A list of n integers from 0: "[0, 1, 2, ...]".
std::string values(int n) {
  std::string out = "[";
  for (int i = 0; i < n; ++i) out += (i ? ", " : "") + std::to_string(i);
  return out + "]";
}

// What a refusal must be: one line, short whatever the input, containing `expected`.
void expect_one_short_line(const std::string& message, const std::string& expected) {
  EXPECT_NE(message.find(expected), std::string::npos) << message.substr(0, 2000);
  EXPECT_EQ(message.find('\n'), std::string::npos) << message.substr(0, 2000);
  EXPECT_LT(message.size(), 1000u) << message.substr(0, 2000);
}

// Runs `body` in this (forked, death-test) process with its address space capped at what it
// uses now plus `extra_bytes`: an allocation past that fails, so a grid expanded before it
// is counted cannot pass.
void with_memory_cap(std::size_t extra_bytes, const std::function<void()>& body) {
  std::ifstream status("/proc/self/status");
  std::size_t vm_kib = 0;
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmSize:", 0) == 0) vm_kib = std::stoul(line.substr(7));
  const rlim_t cap = vm_kib * 1024 + extra_bytes;
  const rlimit limit{cap, cap};
  if (vm_kib == 0 || setrlimit(RLIMIT_AS, &limit) != 0) std::_Exit(3);
  body();
}

const std::string kFiveByHundred = "op: aten::relu\nargs: {self: 'f32[{a}]'}\naxes: {a: " + values(100) +
                                   ", b: " + values(100) + ", c: " + values(100) + ", d: " + values(100) +
                                   ", e: " + values(100) + "}\n";
// 5 KB of YAML: one 1000-value list, reused through an anchor on six axes (10^18 items).
const std::string kAnchoredSix =
    "op: aten::relu\nargs: {self: 'f32[{a}]'}\naxes: {a: &v " + values(1000) + ", b: *v, c: *v, d: *v, e: *v, f: *v}\n";

TEST(SweepHostileInput, HugeGridsAreCountedAndRefusedBeforeAnythingIsExpanded) {
  const GridDefinition five = GridDefinition::read(kFiveByHundred, "five.yaml");
  EXPECT_EQ(five.combinations(), 10'000'000'000u);
  EXPECT_EQ(GridDefinition::read(kAnchoredSix, "six.yaml").combinations(), 1'000'000'000'000'000'000u);
  const std::string seven =
      "op: aten::relu\naxes: {a: &v " + values(1000) + ", b: *v, c: *v, d: *v, e: *v, f: *v, g: *v}\n";
  EXPECT_EQ(GridDefinition::read(seven, "seven.yaml").combinations(), UINT64_MAX);  // saturates, never wraps
  const std::string message = error_of<SweepTooLarge>([&] { five.check_size(kDefaultMaxSweepItems); });
  expect_one_short_line(message, "five.yaml: 10000000000 combinations (a 100 × b 100 × c 100 × d 100 × e 100");
  EXPECT_NE(message.find("more than the 1000000 items"), std::string::npos) << message;
  EXPECT_NE(message.find("--max-items"), std::string::npos) << message;
  expect_one_short_line(grid_error(seven), "more than 18446744073709551615 combinations");
}

// The cases: these grew to 12-15 GB until killed. Under a cap of 256 MiB more than the
// test uses, the refusal must come (and nothing else: an allocation failure exits otherwise).
TEST(SweepHostileInputDeathTest, HugeGridsAreRefusedUnderAMemoryCap) {
  for (const auto& [yaml, count] : {std::pair{kFiveByHundred, std::string("10000000000 combinations")},
                                    std::pair{kAnchoredSix, std::string("1000000000000000000 combinations")}}) {
    EXPECT_EXIT(with_memory_cap(256u << 20,
                                [&] {
                                  try {
                                    expand_grid_text(yaml, "g.yaml");
                                  } catch (const SweepTooLarge& e) {
                                    std::fprintf(stderr, "%s\n", e.what());
                                    std::exit(0);
                                  }
                                  std::exit(1);
                                }),
                testing::ExitedWithCode(0), count);
  }
}

TEST(SweepHostileInput, TheLimitIsTheCallersAndWhereFiltersCountAsKeepingEverything) {
  const std::string grid = "op: aten::relu\nargs: {self: 'f32[{a}]'}\naxes: {a: [1, 2, 3], b: [1, 2]}\n";
  EXPECT_NE(grid_error(grid, 5).find("6 combinations (a 3 × b 2;"), std::string::npos) << grid_error(grid, 5);
  EXPECT_EQ(expand_grid_text(grid, "g.yaml", 6).items.size(), 6u);
  // A filter may keep 3 of 9: the count before expanding cannot know, so it is the bound.
  const std::string filtered =
      "op: aten::relu\nargs: {self: 'f32[{a}]'}\naxes: {a: [1, 2, 3], b: [1, 2, 3]}\n"
      "where: 'b == 1'\n";
  EXPECT_NE(grid_error(filtered, 8).find("9 combinations"), std::string::npos);
  const std::string zipped =
      "op: aten::relu\nargs: {self: 'f32[{a}]'}\nzip: [{a: [1, 2, 3], b: [4, 5, 6]}]\n"
      "data: [normal, uniform]\n";
  EXPECT_NE(grid_error(zipped, 5).find("6 combinations (a+b 3 × data 2;"), std::string::npos) << grid_error(zipped, 5);
}

TEST(SweepHostileInput, ItemsAreMadeOneAtATime) {
  // 10^4 items, handed over one by one: the callback sees each, in order, and holds none.
  const std::string grid =
      "op: aten::add.Tensor\nargs: {self: 'f32[{a},{b}]', other: 'f32[{a},{b}]'}\n"
      "axes: {a: " +
      values(100) + ", b: " + values(100) + "}\nwhere: 'a > 0 and b > 0'\n";
  const GridDefinition g = GridDefinition::read(grid, "g.yaml");
  std::size_t seen = 0;
  std::string last;
  const std::size_t filtered = g.for_each_item([&](GridItem& item) {
    ++seen;
    last = item.call_line;
  });
  EXPECT_EQ(seen, 99u * 99u);
  EXPECT_EQ(filtered, 10'000u - 99u * 99u);
  EXPECT_EQ(last, "aten::add.Tensor self=f32[99,99] other=f32[99,99]");
}

TEST(SweepHostileInput, NestingIsBoundedNotAStackOverflow) {
  const std::string deep = std::to_string(kMaxExpressionDepth);
  auto nested = [](const std::string& open, const std::string& middle, const std::string& close, std::size_t n) {
    std::string s;
    for (std::size_t i = 0; i < n; ++i) s += open;
    s += middle;
    for (std::size_t i = 0; i < n; ++i) s += close;
    return s;
  };
  for (const std::string& e :
       {nested("(", "1", ")", 100'000), nested("not ", "true", "", 100'000), nested("-", "1", "", 200'000),
        nested("+", "1", "", 200'000), nested("2 ** ", "1", "", 100'000), nested("min(", "1", ")", 100'000)}) {
    const std::string message = expression_error(e);
    expect_one_short_line(message, "nested more than " + deep + " levels deep");
    EXPECT_NE(message.find("the limit is " + deep), std::string::npos) << message;
    EXPECT_NE(message.find("at character"), std::string::npos) << message;
  }
  // At the limit it still evaluates; one more level is refused.
  EXPECT_EQ(std::get<int64_t>(evaluate(nested("(", "7", ")", kMaxExpressionDepth), {})), 7);
  EXPECT_NE(expression_error(nested("(", "7", ")", kMaxExpressionDepth + 1)).find("nested more than"),
            std::string::npos);
  // Long flat chains are loops, not nesting, and take linear time.
  std::string sum = "1";
  for (int i = 1; i < 100'000; ++i) sum += "+1";
  EXPECT_EQ(std::get<int64_t>(evaluate(sum, {})), 100'000);
  // In a grid's filter too (the sweep and Python's sweep_status read it this way).
  expect_one_short_line(
      grid_error("op: aten::relu\nargs: {self: 'f32[4]'}\nwhere: \"" + nested("(", "1 == 1", ")", 5000) + "\"\n"),
      "g.yaml: expression \"((((");
}

TEST(SweepHostileInput, IntegersThatDoNotFitInt64AreRefusedNotWrapped) {
  const ExprScope n = {{"n", int64_t(1)}};
  for (const char* e :
       {"2 ** 64", "2 ** 63", "9223372036854775807 + n", "-9223372036854775807 - 2", "3037000500 * 3037000500",
        "(-9223372036854775807 - 1) // -1", "-(-9223372036854775807 - 1)", "10 ** 10 ** 10", "(-2) ** 65"})
    expect_one_short_line(expression_error(e, n), "does not fit in a 64-bit integer");
  EXPECT_NE(expression_error("2 ** 64 == 0").find("expression \"2 ** 64 == 0\", at character"), std::string::npos);
  // The largest and smallest still compute, exactly.
  EXPECT_EQ(std::get<int64_t>(evaluate("2 ** 62 + (2 ** 62 - 1)", {})), INT64_MAX);
  EXPECT_EQ(std::get<int64_t>(evaluate("-9223372036854775807 - 1", {})), INT64_MIN);
  EXPECT_EQ(std::get<int64_t>(evaluate("(-9223372036854775807 - 1) % -1", {})), 0);
  EXPECT_EQ(std::get<int64_t>(evaluate("(-2) ** 63", {})), INT64_MIN);
  EXPECT_EQ(std::get<int64_t>(evaluate("1 ** 1000000000000", {})), 1);
  EXPECT_EQ(std::get<int64_t>(evaluate("(-1) ** 1000000000001", {})), -1);
  // Floor division and modulo stay in integers: through double, 2^53 + 1 would round.
  EXPECT_EQ(std::get<int64_t>(evaluate("9007199254740993 // 1", {})), 9007199254740993);
  EXPECT_EQ(std::get<int64_t>(evaluate("9007199254740993 % 10", {})), 3);
  EXPECT_EQ(std::get<int64_t>(evaluate("7 % -3", {})), -2);
  // Comparisons are exact, between integers and between an integer and a float.
  EXPECT_FALSE(evaluate_condition("9007199254740993 == 9007199254740992", {}));
  EXPECT_TRUE(evaluate_condition("9007199254740993 > 9007199254740992.0", {}));
  EXPECT_FALSE(evaluate_condition("2 ** 53 + 1 == 2.0 ** 53", {}));
  EXPECT_TRUE(evaluate_condition("9223372036854775807 < 9223372036854775808.0", {}));
  EXPECT_EQ(to_text(evaluate("max(2 ** 53 + 1, 9007199254740992.0)", {})), "9007199254740993");
  // A literal too long for int64 is refused, and a 300-digit one is not echoed whole.
  const std::string digits(300, '7');
  const std::string message = expression_error(digits + " + 1");
  expect_one_short_line(message, "does not fit in a 64-bit integer");
  EXPECT_EQ(message.find(digits), std::string::npos) << message;
  expect_one_short_line(grid_error("op: aten::relu\naxes: {n: [" + digits + "]}\n"), "g.yaml: axes.n: 777777");
}

TEST(SweepHostileInput, FloatsThatAreNotFiniteAreRefused) {
  expect_one_short_line(expression_error("1e308 * 10"), "beyond a 64-bit float");
  expect_one_short_line(expression_error("10.0 ** 400"), "beyond a 64-bit float");
  expect_one_short_line(expression_error("(-8) ** 0.5"), "not a real number");
  expect_one_short_line(expression_error("1e999"), "beyond a 64-bit float");
  expect_one_short_line(expression_error("0 ** -1"), "division by zero");
  expect_one_short_line(expression_error("1.5 // 0"), "division by zero");
  EXPECT_DOUBLE_EQ(std::get<double>(evaluate("2 ** -1", {})), 0.5);
}

TEST(SweepHostileInput, MessagesNeverEchoTheirWholeInput) {
  const std::string ten_mb(10u << 20, 'x');
  expect_one_short_line(expression_error(ten_mb), "unknown name 'xxx");
  expect_one_short_line(expression_error("'" + ten_mb), "the string has no closing quote");
  expect_one_short_line(expression_error("1 + \n\x1b[31m"), "unexpected '\\x1b'");
  // In a grid file, below the bound on what a grid may read (1 MiB) and above it.
  const std::string half_mb(500u << 10, 'x');
  expect_one_short_line(grid_error("op: aten::relu\nwhere: '" + std::string(500u << 10, ' ') + "1 +'\n"),
                        "the expression ends too early");
  expect_one_short_line(grid_error("op: aten::relu\n? " + half_mb + "\n: 1\n"), "unknown key 'xxx");
  expect_one_short_line(grid_error("op: aten::relu\n? " + ten_mb + "\n: 1\n"), "the grid reads as more than 1.0 MiB");
  expect_one_short_line(grid_error("op: aten::relu\naxes: {n: ['" + std::string(5000, 'y') + "']}\n"),
                        "a value of 5000 bytes");
  const ExprScope s = {{"word", std::string(5000, 'w')}};
  expect_one_short_line(expression_error("word + 1", s), "+ needs numbers, not www");
}

// What the fuzzers found in grids and model lists: a 16 KB op echoed whole in an item's message,
// yaml-cpp's message holding a raw line break, and names (valid, but long) echoed uncut.
TEST(SweepHostileInput, EveryEchoIsOneShortLine) {
  const std::string long_op(16000, 'o');
  expect_one_short_line(grid_error("name: g\nop: \"aten::" + long_op + "\"\n"), "is not an operator name");
  // (Outside brackets a line break splits the call line into words, as a space does.)
  expect_one_short_line(grid_error("name: g\nop: \"aten::f[\\n]\"\n"), "'aten::f[\\n]' is not an operator name");
  expect_one_short_line(grid_error("op: \"aten::relu \\\r\"\n"), "not YAML: unknown escape character: \\r");
  // An op with an open '[' swallowed the arguments into its name (libFuzzer, fuzz_grid).
  expect_one_short_line(grid_error("op: aten::mm[x\nargs: {self: 'f32[2]'}\n"),
                        "g.yaml: op: 'aten::mm[x' is not an operator name");
  // Names in explicit keys ("? name"): an implicit YAML key is at most 1024 characters.
  const std::string long_name = "? " + std::string(16000, 'a') + "\n    : ";
  expect_one_short_line(
      grid_error("op: aten::relu\naxes:\n    " + long_name + "[1]\nderive:\n    " + long_name + "'1'\n"),
      "is already named by");
  expect_one_short_line(grid_error("op: aten::relu\nzip:\n  - " + long_name + "[1]\n    ? b" + std::string(16000, 'a') +
                                   "\n    : [1, 2]\n"),
                        "zipped lists move in step");
  expect_one_short_line(grid_error("op: aten::relu\naxes: {n: [1]}\nderive:\n    " + long_name + "\"'" +
                                   std::string(2000, 'x') + "'\"\n"),
                        "gives a text of 2000 bytes");
  expect_one_short_line(error_of([] { expand_grid_text("op: [\n", "dir\nname.yaml"); }), "dir\\nname.yaml:");
  expect_one_short_line(error_of([] { read_model_list_text("models: [\"\\\r\"]\n", "dir\n/m.yaml"); }),
                        "dir\\n/m.yaml:1: not YAML: unknown escape character: \\r");
}

TEST(SweepHostileInput, YamlAliasesCannotMultiplyWhatIsRead) {
  // A list of 1000 values reused 1000 times in one argument: 10^6 values to read.
  std::string args = "args: {a: &l " + values(1000) + ", b: [";
  for (int i = 0; i < 1000; ++i) args += i ? ", *l" : "*l";
  args += "]}\n";
  expect_one_short_line(grid_error("op: aten::relu\n" + args), "the grid reads as more than 1.0 MiB");
  // Aliases nesting lists in lists.
  std::string chain = "args: {a0: &a0 [1]";
  for (int i = 1; i < 12; ++i)
    chain += ", a" + std::to_string(i) + ": &a" + std::to_string(i) + " [*a" + std::to_string(i - 1) + "]";
  expect_one_short_line(grid_error("op: aten::relu\n" + chain + "}\n"), "lists nested more than 8 deep");
  // A template that fills past what any call needs.
  std::string wide = "op: aten::relu\naxes: {w: ['" + std::string(1000, 'w') + "']}\nargs: {self: '";
  for (int i = 0; i < 100; ++i) wide += "{w}";
  expect_one_short_line(grid_error(wide + "'}\n"), "the call is longer than 64.0 KiB once filled in");
}

TEST(SweepHostileInput, WhatYamlWouldDropSilentlyIsRefused) {
  const std::string base = "op: aten::relu\nargs: {self: 'f32[{n}]'}\n";
  expect_one_short_line(grid_error("op: aten::relu\nop: aten::gelu\n"), "g.yaml: 'op' is given twice");
  expect_one_short_line(grid_error(base + "axes: {n: [1], n: [2]}\n"), "g.yaml: axes: 'n' is given twice");
  expect_one_short_line(grid_error(base + "zip: [{n: [1], m: [2], m: [3]}]\n"), "g.yaml: zip[0]: 'm' is given twice");
  expect_one_short_line(grid_error(base + "axes: {n: [1]}\nderive: {k: n, k: 2}\n"), "derive: 'k' is given twice");
  expect_one_short_line(grid_error("op: aten::relu\nargs: {self: 'f32[4]', self: 'f32[8]'}\n"),
                        "args: 'self' is given twice");
  // One name, one value per item.
  expect_one_short_line(grid_error(base + "axes: {n: [1, 2]}\nzip: [{n: [3, 4], m: [5, 6]}]\n"),
                        "g.yaml: zip[0].n: 'n' is already named by g.yaml: axes.n");
  expect_one_short_line(grid_error(base + "zip: [{n: [1], m: [2]}, {m: [3], k: [4]}]\n"), "'m' is already named by");
  expect_one_short_line(grid_error(base + "axes: {n: [1, 2]}\nderive: {n: n * 2}\n"),
                        "g.yaml: derive.n: 'n' is already named by g.yaml: axes.n");
  // `data` names the data key's axis in every item and in exports, with or without a data key.
  expect_one_short_line(grid_error(base + "axes: {n: [1], data: [1, 2]}\n"), "axes.data: 'data' is reserved");
  expect_one_short_line(grid_error(base + "axes: {n: [1], data: [1]}\ndata: [normal]\n"), "'data' is reserved");
  expect_one_short_line(grid_error(base + "axes: {n: [1]}\nderive: {data: n}\n"), "derive.data: 'data' is reserved");
  expect_one_short_line(grid_error(base + "axes: {n: [1], min: [2]}\n"), "'min' is a word of expressions");
  expect_one_short_line(grid_error(base + "axes: {n: [1], in-ch: [2]}\n"), "'in-ch' is not a name expressions can use");
  // The sweep's name is one line (it reaches messages, the database and Slurm job names).
  expect_one_short_line(grid_error("name: \"a\\ntouch pwned\"\nop: aten::relu\n"), "must be one line");
  // Values YAML would read as something else: too large for int64, hex, quoted numbers.
  const Grid g = expand_grid_text(base + "axes: {n: [4], w: [0x10, '8', 1e3, inf]}\n", "g.yaml");
  ASSERT_EQ(g.items.size(), 4u);
  EXPECT_TRUE(std::holds_alternative<std::string>(g.items[0].values[1].second));  // 0x10: a word
  EXPECT_TRUE(std::holds_alternative<std::string>(g.items[1].values[1].second));  // '8': quoted
  EXPECT_TRUE(std::holds_alternative<double>(g.items[2].values[1].second));       // 1e3
  EXPECT_TRUE(std::holds_alternative<std::string>(g.items[3].values[1].second));  // inf: a word
  // Filters apply in order: a later one may rely on an earlier one.
  const Grid guarded =
      expand_grid_text(base + "axes: {n: [4, 6], m: [0, 2, 3]}\nwhere: ['m != 0', 'n % m == 0']\n", "g.yaml");
  EXPECT_EQ(guarded.items.size(), 3u);
}

TEST(SweepHostileInput, ModelListsAreCountedAndCheckedToo) {
  const std::string anchored = "models:\n  - {model: resnet50, batch: &v " + values(1000) +
                               ", seq: *v}\n  - {model: distilgpt2, batch: *v, seq: *v}\n";
  const std::string message = error_of<SweepTooLarge>([&] { read_model_list_text(anchored, "m.yaml", "", 1'000'000); });
  expect_one_short_line(message, "m.yaml: 2000000 model configurations (1000000 + 1000000 over the entries)");
  EXPECT_EQ(read_model_list_text("models: [{model: resnet50, batch: [1, 2, 3]}]", "m.yaml", "", 3).configs.size(), 3u);
  auto error = [](const std::string& yaml) { return error_of([&] { read_model_list_text(yaml, "m.yaml"); }); };
  expect_one_short_line(error("models: [{model: resnet50, batch: 1, batch: 2}]"),
                        "m.yaml: models[0]: 'batch' is given twice");
  expect_one_short_line(error("name: a\nname: b\nmodels: [{model: resnet50}]"), "'name' is given twice");
  expect_one_short_line(error("name: \"x\\ny\"\nmodels: [{model: resnet50}]"), "must be one line");
  expect_one_short_line(error("models: [{model: resnet50, dtype: '" + std::string(100000, 'd') + "'}]"),
                        "dtype is fp32, bf16 or fp16, not 'ddd");
}

}  // namespace
