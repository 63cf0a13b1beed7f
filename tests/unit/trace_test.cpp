#include <gtest/gtest.h>

#include <zlib.h>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/io/output_file.h"
#include "core/trace/chrome_trace.h"
#include "core/trace/table.h"

using namespace opcost;

namespace {

// One step on thread 1: layer "block" [0, 100] holding "block.fc" [10, 60] (aten::linear
// [12, 50], whose nested aten::addmm had correlation 11, and aten::relu [52, 58]) and a call
// outside any layer (aten::flatten [70, 80]); autograd's thread 2 runs aten::mm [20, 30].
// Device: a kernel of the addmm, one of the relu, one of the mm, and one whose launcher is
// not a call of the trace.
TraceRun sample_run() {
  TraceRun run;
  run.source = "test";
  run.device = "test GPU";
  run.steps = {{"ProfilerStep#0", 1, 0, 200}};
  run.layers = {{"block.fc", 1, 10, 60}, {"block", 1, 0, 100}};  // out of order on purpose
  OpActivity linear{"aten::linear", "[4, 8], [2, 8]", 1, 12, 50, {10, 11}, 128};
  OpActivity relu{"aten::relu", "[4, 2]", 1, 52, 58, {12}};
  OpActivity flatten{"aten::flatten", "", 1, 70, 80, {13}};
  OpActivity mm{"aten::mm", "", 2, 20, 30, {14}};
  run.ops = {relu, linear, flatten, mm};
  run.device_activities = {{"gemm", "kernel", 0, 7, 100, 140, 11},
                           {"relu_kernel", "kernel", 0, 7, 150, 155, 12},
                           {"mm_kernel", "kernel", 0, 7, 160, 180, 14},
                           {"stray", "memcpy", 0, 8, 181, 190, 99}};
  run.counters = {{"GPU power (W)", 0, {{0, 120.0}, {100, 310.5}, {200, 305.0}}}};
  tie_activities(run);
  return run;
}

const OpActivity& op_named(const TraceRun& run, const std::string& name) {
  for (const auto& o : run.ops)
    if (o.name == name) return o;
  throw std::runtime_error("no " + name);
}

}  // namespace

TEST(TraceTie, CallsGetTheirInnermostLayerAndKernelsTheirCall) {
  const TraceRun run = sample_run();
  ASSERT_EQ(run.layers[0].name, "block");  // sorted by start
  EXPECT_EQ(run.layers[1].depth, 1);
  EXPECT_EQ(run.layers[1].parent, 0);
  EXPECT_EQ(run.layers[op_named(run, "aten::linear").layer].name, "block.fc");
  EXPECT_EQ(run.layers[op_named(run, "aten::relu").layer].name, "block.fc");
  EXPECT_EQ(op_named(run, "aten::flatten").layer, 0);  // inside block, outside block.fc
  EXPECT_EQ(op_named(run, "aten::mm").layer, -1);      // another thread: no layer
  EXPECT_EQ(op_named(run, "aten::mm").step, 0);        // ...but in the step
  // The nested addmm's kernel is aten::linear's.
  EXPECT_EQ(run.ops[run.device_activities[0].op].name, "aten::linear");
  EXPECT_EQ(run.ops[run.device_activities[1].op].name, "aten::relu");
  EXPECT_EQ(run.device_activities[3].op, -1);
  ASSERT_EQ(run.untied.size(), 1u);
  EXPECT_EQ(run.untied.begin()->second, 1u);
}

TEST(TraceTie, ABackwardCallTakesTheLayerOfTheForwardCallThatMadeItsNode) {
  TraceRun run = sample_run();
  for (auto& op : run.ops)
    if (op.name == "aten::linear") op.forward_sequence = {5};
  run.backward_ranges = {{2, 18, 32, 5}};  // autograd's thread runs node 5's backward around aten::mm
  tie_activities(run);
  EXPECT_EQ(op_named(run, "aten::mm").backward_of, 5);
  EXPECT_EQ(run.layers[op_named(run, "aten::mm").layer].name, "block.fc");
  EXPECT_EQ(layer_table(run).rows.size(), 2u);  // no "(no layer)" row now
}

TEST(TraceTable, OperatorRowsSumToTheTotalAndUntiedTimeIsKeptApart) {
  const TraceRun run = sample_run();
  const TraceTable t = op_table(run, false);
  ASSERT_EQ(t.rows.size(), 4u);
  double gpu = 0, cpu = 0;
  std::size_t calls = 0;
  for (const auto& r : t.rows) {
    gpu += r.gpu_self_us;
    cpu += r.cpu_self_us;
    calls += r.calls;
  }
  EXPECT_DOUBLE_EQ(t.total.gpu_self_us, gpu);
  EXPECT_DOUBLE_EQ(t.total.cpu_self_us, cpu);
  EXPECT_EQ(t.total.calls, calls);
  EXPECT_DOUBLE_EQ(t.total.gpu_self_us, 0.065);  // 40 + 5 + 20 ns
  EXPECT_DOUBLE_EQ(t.untied_gpu_us, 0.009);
  EXPECT_DOUBLE_EQ(t.device_busy_us, t.total.gpu_self_us + t.untied_gpu_us);
  EXPECT_EQ(op_table(run, true).rows[0].shapes, "[4, 8], [2, 8]");  // rows in first-call order
  const std::string text = render_table(t, "gpu");
  EXPECT_LT(text.find("aten::linear"), text.find("aten::mm"));  // 40 ns before 20 ns
  EXPECT_THROW(render_table(t, "energy"), std::invalid_argument);
}

