#include <gtest/gtest.h>

#include "core/measure/watchdog.h"
#include "core/text/text.h"

using namespace opcost;

TEST(Text, ClosestSuggestsLikelyTypos) {
  const std::vector<std::string> commands = {"measure", "inventory", "predict", "validate", "model", "models", "db"};
  EXPECT_EQ(closest("measur", commands, 1), (std::vector<std::string>{"measure"}));
  EXPECT_EQ(closest("valdiate", commands, 1), (std::vector<std::string>{"validate"}));
  EXPECT_TRUE(closest("completely-different", commands).empty());
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

TEST(Text, PrintableEscapesWhatWouldGarbleATerminal) {
  EXPECT_EQ(printable("plain é text\n\tok"), "plain é text\n\tok");  // UTF-8, newline and tab kept
  EXPECT_EQ(printable("a\xff"
                      "b"),
            "a\\xffb");
  EXPECT_EQ(printable("\x1b[31mred"), "\\x1b[31mred");
  EXPECT_EQ(printable("\xc3"), "\\xc3");           // a cut multi-byte sequence
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");  // overlong
}

TEST(Text, ElideCutsLongTextKeepingBothEnds) {
  EXPECT_EQ(elide("short", 80), "short");
  const std::string cut = elide(std::string(1000, 'a') + std::string(1000, 'z'), 40);
  EXPECT_LE(cut.size(), 40u);
  EXPECT_EQ(cut.front(), 'a');
  EXPECT_EQ(cut.back(), 'z');
  EXPECT_NE(cut.find("…"), std::string::npos);
  // Never inside a UTF-8 character: printable() then has nothing to escape.
  std::string e;
  for (int i = 0; i < 200; ++i) e += "é";
  const std::string cut_e = elide(e, 42);  // an odd cut on both sides
  EXPECT_LE(cut_e.size(), 42u);
  EXPECT_EQ(printable(cut_e), cut_e);
  // A 10 MB echo stays short.
  EXPECT_LE(elide(std::string(10'000'000, 'x'), 2000).size(), 2000u);
}

// What every parser's message echoes user text (or yaml-cpp's message) through: one line, short.
TEST(Text, PrintableOneLineIsOneShortLineWhateverTheText) {
  EXPECT_EQ(printable_one_line("aten::relu"), "aten::relu");
  EXPECT_EQ(printable_one_line("plain é text"), "plain é text");  // UTF-8 kept
  // yaml-cpp's "unknown escape character: " followed by the character itself.
  EXPECT_EQ(printable_one_line("unknown escape character: \n"), "unknown escape character: \\n");
  EXPECT_EQ(printable_one_line("a\tb\r\nc"), "a\\tb\\r\\nc");
  EXPECT_EQ(printable_one_line(std::string("nul\0\x1b[31m\x7f\xff", 11)), "nul\\x00\\x1b[31m\\x7f\\xff");
  // A 16 KB word (an unknown tensor modifier, a grid's op) is cut to about max_chars...
  const std::string word = printable_one_line("r" + std::string(16000, 'n'), 40);
  EXPECT_LE(word.size(), 40u);
  EXPECT_NE(word.find("…"), std::string::npos);
  EXPECT_EQ(word.front(), 'r');
  // ...and even all control characters stay within 4 bytes per byte kept, on one line.
  const std::string controls = printable_one_line(std::string(1'000'000, '\n') + std::string(1000, '\x01'), 80);
  EXPECT_LE(controls.size(), 4u * 80u);
  EXPECT_EQ(controls.find_first_of("\n\r"), std::string::npos);
  EXPECT_EQ(controls.rfind("\\n", 0), 0u) << controls;
  EXPECT_NE(controls.find("\\x01"), std::string::npos) << controls;
}

TEST(Text, ClosestIgnoresWordsNoTypoExplains) {
  // A 10 MB word against every candidate would take minutes: it gets no suggestion at once.
  EXPECT_TRUE(closest(std::string(10'000'000, 'm'), {"measure", "models"}).empty());
}

TEST(Text, UserMessagesLoseLibTorchBacktraces) {
  const std::string torch_error =
      "DefaultCPUAllocator: not enough memory: you tried to allocate 40000000000 bytes.\n"
      "Exception raised from malloc at alloc_cpu.cpp:1 (most recent call first):\n"
      "frame #0: c10::Error::Error(...) + 0x1\nframe #1: ...";
  EXPECT_EQ(user_message(torch_error),
            "DefaultCPUAllocator: not enough memory: you tried to allocate 40000000000 bytes.");
  EXPECT_EQ(user_message("two\n  lines kept"), "two\n  lines kept");
}

TEST(Text, FittedLabelsStayDistinct) {
  const std::string a = "aten::convolution input=f32[32,64,56,56] weight=f32[64,64,3,3] stride=[1,1] padding=[1,1]";
  const std::string b = "aten::convolution input=f32[32,64,56,56] weight=f32[64,64,3,3] stride=[2,2] padding=[1,1]";
  EXPECT_EQ(fit_label("short", 58), "short");
  const auto fa = fit_label(a, 58), fb = fit_label(b, 58);
  EXPECT_NE(fa, fb);  // cut at the same place, told apart by their tags
  EXPECT_EQ(fa.substr(0, 40), a.substr(0, 40));
  EXPECT_NE(fa.find("…"), std::string::npos);
  EXPECT_EQ(fit_label(a, 58), fa);  // stable
}

TEST(Text, BytesReadNaturally) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(40e9), "37.3 GiB");
}

TEST(Text, DurationsReadNaturally) {
  EXPECT_EQ(format_duration(12.4), "12s");
  EXPECT_EQ(format_duration(185), "3m 05s");
  EXPECT_EQ(format_duration(3720), "1h 02m");
  EXPECT_EQ(format_duration(-1), "0s");
}

TEST(Watchdog, ReportsProgressLateAndAbandonsFarPastItsBudget) {
  double now = 0;
  std::vector<std::string> lines;
  Watchdog::Options o;
  o.budget_s = 2;
  o.abandon_factor = 10;
  Watchdog w(
      "aten::addmm self=bf16[4]", o, [&](const std::string& l) { lines.push_back(l); }, [&] { return now; });
  now = 1;
  w.check("timing", 1, "samples");
  EXPECT_TRUE(lines.empty());  // quiet for the first seconds
  now = 3.5;
  w.check("timing", 2, "samples");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("aten::addmm self=bf16[4]: timing, 2 samples, 4 s"), std::string::npos) << lines[0];
  now = 3.9;
  w.check("timing");
  EXPECT_EQ(lines.size(), 1u);  // at most once a second
  now = 19.9;
  EXPECT_NO_THROW(w.check("timing"));
  now = 20.1;
  try {
    w.check("measuring energy", 3, "windows");
    FAIL();
  } catch (const MeasurementAbandoned& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("abandoned while measuring energy after 20 s, 10× its budget of 2.0 s"), std::string::npos)
        << what;
    EXPECT_NE(what.find("--max-time"), std::string::npos) << what;
  }
}
