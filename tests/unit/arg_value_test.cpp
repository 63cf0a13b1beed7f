#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/spec/arg_value.h"
#include "core/spec/op_call.h"
#include "core/spec/spec_file.h"
#include "core/text/text.h"

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
  for (const char* s : {"f32[32,64,56,56]", "f32[4,8]:stride[1,4]", "i64[8]:range[0.0,10.0]", "f32[4,4]:zeros[0.25]",
                        "[1,1]", "None", "true", "1e-05", "0.5", "-2", "tanh", "[f32[2],bf16[3]:cpu]", "[]", "f32[]"}) {
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
  EXPECT_THROW(parse_value("f32[2]:zeros[1.5]"), ParseError);
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

namespace {
std::string parse_error(const std::string& text) {
  try {
    parse_value(text);
  } catch (const ParseError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(ArgValue, MessagesSayWhatIsWrong) {
  const auto shape = parse_error("f32[4,x]");
  EXPECT_NE(shape.find("an integer in a tensor shape"), std::string::npos) << shape;
  EXPECT_EQ(shape.find("in in"), std::string::npos) << shape;
  EXPECT_NE(parse_error("f32[4").find("to close a tensor shape"), std::string::npos) << parse_error("f32[4");
  const auto big = parse_error("99999999999999999999");
  EXPECT_NE(big.find("out of range for a 64-bit integer"), std::string::npos) << big;
  EXPECT_NE(parse_error("f32[99999999999999999999]").find("out of range"), std::string::npos);
  EXPECT_NE(parse_error("1e999").find("out of range for a double"), std::string::npos) << parse_error("1e999");
  // A modifier given twice is refused, never silently the last.
  EXPECT_NE(parse_error("f32[4]:stride[1]:stride[2]").find("':stride' given twice"), std::string::npos);
  EXPECT_NE(parse_error("i64[4]:range[0,4]:range[0,9]").find("':range' given twice"), std::string::npos);
  // A range a dtype cannot hold.
  const auto u8 = parse_error("u8[4]:range[-5,1000]");
  EXPECT_NE(u8.find("outside what u8 holds ([0, 255])"), std::string::npos) << u8;
  EXPECT_EQ(parse_error("u8[4]:range[0,256]"), "");  // [0, 256) is every u8 value
  EXPECT_EQ(parse_error("f32[4]:range[-1000,1000]"), "");
  // Bytes that are not UTF-8 are echoed escaped, not raw.
  const auto raw = parse_error("f32[\xff\xfe]");
  EXPECT_NE(raw.find("\\xff\\xfe"), std::string::npos) << raw;
  EXPECT_EQ(raw.find('\xff'), std::string::npos);
}

// A fuzz test of the argument language: thousands of strings built from its own tokens and
// from random bytes. Every one either parses, and then prints back to text that parses to
// the same value, or fails with a ParseError whose message is one line naming a column; no
// other exception, no crash.
TEST(ArgValue, FuzzedTextParsesOrFailsOnOneLine) {
  const std::vector<std::string> tokens = {"f32",         "bf16",     "i64",
                                           "u8",          "bool",     "q9",
                                           "[",           "]",        ",",
                                           ":",           "stride",   "range",
                                           "cuda",        "cpu",      ":cuda",
                                           "1",           "0",        "-3",
                                           "1e-5",        "2.5",      "inf",
                                           "nan",         "None",     "true",
                                           "tanh",        " ",        "=",
                                           "\"",          "{",        "}",
                                           "-",           "+",        "999999999999999999999",
                                           "0x10",        "é",        "\xff",
                                           "\x01",        ".",        "_",
                                           "[1,2]",       "f32[2,3]", ":stride[1,1]",
                                           ":range[0,4]", "[[",       "]]"};
  uint64_t state = 0x9e3779b97f4a7c15ULL;  // xorshift: the same strings on every run
  auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  int parsed = 0, refused = 0;
  for (int n = 0; n < 5000; ++n) {
    std::string text;
    const int parts = 1 + int(next() % 8);
    for (int k = 0; k < parts; ++k) {
      if (next() % 10 == 0)
        text += char(next() % 256);  // a raw byte now and then
      else
        text += tokens[next() % tokens.size()];
    }
    try {
      const ArgValue v = parse_value(text);
      ++parsed;
      const std::string printed = format_value(v);
      EXPECT_EQ(format_value(parse_value(printed)), printed) << "round trip of '" << text << "'";
    } catch (const ParseError& e) {
      ++refused;
      const std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      EXPECT_NE(what.find("column"), std::string::npos) << what;
      EXPECT_EQ(what.find("Exception raised"), std::string::npos) << what;
      for (unsigned char c : what) EXPECT_TRUE(c >= 0x20 || c == '\t') << "control byte in: " << what;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "'" << text << "' threw something other than a ParseError: " << e.what();
    }
  }
  EXPECT_GT(parsed, 100);  // the generator reaches both outcomes
  EXPECT_GT(refused, 1000);
}

TEST(OpCall, FuzzedCommandLinesFailWithTheArgumentNamed) {
  uint64_t state = 42;
  auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  const std::vector<std::string> pieces = {"self=", "other=", "=", "f32[", "4", "]", ",", "x", "[", "1e400", "\xc3"};
  for (int n = 0; n < 2000; ++n) {
    std::string tok;
    for (int k = 0, parts = 1 + int(next() % 6); k < parts; ++k) tok += pieces[next() % pieces.size()];
    try {
      parse_call("aten::relu", {tok});
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("aten::relu: argument '", 0), 0u) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

// Each list level is a recursive call: 100000 of them overflowed the stack (exit 139, no
// message). They are refused at kMaxListDepth with a short message naming the limit and fix.
TEST(ArgValue, DeepNestingIsRefusedNotAStackOverflow) {
  const std::size_t levels = 100000;
  const std::string deep = std::string(levels, '[') + "f32[2]" + std::string(levels, ']');
  const std::string what = parse_error(deep);
  EXPECT_NE(what.find("lists nest deeper than 32 levels"), std::string::npos) << what.substr(0, 300);
  EXPECT_NE(what.find("flatten it"), std::string::npos) << what.substr(0, 300);
  EXPECT_LT(what.size(), 400u) << "the message echoes the whole input";
  // The limit itself still parses, one more level does not.
  const std::string at_limit = std::string(kMaxListDepth, '[') + "1" + std::string(kMaxListDepth, ']');
  EXPECT_EQ(parse_error(at_limit), "");
  EXPECT_NE(parse_error("[" + at_limit + "]").find("deeper than 32"), std::string::npos);
  // Through the command line's form: the argument is named.
  try {
    parse_call("aten::cat", {"tensors=" + deep});
    FAIL();
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("aten::cat: argument 'tensors': lists nest deeper than 32 levels", 0), 0u)
        << msg.substr(0, 300);
  }
}

// A 10 MB argument gave 20 MB of stderr: every echo of the user's text is cut.
TEST(ArgValue, ErrorsEchoLongInputCut) {
  const std::string huge = "f32[" + std::string(10'000'000, '7') + "x]";
  const std::string shape = parse_error(huge);
  EXPECT_LT(shape.size(), 400u);
  EXPECT_NE(shape.find("…"), std::string::npos) << shape;
  const std::string digits = parse_error(std::string(300, '9'));  // a 300-digit number
  EXPECT_NE(digits.find("out of range for a 64-bit integer"), std::string::npos) << digits;
  EXPECT_LT(digits.size(), 400u) << digits;
  const std::string word = parse_error(std::string(100000, 'q') + "[2]");  // an unknown dtype of 100000 letters
  EXPECT_NE(word.find("unknown dtype"), std::string::npos);
  EXPECT_LT(word.size(), 500u);
  try {  // an unnamed token is named by its text: cut too
    parse_call("aten::relu", {std::string(1'000'000, '[')});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_LT(std::string(e.what()).size(), 500u);
  }
}

// Each word a message names is cut, not only the whole input: a 16,000-letter tensor modifier
// gave a 16 KB+ message (fuzz_arg_value), so did a modifier given twice.
TEST(ArgValue, EveryEchoedWordIsCutAndOneLine) {
  const std::string letters(16000, 'n');
  const std::string unknown = parse_error("i64[]:r" + letters);
  EXPECT_NE(unknown.find("unknown tensor modifier ':rnnn"), std::string::npos) << unknown.substr(0, 300);
  EXPECT_LT(unknown.size(), 400u) << unknown.substr(0, 300);
  // A modifier's name is letters only, so a valid one repeated is the "twice" path.
  const std::string twice = parse_error("f32[2]:cpu:cpu" + letters);
  EXPECT_LT(twice.size(), 400u) << twice.substr(0, 300);
  for (const std::string& bad : {std::string("f32[2]\n\x01"), std::string("\x01"), std::string("f32[2] \xff")}) {
    const std::string what = parse_error(bad);
    EXPECT_FALSE(what.empty()) << bad;
    EXPECT_EQ(what.find_first_of("\n\r"), std::string::npos) << what;
    EXPECT_EQ(printable(what, false), what) << "a raw control byte or broken UTF-8 in the message";
  }
}

// A bad operator name is the user's text too: one with newlines gave a refusal of several
// lines (fuzz_arg_value: "aten::f32[64,3:\n3\n]: argument ..."). It is refused as a name, cut,
// on one line; and the name a bad argument's message shows is escaped.
TEST(OpCall, OperatorNamesAreOneShortLineInMessages) {
  auto refusal = [](const std::string& op, const std::vector<std::string>& args) -> std::string {
    try {
      parse_call(op, args);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  const std::string newline = refusal("aten::f32[64,3:\n3\n]", {"x"});
  EXPECT_NE(newline.find("is not an operator name"), std::string::npos) << newline;
  EXPECT_NE(newline.find("\\n3\\n"), std::string::npos) << newline;
  EXPECT_EQ(newline.find('\n'), std::string::npos) << newline;
  const std::string long_name = refusal("aten::" + std::string(16000, 'f'), {});
  EXPECT_NE(long_name.find("is not an operator name"), std::string::npos) << long_name.substr(0, 300);
  EXPECT_LT(long_name.size(), 400u) << long_name.substr(0, 300);
  EXPECT_NE(refusal("", {}).find("is not an operator name"), std::string::npos);
  // A '[' or a space in a name read back as an argument once the call was written out (libFuzzer,
  // fuzz_grid: "aten::mm[G… self=…" as one name, 256 bytes, then 257 with the space after it).
  EXPECT_NE(refusal("aten::mm[", {}).find("is not an operator name"), std::string::npos);
  EXPECT_NE(refusal("aten::mm[x self=f32[2]]", {}).find("is not an operator name"), std::string::npos);
  // A long name that is allowed is cut where a bad argument's message shows it.
  const std::string allowed = refusal("aten::" + std::string(240, 'g'), {"f32[x]\n"});
  EXPECT_NE(allowed.find("argument 'f32[x]\\n'"), std::string::npos) << allowed;
  EXPECT_LT(allowed.size(), 400u) << allowed;
  EXPECT_EQ(allowed.find('\n'), std::string::npos) << allowed;
  EXPECT_EQ(parse_call("aten::add.Tensor", {"self=f32[2]"}).display_name(), "aten::add.Tensor");
}

// --- Every value round-trips: strings with any bytes, complex numbers, nested lists ---------

TEST(ArgValue, StringsThatAreNotBareWordsAreQuotedAndReadBack) {
  EXPECT_EQ(format_value(ArgValue{ArgValue::Word{"tanh"}}), "tanh");
  EXPECT_EQ(format_value(ArgValue{ArgValue::Word{"cuda:0"}}), "cuda:0");
  EXPECT_EQ(format_value(ArgValue{ArgValue::Word{"bd,de->be"}}), "\"bd,de->be\"");
  // Words that would read back as something else: None, a bool, a number, a complex number.
  for (const char* text : {"None", "true", "1.5", "-3", "2j", "inf", "1abc", "", "a b", "say \"hi\"", "x\\y"}) {
    const std::string written = format_value(ArgValue{ArgValue::Word{text}});
    EXPECT_EQ(written.front(), '"') << text;
    EXPECT_EQ(std::get<ArgValue::Word>(parse_value(written).v).text, text) << written;
  }
  EXPECT_EQ(std::get<ArgValue::Word>(parse_value("'single \\'quoted\\''").v).text, "single 'quoted'");
  EXPECT_EQ(std::get<ArgValue::Word>(parse_value(R"("tab\there\x01")").v).text, "tab\there\x01");
}

TEST(ArgValue, BadStringsFailInOneLineNamingTheFix) {
  for (const char* bad : {"\"open", "\"bad \\q escape\"", "\"\\x4\"", "\"ends with \\"}) {
    try {
      parse_value(bad);
      ADD_FAILURE() << bad << " parsed";
    } catch (const ParseError& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
  try {
    parse_value("bd,de->be");
    ADD_FAILURE() << "an unquoted comma parsed";
  } catch (const ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("in quotes"), std::string::npos) << e.what();
  }
}

TEST(ArgValue, DistinctGroupsModifier) {
  const auto t = std::get<TensorSpec>(parse_value("f32[1000,4]:distinct[683]").v);
  EXPECT_EQ(t.distinct, 683);
  EXPECT_EQ(format_tensor(t), "f32[1000,4]:distinct[683]");
  EXPECT_THROW(parse_value("f32[4,4]:distinct[-1]"), ParseError);
  EXPECT_THROW(parse_value("f32[4,4]:distinct[2]:distinct[2]"), ParseError);
}

TEST(ArgValue, SameTensorModifier) {
  const auto t = std::get<TensorSpec>(parse_value("bf16[8,197,768]:cuda:1:same[query]").v);
  EXPECT_EQ(t.same_as, "query");
  EXPECT_EQ(t.device, "cuda:1");
  EXPECT_EQ(format_tensor(t), "bf16[8,197,768]:cuda:1:same[query]");
  EXPECT_EQ(std::get<TensorSpec>(parse_value("f32[2]:same[mat_2]").v).same_as, "mat_2");
  for (const char* bad :
       {"f32[2]:same[]", "f32[2]:same[2x]", "f32[2]:same[a b]", "f32[2]:same[a]:same[a]", "f32[2]:same[a"}) {
    try {
      parse_value(bad);
      ADD_FAILURE() << bad << " parsed";
    } catch (const ParseError& e) {
      EXPECT_NE(std::string(e.what()).find("same"), std::string::npos) << bad << ": " << e.what();
    }
  }
  // A name no longer than the language reads.
  try {
    parse_value("f32[2]:same[" + std::string(kMaxArgumentNameBytes + 1, 'a') + "]");
    ADD_FAILURE() << "a name over the bound parsed";
  } catch (const ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("at most 128 bytes"), std::string::npos) << e.what();
  }
  EXPECT_EQ(std::get<TensorSpec>(parse_value("f32[2]:same[" + std::string(kMaxArgumentNameBytes, 'a') + "]").v)
                .same_as->size(),
            kMaxArgumentNameBytes);
}

TEST(ArgValue, ComplexNumbersInPythonsSpelling) {
  EXPECT_EQ(std::get<ArgValue::Complex>(parse_value("1.5-2.0j").v), (ArgValue::Complex{1.5, -2.0}));
  EXPECT_EQ(std::get<ArgValue::Complex>(parse_value("2j").v), (ArgValue::Complex{0, 2}));
  EXPECT_EQ(std::get<ArgValue::Complex>(parse_value("-1e-3+4e+2j").v), (ArgValue::Complex{-1e-3, 400}));
  EXPECT_EQ(format_value(ArgValue{ArgValue::Complex{1, -0.5}}), "1.0-0.5j");
  EXPECT_EQ(std::get<ArgValue::Word>(parse_value("adj").v).text, "adj");  // a word ending in j is a word
}

namespace {

// A seeded random value of every kind, nested at most `depth` lists deep.
ArgValue random_value(std::mt19937_64& rng, int depth) {
  auto pick = [&](int n) { return int(rng() % unsigned(n)); };
  auto real = [&] {
    const double d = std::ldexp(double(int64_t(rng() >> 11)) - double(1LL << 52), pick(120) - 60);
    return pick(10) == 0 ? std::trunc(d) : d;
  };
  switch (pick(depth > 0 ? 9 : 8)) {
    case 0:
      return ArgValue{ArgValue::None{}};
    case 1:
      return ArgValue{pick(2) == 1};
    case 2:
      return ArgValue{int64_t(rng())};
    case 3:
      return ArgValue{real()};
    case 4: {
      std::string text(std::size_t(pick(12)), ' ');
      for (auto& c : text) c = char(pick(4) == 0 ? pick(256) : "ab,[]\"' \\=-+.:j0e1"[pick(19)]);
      return ArgValue{ArgValue::Word{text}};
    }
    case 5:
      return ArgValue{ArgValue::Complex{real(), real()}};
    case 6: {
      TensorSpec t;
      t.dtype = pick(2) ? "f32" : "i64";
      t.shape = {pick(4) + 1, pick(4)};
      if (pick(3) == 0) t.device = "cpu";
      if (pick(4) == 0) t.distinct = pick(100);
      if (pick(5) == 0) t.same_as = pick(2) ? "self" : "query_2";
      return ArgValue{t};
    }
    case 7:
      return ArgValue{ArgValue::Word{pick(2) ? "mean" : "channels_last"}};
    default: {
      ArgList items(std::size_t(pick(4)));
      for (auto& item : items) item = random_value(rng, depth - 1);
      return ArgValue{items};
    }
  }
}

}  // namespace

TEST(ArgValue, PropertyEveryValueReadsBackAsItself) {
  std::mt19937_64 rng(31);
  for (int i = 0; i < 20000; ++i) {
    const ArgValue v = random_value(rng, 3);
    const std::string text = format_value(v);
    ASSERT_EQ(text.find('\n'), std::string::npos) << text;
    ArgValue back;
    ASSERT_NO_THROW(back = parse_value(text)) << text;
    ASSERT_EQ(back, v) << text;
    ASSERT_EQ(format_value(back), text);
  }
}

TEST(ArgValue, PropertyACallLineSplitsAndReadsBackAsItself) {
  // As an inventory writes a signature (format_args) and a spec file reads it (split_call_line).
  std::mt19937_64 rng(29);
  for (int i = 0; i < 5000; ++i) {
    std::vector<NamedArg> args;
    for (int k = 0; k < int(rng() % 4); ++k) args.push_back({fmt::format("a{}", k), random_value(rng, 2)});
    const std::string line = "aten::einsum " + format_args(args);
    const OpCall call = parse_call_line(line, "test");
    ASSERT_EQ(format_args(call.args), format_args(args)) << line;
  }
}

TEST(ArgValue, QuotedStringsInCallLinesAndSpecFiles) {
  // A space, a bracket or the other quote inside a string does not split the line.
  const auto t = split_call_line(R"(aten::einsum equation="b d, [d] e->'be'" operands=[f32[2,3], f32[3,4]])");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[1], R"(equation="b d, [d] e->'be'")");
  // YAML's quotes make a string as the language's do; a plain scalar with a comma is an error.
  const auto entries = parse_spec_text(
      "ops:\n"
      "  - op: aten::einsum\n"
      "    args: {equation: \"bd,de->be\", operands: [\"f32[2,3]\", \"f32[3,4]\"]}\n"
      "  - op: aten::einsum\n"
      "    args:\n"
      "      equation: bd,de->be\n",
      "s.yaml");
  ASSERT_EQ(entries.calls.size(), 1u);
  EXPECT_EQ(std::get<ArgValue::Word>(entries.calls[0].args[0].value.v).text, "bd,de->be");
  ASSERT_EQ(entries.errors.size(), 1u);
  EXPECT_NE(entries.errors[0].find("in quotes"), std::string::npos) << entries.errors[0];
}
