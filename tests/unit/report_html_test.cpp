// The HTML report (workflow/report_html.h, workflow/sweep_summary.h): which command wrote a
// result, the data the page reads, the escaping that keeps any input inside its <script>
// element, and the bounds on what is read and written. Fixtures: tests/data/report (real runs).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/estimate/call_work.h"
#include "core/io/output_file.h"
#include "workflow/report_html.h"
#include "workflow/sweep_summary.h"

namespace opcost {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const std::string kFixtures = std::string(OPCOST_TEST_DATA_DIR) + "/report/";
// A template of the page's shape, so that these tests do not depend on the real page's text.
constexpr const char* kTemplate =
    "<html><head><title>t</title></head><body>"
    "<script id=\"opcost-data\" type=\"application/json\">/*OPCOST_DATA*/</script>"
    "<script>const d = JSON.parse(document.getElementById('opcost-data').textContent);</script></body></html>";

json fixture(const std::string& name) {
  std::ifstream in(kFixtures + name);
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

// The text between the data element's opening tag and the first "</script" after it: what a
// browser takes as the element's content.
std::string data_element_text(const std::string& page) {
  const std::string open = "<script id=\"opcost-data\" type=\"application/json\">";
  const auto start = page.find(open);
  EXPECT_NE(start, std::string::npos);
  const auto from = start + open.size();
  return page.substr(from, page.find("</script", from) - from);
}

fs::path temp_dir() {
  fs::path dir = fs::temp_directory_path() / ("opcost-report-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

// What the message of `f`'s std::invalid_argument says ("" when nothing was thrown).
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(ReportKind, EachFixtureIsTheKindItsCommandWrote) {
  EXPECT_EQ(detect_report_kind(fixture("validate.json"), "v"), ReportKind::kValidate);
  EXPECT_EQ(detect_report_kind(fixture("predict.json"), "p"), ReportKind::kPredict);
  EXPECT_EQ(detect_report_kind(fixture("trace.json"), "t"), ReportKind::kTrace);
  EXPECT_EQ(detect_report_kind(fixture("sweep.json"), "s"), ReportKind::kSweep);
  EXPECT_EQ(detect_report_kind(fixture("measure.json"), "m"), ReportKind::kMeasure);
  EXPECT_EQ(detect_report_kind(fixture("measure.json")[0], "m"), ReportKind::kMeasure);  // one op's --json
}

TEST(ReportKind, ModelIsAValidateWithATarget) {
  json doc = fixture("validate.json");
  doc["settings"]["target"] = "0.9";  // as `opcost model --target 0.9` records it
  EXPECT_EQ(detect_report_kind(doc, "m"), ReportKind::kModel);
  doc["settings"]["target"] = 0.95;  // a number, as a Python dict may hold it
  EXPECT_EQ(detect_report_kind(doc, "m"), ReportKind::kModel);
}

TEST(ReportKind, AnythingElseIsRefusedNamingTheFileAndWhatIsRead) {
  for (const json& doc : {json::object({{"a", 1}}), json(3), json("text"), json::array({1, 2})}) {
    const std::string e = error_of([&] { detect_report_kind(doc, "in.json"); });
    EXPECT_NE(e.find("in.json: not a result opcost writes"), std::string::npos) << e;
    EXPECT_NE(e.find("db export --json"), std::string::npos) << e;
  }
  EXPECT_NE(error_of([] { detect_report_kind(json::array(), "e.json"); }).find("e.json: an empty array"),
            std::string::npos);
  // A document with variants but not compare's kind is no comparison.
  EXPECT_NE(error_of([] {
              detect_report_kind(json{{"variants", json::array()}}, "c.json");
            }).find("c.json: not a result opcost writes"),
            std::string::npos);
  EXPECT_EQ(detect_report_kind(json{{"kind", "compare"}, {"variants", json::array()}}, "c.json"), ReportKind::kCompare);
}

TEST(ReportParse, NotJsonIsOneLineNamingTheFile) {
  const std::string e = error_of([] { parse_result_json("{\"a\": 1,\n oops}", "bad.json"); });
  EXPECT_EQ(e.rfind("bad.json: not JSON", 0), 0u) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  EXPECT_NE(e.find("expected the JSON of opcost"), std::string::npos) << e;
  // A number beyond a double is the parser's out_of_range, not a syntax error: refused alike.
  EXPECT_EQ(error_of([] { parse_result_json("[1e309]", "big.json"); }).rfind("big.json: not JSON", 0), 0u);
}

TEST(ReportParse, NestingIsBoundedBeforeParsing) {
  auto nested = [](std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  EXPECT_NO_THROW(parse_result_json(nested(kMaxReportJsonDepth), "ok.json"));
  const std::string e = error_of([&] { parse_result_json(nested(kMaxReportJsonDepth + 1), "deep.json"); });
  EXPECT_NE(e.find("deep.json: JSON nested deeper than"), std::string::npos) << e;
  // Brackets inside strings are text, not nesting.
  EXPECT_NO_THROW(parse_result_json("[\"" + std::string(1000, '[') + "\\\"\"]", "s.json"));
}

TEST(ReportData, DocumentsGoInAsTheyAreAndAMeasurementAsAnArray) {
  const json v = fixture("validate.json");
  const json env = report_data(v, ReportKind::kValidate, "validate.json");
  EXPECT_EQ(env["kind"], "validate");
  EXPECT_EQ(env["source"], "validate.json");
  EXPECT_EQ(env["data"], v);
  EXPECT_TRUE(env["aggregated"].is_null());
  const json m = fixture("measure.json")[1];
  const json menv = report_data(m, ReportKind::kMeasure, "m.json");
  ASSERT_TRUE(menv["data"].is_array());
  EXPECT_EQ(menv["data"].size(), 1u);
  EXPECT_EQ(menv["data"][0], m);
}

TEST(ReportHtml, NoInputStringCanLeaveTheDataElement) {
  json doc = fixture("measure.json")[0];
  const std::string hostile = "</script><script>alert(1)</script><!-- <script> & \xE2\x80\xA8 \xE2\x80\xA9 </SCRIPT >";
  doc["args"] = hostile;
  doc["op"] = "aten::x</script >";
  const json env = report_data(doc, ReportKind::kMeasure, "a</script>.json");
  const std::string page = render_report_html(kTemplate, env);
  const std::string inside = data_element_text(page);
  for (const char* s : {"<", ">", "&", "\xE2\x80\xA8", "\xE2\x80\xA9"})
    EXPECT_EQ(inside.find(s), std::string::npos) << s;
  // The element holds the whole envelope, which reads back unchanged: the escapes mean the same.
  EXPECT_EQ(json::parse(inside), env);
  EXPECT_EQ(json::parse(inside)["data"][0]["args"], hostile);
  // The template's own second script is still there, after the data.
  EXPECT_NE(page.find("<script>const d"), std::string::npos);
}

TEST(ReportHtml, TheTemplateMustHoldTheTokenOnce) {
  const json env = {{"kind", "trace"}};
  EXPECT_THROW(render_report_html("<html></html>", env), std::logic_error);
  EXPECT_THROW(render_report_html("/*OPCOST_DATA*/ /*OPCOST_DATA*/", env), std::logic_error);
  EXPECT_EQ(render_report_html("a/*OPCOST_DATA*/b", env), "a" + env.dump() + "b");
  // The page compiled into opcost (workflow/report_template.html).
  const std::string_view page = report_template();
  const auto at = page.find(kReportDataToken);
  ASSERT_NE(at, std::string_view::npos);
  EXPECT_EQ(page.find(kReportDataToken, at + 1), std::string_view::npos);
  EXPECT_NE(page.find("id=\"opcost-data\""), std::string_view::npos);
}

TEST(SweepSummary, PerAxisValueFiguresMatchTheRows) {
  const json rows = fixture("sweep.json");
  const json s = summarize_sweep(rows);
  EXPECT_EQ(s["rows"], rows.size());
  EXPECT_EQ(s["rows_with_axes"], rows.size());
  // Recomputed here from the rows: mean, min and max of the time per call for each cin.
  std::map<long, std::vector<double>> by_cin;
  for (const auto& r : rows) by_cin[r["axes"]["cin"].get<long>()].push_back(r["time_us"]["mean"].get<double>());
  const json& cin = s["by_axis"]["cin"];
  ASSERT_EQ(cin.size(), by_cin.size());
  std::size_t i = 0;
  for (const auto& [value, times] : by_cin) {  // ascending, as the summary sorts numbers
    const json& g = cin[i++];
    EXPECT_EQ(g["value"], value);
    EXPECT_EQ(g["count"], times.size());
    double sum = 0;
    for (double t : times) sum += t;
    EXPECT_NEAR(g["time_us"]["mean"].get<double>(), sum / double(times.size()), 1e-9 * sum);
    EXPECT_EQ(g["time_us"]["min"].get<double>(), *std::min_element(times.begin(), times.end()));
    EXPECT_EQ(g["time_us"]["max"].get<double>(), *std::max_element(times.begin(), times.end()));
    EXPECT_EQ(g["energy_mJ"]["count"], times.size());  // every row of this sweep has its energy
  }
  // A string axis sorts after numbers, by its text.
  EXPECT_EQ(s["by_axis"]["dtype"][0]["value"], "bf16");
  // Every pair of the first six axes gets a heatmap whose counts add up to the rows having both.
  const std::size_t axes = std::min<std::size_t>(s["axes"].size(), kSweepHeatmapMaxAxes);
  EXPECT_EQ(s["heatmaps"].size() + s["heatmaps_left_out"].size(), axes * (axes - 1) / 2);
  std::size_t cells = 0;
  for (const auto& c : s["heatmaps"][0]["cells"]) cells += c["count"].get<std::size_t>();
  EXPECT_EQ(cells, rows.size());
  // Every conv2d row of this sweep is a roofline point of its own, with its time.
  ASSERT_EQ(s["roofline_points"].size(), rows.size());
  EXPECT_EQ(s["roofline_points"][0]["args"], rows[0]["args"]);
  EXPECT_EQ(s["roofline_points"][0]["time_us"], rows[0]["time_us"]["mean"]);
  EXPECT_EQ(s["roofline_points_left_out"], 0);
}

TEST(SweepSummary, RooflinePointsAreDistinctCountedCallsWithTheirWorkAveragedAndBounded) {
  auto row = [](const std::string& op, const std::string& args, double us) {
    return json{{"op", op}, {"args", args}, {"axes", {{"n", 1}}}, {"time_us", {{"mean", us}}}};
  };
  json rows = json::array({row("aten::mm", "self=f32[4,4] mat2=f32[4,4]", 2.0),
                           row("aten::topk", "self=f32[4] k=1", 1.0),  // work not counted
                           row("aten::mm", "self=f32[4,4] mat2=f32[4,4]", 4.0),
                           row("aten::linear", "input=f32[2,4] weight=f32[3,4]", -1.0)});  // no real time
  json s = summarize_sweep(rows);
  ASSERT_EQ(s["roofline_points"].size(), 1u);
  EXPECT_EQ(s["roofline_points"][0]["time_us"], 3.0);  // the mean of the two rows of one call
  EXPECT_EQ(s["roofline_points"][0]["rows"], 2);
  // Its work as core/estimate/call_work counts it: 2·4·4·4 FLOPs, 3·16 floats.
  EXPECT_EQ(s["roofline_points"][0]["work"]["family"], "matmul");
  EXPECT_EQ(s["roofline_points"][0]["work"]["flops"], 128.0);
  EXPECT_EQ(s["roofline_points"][0]["work"]["bytes"], 192.0);
  // Beyond the bound, distinct calls are counted as left out, each once however many rows it has.
  rows = json::array();
  for (std::size_t i = 0; i < kSweepRooflineMaxPoints + 3; ++i)
    for (int twice = 0; twice < 2; ++twice)
      rows.push_back(row("aten::mm", fmt::format("self=f32[{},4] mat2=f32[4,4]", i + 1), 1.0));
  s = summarize_sweep(rows);
  EXPECT_EQ(s["roofline_points"].size(), kSweepRooflineMaxPoints);
  EXPECT_EQ(s["roofline_points_left_out"], 3);
}

TEST(SweepSummary, SeveralOperatorsWithoutAnOpAxisGetOne) {
  json rows = fixture("sweep.json");
  rows[0]["op"] = "aten::linear";  // as a sweep over two operators' grids exports them
  const json s = summarize_sweep(rows);
  EXPECT_EQ(s["axes"][0], "op");
  EXPECT_EQ(s["by_axis"]["op"].size(), 2u);
}

TEST(SweepSummary, RowsOfOtherShapesCountWithoutFigures) {
  const json rows = json::array({json{{"op", "a"}, {"args", ""}, {"axes", {{"n", 1}}}, {"time_us", "fast"}},
                                 json{{"op", "a"}, {"args", ""}, {"axes", nullptr}}, json(7)});
  const json s = summarize_sweep(rows);
  EXPECT_EQ(s["rows"], 3);
  EXPECT_EQ(s["by_axis"]["n"][0]["count"], 1);
  EXPECT_TRUE(s["by_axis"]["n"][0]["time_us"].is_null());
}

TEST(ReportData, ALargeSweepIsAggregatedAndStaysSmall) {
  const json real = fixture("sweep.json");
  json rows = json::array();
  for (std::size_t i = 0; rows.size() < 10000; ++i) {  // the real rows again, over a new axis
    json r = real[i % real.size()];
    r["axes"]["repeat"] = i / real.size();
    rows.push_back(std::move(r));
  }
  const json env = report_data(rows, ReportKind::kSweep, "big.json");
  EXPECT_TRUE(env["data"].is_null());
  EXPECT_FALSE(env["aggregated"]["inlined_rows"].get<bool>());
  EXPECT_NE(env["aggregated"]["note"].get<std::string>().find("10000 rows"), std::string::npos);
  EXPECT_EQ(env["aggregated"]["by_axis"]["repeat"].size(), (10000 + real.size() - 1) / real.size());
  const std::string page = render_report_html(report_template(), env);
  EXPECT_LT(page.size(), std::size_t{10} << 20);
  // Up to kSweepRowsInlined rows go in too, trimmed to what the page draws.
  const json small = report_data(real, ReportKind::kSweep, "s.json");
  ASSERT_EQ(small["data"].size(), real.size());
  EXPECT_EQ(small["data"][0]["time_us"]["mean"], real[0]["time_us"]["mean"]);
  EXPECT_FALSE(small["data"][0].contains("method"));
  // Each embedded row carries its work, so that the page draws the roofline without counting.
  const auto work = call_work(real[0]["op"].get<std::string>(), real[0]["args"].get<std::string>());
  ASSERT_TRUE(work);
  EXPECT_EQ(small["data"][0]["work"]["flops"], work->flops);
  EXPECT_EQ(small["data"][0]["work"]["family"], "convolution");
  // The page draws embedded rows' roofline from the rows: the summary's points would repeat them.
  EXPECT_FALSE(small["aggregated"].contains("roofline_points"));
  EXPECT_EQ(env["aggregated"]["roofline_points"].size(), real.size());  // the big one: one per distinct call
}

TEST(WriteReport, WritesThePageAndRefusesItsInputAsOutput) {
  const fs::path dir = temp_dir();
  const std::string in = kFixtures + "trace.json", out = (dir / "trace.html").string();
  EXPECT_EQ(write_report(in, out), ReportKind::kTrace);
  std::ifstream f(out);
  std::stringstream page;
  page << f.rdbuf();
  const json env = json::parse(data_element_text(page.str()));
  EXPECT_EQ(env["source"], "trace.json");
  EXPECT_EQ(env["data"], fixture("trace.json"));
  // The same file by another name (a symbolic link) is still the input.
  fs::copy_file(in, dir / "copy.json", fs::copy_options::overwrite_existing);
  fs::remove(dir / "link.json");
  fs::create_symlink(dir / "copy.json", dir / "link.json");
  const std::string e = error_of([&] { write_report((dir / "copy.json").string(), (dir / "link.json").string()); });
  EXPECT_NE(e.find("-o"), std::string::npos) << e;
  EXPECT_EQ(fixture("trace.json"), json::parse(std::ifstream(dir / "copy.json")));  // untouched
  EXPECT_THROW(write_report(in, (dir / "no-such-dir" / "x.html").string()), WriteError);
  fs::remove_all(dir);
}

TEST(WriteReport, ALargerFileIsRefusedUnread) {
  const fs::path dir = temp_dir();
  const fs::path big = dir / "big.json";
  { std::ofstream(big) << "[]"; }
  fs::resize_file(big, kMaxReportInputBytes + 1);  // sparse: no disk, no memory
  const std::string e = error_of([&] { write_report(big.string(), (dir / "big.html").string()); });
  EXPECT_NE(e.find("big.json: the result file is larger than 256 MiB"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(dir / "big.html"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace opcost