TEST(TraceTable, LayerTotalsHoldTheirChildrenAndSelfColumnsSumToTheTotal) {
  const TraceRun run = sample_run();
  const TraceTable t = layer_table(run);
  std::map<std::string, TraceRow> rows;
  for (const auto& r : t.rows) rows[r.name] = r;
  ASSERT_EQ(rows.size(), 3u);  // block, block.fc, (no layer)
  EXPECT_DOUBLE_EQ(rows["block.fc"].gpu_self_us, 0.045);
  EXPECT_DOUBLE_EQ(rows["block"].gpu_self_us, 0);
  EXPECT_DOUBLE_EQ(rows["block"].gpu_total_us, 0.045);
  EXPECT_DOUBLE_EQ(rows["block"].cpu_total_us, 0.1);
  EXPECT_DOUBLE_EQ(rows["block"].cpu_self_us, 0.05);  // less block.fc's 50 ns
  EXPECT_DOUBLE_EQ(rows["(no layer)"].gpu_self_us, 0.02);
  EXPECT_DOUBLE_EQ(t.total.gpu_self_us,
                   rows["block"].gpu_self_us + rows["block.fc"].gpu_self_us + rows["(no layer)"].gpu_self_us);
}

TEST(ChromeTrace, ParsesBackWithNestedLayersAndAFlowPerTiedKernel) {
  const TraceRun run = sample_run();
  std::string doc;
  write_chrome_trace(run, [&](std::string_view s) { doc += s; });
  const auto j = nlohmann::json::parse(doc);
  std::size_t layers = 0, ops = 0, kernels = 0, starts = 0, finishes = 0;
  for (const auto& e : j["traceEvents"]) {
    const std::string ph = e["ph"], cat = e.value("cat", "");
    if (ph == "X" && cat == "layer") ++layers;
    if (ph == "X" && cat == "cpu_op") ++ops;
    if (ph == "X" && (cat == "kernel" || cat == "memcpy")) ++kernels;
    if (ph == "s") ++starts;
    if (ph == "f") ++finishes;
    if (ph == "X" && e["name"] == "aten::linear") EXPECT_EQ(e["args"]["layer"], "block.fc");
  }
  EXPECT_EQ(layers, 2u);
  EXPECT_EQ(ops, 4u);
  std::vector<double> watts;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "C" && e["name"] == "GPU power (W)") watts.push_back(e["args"]["value"]);
  EXPECT_EQ(watts, (std::vector<double>{120.0, 310.5, 305.0}));
  EXPECT_EQ(kernels, 4u);
  EXPECT_EQ(starts, 3u);  // the stray memcpy has no arrow
  EXPECT_EQ(finishes, 3u);
  // --min-duration leaves the short calls out, but keeps those that launched a kept kernel.
  doc.clear();
  write_chrome_trace(
      run, [&](std::string_view s) { doc += s; }, ChromeTraceOptions{0.015});
  const auto short_ones = nlohmann::json::parse(doc);
  std::set<std::string> names;
  for (const auto& e : short_ones["traceEvents"])
    if (e["ph"] == "X") names.insert(e["name"].get<std::string>());
  EXPECT_TRUE(names.count("aten::linear"));  // 38 ns
  EXPECT_TRUE(names.count("aten::mm"));      // 10 ns, but its kernel is 20 ns
  EXPECT_FALSE(names.count("aten::relu"));   // 6 ns, and its kernel 5 ns
}

TEST(ChromeTrace, AGzipFileReadsBackAsTheSameDocument) {
  const TraceRun run = sample_run();
  const auto path =
      std::filesystem::temp_directory_path() / ("opcost-trace-" + std::to_string(::getpid()) + ".json.gz");
  save_chrome_trace(run, path.string());
  gzFile gz = gzopen(path.string().c_str(), "rb");
  ASSERT_NE(gz, nullptr);
  std::string doc;
  char buf[4096];
  for (int n; (n = gzread(gz, buf, sizeof buf)) > 0;) doc.append(buf, std::size_t(n));
  gzclose(gz);
  std::filesystem::remove(path);
  std::string plain;
  write_chrome_trace(run, [&](std::string_view s) { plain += s; });
  EXPECT_EQ(doc, plain);
  EXPECT_THROW(save_chrome_trace(run, "/nonexistent-dir/x.json.gz"), WriteError);
  EXPECT_THROW(save_chrome_trace(run, "/nonexistent-dir/x.json"), WriteError);
}
