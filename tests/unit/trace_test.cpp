#include <gtest/gtest.h>

#include <sqlite3.h>
#include <zlib.h>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/io/output_file.h"
#include "core/trace/chrome_trace.h"
#include "core/trace/energy_attribution.h"
#include "core/trace/event_chunks.h"
#include "core/trace/perfetto_trace.h"
#include "core/trace/table.h"
#include "core/trace/trace_bytes.h"
#include "core/trace/trace_file.h"
#include "core/trace/trace_import.h"

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

TEST(TraceTie, ActivitiesWithoutCorrelationAreInferredFromTheSynchronisations) {
  // Thread 1: calls A [0, 10] and B [12, 20] in layer L [0, 22], a synchronisation [21, 40],
  // call C [41, 50], a synchronisation [51, 70]. No device activity has a correlation id.
  TraceRun run;
  run.layers = {{"L", 1, 0, 22}};
  run.ops = {{"aten::a", "", 1, 0, 10}, {"aten::b", "", 1, 12, 20}, {"aten::c", "", 1, 41, 50}};
  run.synchronizations = {{"cudaDeviceSynchronize", 1, 21, 40}, {"cudaDeviceSynchronize", 1, 51, 70}};
  run.device_activities = {{"k1", "kernel", 0, 7, 15, 35},   // waited for by the first: A or B
                           {"k2", "kernel", 0, 7, 52, 60},   // by the second: C alone
                           {"k3", "kernel", 0, 7, 80, 90}};  // after the last synchronisation
  tie_activities(run);
  ASSERT_EQ(run.ops.size(), 4u);
  const auto& k1 = run.device_activities[0];
  ASSERT_GE(k1.op, 0);
  EXPECT_TRUE(k1.inferred);
  EXPECT_EQ(run.ops[k1.op].name, "(between synchronisations)");
  EXPECT_TRUE(run.ops[k1.op].inferred);
  EXPECT_EQ(run.ops[k1.op].layer, 0);  // the innermost layer around A and B
  ASSERT_GE(run.device_activities[1].op, 0);
  EXPECT_EQ(run.ops[run.device_activities[1].op].name, "aten::c");
  EXPECT_EQ(run.device_activities[2].op, -1);
  EXPECT_EQ(run.untied.begin()->first, "no correlation id, and no host call between the synchronisations around it");

  const TraceTable t = op_table(run, false);
  std::map<std::string, TraceRow> rows;
  for (const auto& r : t.rows) rows[r.name] = r;
  EXPECT_EQ(rows["(between synchronisations)"].calls, 0u);  // it stands for A and B, counted in their rows
  EXPECT_DOUBLE_EQ(rows["(between synchronisations)"].cpu_total_us, 0);
  EXPECT_DOUBLE_EQ(rows["(between synchronisations)"].gpu_self_us, 0.02);
  EXPECT_EQ(t.total.calls, 3u);
  EXPECT_EQ(t.total.inferred, 2u);
  const std::string text = render_table(t, "gpu");
  EXPECT_NE(text.find("aten::c *"), std::string::npos) << text;
  EXPECT_NE(text.find("* inferred: 2 device activities"), std::string::npos) << text;
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
  EXPECT_THROW(render_table(t, "joules"), std::invalid_argument);
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

namespace {

// One step [0, 10 µs] on one thread: layer "net" holding "net.a". Call A (in net.a) runs a
// kernel [1, 4] µs, B (in net) [5, 6], C (in net) [8, 9]; a copy tied to no call runs [6.5, 7].
TraceRun energy_run() {
  TraceRun run;
  run.steps = {{"ProfilerStep#0", 1, 0, 10000}};
  run.layers = {{"net", 1, 0, 9500}, {"net.a", 1, 100, 900}};
  run.ops = {
      {"aten::a", "", 1, 200, 800, {1}}, {"aten::b", "", 1, 1000, 1200, {2}}, {"aten::c", "", 1, 1300, 1400, {3}}};
  run.device_activities = {{"ka", "kernel", 0, 7, 1000, 4000, 1},
                           {"kb", "kernel", 0, 7, 5000, 6000, 2},
                           {"copy", "memcpy", 0, 7, 6500, 7000, 99},
                           {"kc", "kernel", 0, 7, 8000, 9000, 3}};
  tie_activities(run);
  return run;
}

}  // namespace

TEST(TraceEnergy, KernelsAtTheirOperatorsPowerAndIdleTimeScaledToTheUntracedStep) {
  TraceRun run = energy_run();
  // A and B share a measurement (their errors add); C has none.
  const std::vector<CallPower> power = {{300, 30, 1}, {200, 10, 1}, {0, 0, -1, "its operator is not measured"}};
  StepMeasurement step;
  step.energy_mJ = 2.0;
  step.energy_ci_mJ = 0.1;
  step.energy_loop_time_us = 12;  // busy 5.5 µs (kernels and the copy): 6.5 µs idle, traced 3.5 µs
  run.energy = attribute_energy(run, power, 100, 5, step);
  const EnergyAttribution& e = *run.energy;
  EXPECT_NEAR(e.kernels_mJ, 3 * 0.3 + 1 * 0.2, 1e-12);  // µs × W = µJ
  EXPECT_NEAR(e.gap_scale, 6.5 / 3.5, 1e-12);
  EXPECT_NEAR(e.gaps_mJ, 6.5 * 0.1, 1e-12);
  // Idle time before a kernel is its call's; the idle before the untied copy passes to C.
  EXPECT_NEAR(e.calls[0].gap_us, 1.0 * e.gap_scale, 1e-12);
  EXPECT_NEAR(e.calls[1].gap_us, 1.0 * e.gap_scale, 1e-12);
  EXPECT_NEAR(e.calls[2].gap_us, 1.5 * e.gap_scale, 1e-12);
  EXPECT_NEAR(e.unattributed_us, 1.5, 1e-12);  // C's kernel and the copy
  EXPECT_EQ(e.calls_without_power.at("its operator is not measured"), 1u);
  EXPECT_NEAR(e.error(), (0.9 + 0.2 + 0.65) / 2.0 - 1, 1e-12);

  const TraceTable ops = op_table(run, false);
  double sum = 0;
  for (const auto& r : ops.rows) sum += r.energy_self_mJ;
  EXPECT_NEAR(ops.total.energy_total_mJ, sum, 1e-12);
  EXPECT_NEAR(sum, e.attributed_mJ(), 1e-12);
  // One measurement's error repeats: 0.09 + 0.01 added, then the idle power's 6.5 µs × 5 W.
  EXPECT_NEAR(ops.total.energy_total_ci_mJ, 0.1 + 6.5 * 5e-3, 1e-12);
  const TraceRow& a = ops.rows[0];
  EXPECT_NEAR(*a.power_W(), a.energy_self_mJ / (3 + a.idle_self_us) * 1e3, 1e-9);

  const TraceTable layers = layer_table(run);
  std::map<std::string, TraceRow> rows;
  for (const auto& r : layers.rows) rows[r.name] = r;
  EXPECT_NEAR(rows["net"].energy_total_mJ, e.attributed_mJ(), 1e-12);
  EXPECT_NEAR(rows["net.a"].energy_self_mJ, e.calls[0].mJ(), 1e-12);
  EXPECT_NEAR(rows["net"].energy_self_mJ + rows["net.a"].energy_self_mJ, layers.total.energy_total_mJ, 1e-12);
  const std::string text = render_table(layers, "energy");
  EXPECT_LT(text.find("net "), text.find("net.a"));
  EXPECT_NE(text.find("-12.5%, not scaled"), std::string::npos) << text;
  EXPECT_NE(text.find("1 calls: its operator is not measured"), std::string::npos) << text;
  const auto j = to_json(layers);
  EXPECT_NEAR(j["energy"]["error"].get<double>(), -0.125, 1e-12);
  // The Chrome trace gives each call its energy with its interval: A's operator's 0.09 mJ and
  // its idle time at the idle power's 5 W.
  std::string doc;
  write_chrome_trace(run, select_for_file(run, {}), [&](std::string_view s) { doc += s; });
  int seen = 0;
  const auto trace = nlohmann::json::parse(doc);
  for (const auto& ev : trace["traceEvents"])
    if (ev.value("cat", "") == "cpu_op" && ev["args"].contains("energy uJ") && ev["name"] == run.ops[0].name) {
      ++seen;
      EXPECT_NEAR(ev["args"]["energy uJ"].get<double>(), e.calls[0].mJ() * 1e3, 1e-9);
      EXPECT_NEAR(ev["args"]["energy ci95 uJ"].get<double>(), (0.09 + e.calls[0].gap_us * 5e-3) * 1e3, 1e-9);
    }
  EXPECT_EQ(seen, 1);
}

TEST(TraceEnergy, AStepWithoutEnergyOrAMismatchedPowerListIsRefused) {
  const TraceRun run = energy_run();
  StepMeasurement step;
  step.energy_why = "no NVML";
  EXPECT_THROW(attribute_energy(run, std::vector<CallPower>(3), 100, 0, step), std::invalid_argument);
  step.energy_mJ = 1;
  EXPECT_THROW(attribute_energy(run, std::vector<CallPower>(2), 100, 0, step), std::invalid_argument);
}

TEST(TraceEnergy, TracedCallsMatchTheInventoryStepByOperatorAndOrder) {
  Inventory inv;
  inv.entries = {{"aten::relu"}, {"aten::linear"}};
  inv.sequence = {{0}, {1}, {0}};  // relu, linear, relu
  TraceRun run;
  run.steps = {{"ProfilerStep#0", 1, 0, 100}, {"ProfilerStep#1", 1, 100, 200}};
  for (int s = 0; s < 2; ++s)
    for (const char* name : {"aten::linear", "aten::relu", "aten::relu", "aten::relu"}) {
      const int64_t t = 100 * s + 10 * int64_t(run.ops.size() % 4) + 1;
      run.ops.push_back({name, "", 1, t, t + 5});
    }
  run.ops.push_back({"aten::linear", "", 1, 300, 305});  // after the kept steps
  tie_activities(run);
  const std::vector<int> m = match_inventory_calls(run, inv);
  EXPECT_EQ(m, (std::vector<int>{1, 0, 2, -1, 1, 0, 2, -1, -1}));
}

TEST(TraceEnergy, AGeneratedKernelMatchesByItsKernelAndSourceHash) {
  // Two kernels of one name from different sources (a forward and a backward graph) stay apart.
  Inventory inv;
  inv.entries = {
      {"compiled::triton_poi_fused_relu_0", "ha"}, {"aten::mm"}, {"compiled::triton_poi_fused_relu_0", "hb"}};
  inv.sequence = {{0}, {1}, {2}};
  TraceRun run;
  run.steps = {{"ProfilerStep#0", 1, 0, 100}};
  run.ops.push_back({"compiled::triton_poi_fused_relu_0.ha", "", 1, 1, 5});
  run.ops.push_back({"aten::mm", "", 1, 11, 15});
  run.ops.push_back({"compiled::triton_poi_fused_relu_0.hb", "", 1, 21, 25});
  run.ops.push_back({"compiled::triton_poi_fused_relu_0", "", 1, 31, 35});  // no such entry
  tie_activities(run);
  EXPECT_EQ(match_inventory_calls(run, inv), (std::vector<int>{0, 1, 2, -1}));
}

TEST(ChromeTrace, ParsesBackWithNestedLayersAndAFlowPerTiedKernel) {
  const TraceRun run = sample_run();
  std::string doc;
  write_chrome_trace(run, select_for_file(run, {}), [&](std::string_view s) { doc += s; });
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
  write_chrome_trace(run, select_for_file(run, TraceFileOptions{0.015}), [&](std::string_view s) { doc += s; });
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
  save_trace(run, path.string());
  gzFile gz = gzopen(path.string().c_str(), "rb");
  ASSERT_NE(gz, nullptr);
  std::string doc;
  char buf[4096];
  for (int n; (n = gzread(gz, buf, sizeof buf)) > 0;) doc.append(buf, std::size_t(n));
  gzclose(gz);
  std::filesystem::remove(path);
  std::string plain;
  write_chrome_trace(run, select_for_file(run, {}), [&](std::string_view s) { plain += s; });
  EXPECT_EQ(doc, plain);
  EXPECT_THROW(save_trace(run, "/nonexistent-dir/x.json.gz"), WriteError);
  EXPECT_THROW(save_trace(run, "/nonexistent-dir/x.json"), WriteError);
}

namespace {

std::vector<EventChunk> chunks_of(const std::string& doc, const TraceImportLimits& limits,
                                  ChunkedTrace* out = nullptr) {
  TraceBytes bytes = TraceBytes::in_memory(doc, "t.json");
  std::vector<EventChunk> chunks;
  ChunkedTrace t = read_event_chunks(bytes, limits, 64, [&](EventChunk&& c) {
    EXPECT_GE(c.json.capacity(), c.json.size() + 64);
    chunks.push_back(std::move(c));
  });
  if (out) *out = std::move(t);
  return chunks;
}

// The message of the std::invalid_argument `f` throws ("" when it throws none).
template <typename F>
std::string refusal(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// A gzip stream of `text` (zlib's deflate with a gzip header).
std::string gzip(const std::string& text) {
  z_stream z{};
  deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, uLong(text.size())) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = uInt(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = uInt(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string cpu_op(const std::string& name, const std::string& ts, const std::string& dur) {
  return R"({"ph": "X", "cat": "cpu_op", "name": ")" + name + R"(", "tid": 1, "ts": )" + ts + R"(, "dur": )" + dur +
         "}";
}

}  // namespace

TEST(EventChunks, WholeEventsInChunksWhateverTheirStringsHold) {
  // Braces, brackets, escaped quotes and backslashes in strings; nested arrays; the events
  // array after another key; a key "traceEvents" inside an event that is not the document's.
  const std::string doc = R"({"schemaVersion": 1, "deviceProperties": [{"name": "GPU \"x\" {0}"}],
    "traceEvents": [ {"name": "a{[\"", "args": {"Input Dims": [[1, 2], []]}},
                     {"name": "b\\", "traceEvents": [1]} ,{"name": "c"}],
    "traceName": "t"})";
  for (std::size_t chunk_bytes : {std::size_t(1), std::size_t(1) << 20}) {
    ChunkedTrace t;
    const auto chunks = chunks_of(doc, TraceImportLimits{chunk_bytes}, &t);
    ASSERT_TRUE(t.has_events);
    std::vector<nlohmann::json> events;
    std::vector<uint64_t> offsets;
    for (const auto& c : chunks) {
      for (const auto& e : nlohmann::json::parse(c.json)) events.push_back(e);  // each chunk is a JSON array
      EXPECT_EQ(c.first_event, offsets.size());
      offsets.insert(offsets.end(), c.event_offsets.begin(), c.event_offsets.end());
    }
    ASSERT_EQ(events.size(), 3u) << chunk_bytes;
    EXPECT_EQ(chunks.size(), chunk_bytes == 1 ? 3u : 1u);
    EXPECT_EQ(events[0]["name"], "a{[\"");
    EXPECT_EQ(events[1]["name"], "b\\");
    ASSERT_EQ(offsets.size(), 3u);
    const std::vector<std::string> starts = {R"({"name": "a{[)", R"({"name": "b\\")", R"({"name": "c")"};
    for (std::size_t k = 0; k < 3; ++k)  // each event's place in the document
      EXPECT_EQ(doc.substr(offsets[k], starts[k].size()), starts[k]) << k;
    EXPECT_EQ(t.events, 3u);
    // Only what an import reads of the rest is kept: deviceProperties, not traceName.
    EXPECT_EQ(nlohmann::json::parse(t.kept),
              nlohmann::json::parse(R"({"deviceProperties": [{"name": "GPU \"x\" {0}"}]})"));
  }
  EXPECT_NE(refusal([&] { chunks_of(R"({"traceEvents": [{"name": "a"}, {"name": "b)", {}); }), "");
}

// Bounded memory, whatever the file: one event over its limit, a NUL where JSON cannot have
// it (/dev/zero, a gzip of zeros), endless nesting, a second document: each refused at once,
// in one line naming the input, the byte and the limit; big values outside the events skipped.
TEST(EventChunks, HostileDocumentsAreRefusedAtTheirByteOrSkippedWithinBounds) {
  TraceImportLimits small;
  small.chunk_bytes = 64;
  small.max_event_bytes = 1000;
  small.max_kept_bytes = 100;
  small.max_depth = 50;
  const std::string big(5000, 'x');
  std::string why =
      refusal([&] { chunks_of(R"({"traceEvents": [{"name": "a"}, {"name": ")" + big + R"("}]})", small); });
  EXPECT_NE(why.find("t.json: event 2 (at byte 32) is over the limit of 1000 bytes for one event"), std::string::npos)
      << why;
  why = refusal([&] { chunks_of(std::string(100, '\0'), small); });
  EXPECT_NE(why.find("t.json: not a Chrome trace: byte 0: a NUL byte (0x00)"), std::string::npos) << why;
  why = refusal([&] { chunks_of(R"({"traceEvents": [)" + std::string(100, '\0'), small); });
  EXPECT_NE(why.find("byte 17: a NUL byte (0x00) is there, which JSON never has outside a string"), std::string::npos)
      << why;
  why = refusal([&] { chunks_of(std::string(100000, '['), small); });
  EXPECT_NE(why.find("byte 50: nested deeper than 50 arrays and objects"), std::string::npos) << why;
  why = refusal([&] { chunks_of("{} {}", small); });
  EXPECT_NE(why.find("byte 3: '{' after the document's end"), std::string::npos) << why;
  why = refusal([&] { chunks_of("  \n", small); });
  EXPECT_NE(why.find("it is empty"), std::string::npos) << why;
  for (const std::string& bad : {std::string(100, '\0'), R"({"traceEvents": [{"name": ")" + big + "\"}]}"}) {
    why = refusal([&] { chunks_of(bad, small); });
    EXPECT_EQ(why.find('\n'), std::string::npos) << "one line";
    EXPECT_LT(why.size(), 400u) << "the input is never echoed";
  }
  // Outside the events a value of any size streams by: deviceProperties over its bound is
  // dropped (only a device's name was wanted), the rest never held.
  ChunkedTrace t;
  const auto chunks = chunks_of(R"({"junk": ")" + big + R"(", "deviceProperties": [")" + big +
                                    R"("], "otherData": {"device": "GPU"}, ")" + big + R"(": 1, "traceEvents": [{}]})",
                                small, &t);
  EXPECT_EQ(chunks.size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(t.kept), nlohmann::json::parse(R"({"otherData": {"device": "GPU"}})"));
}

TEST(TraceBytes, GzipIsToldByItsBytesAndItsMembersFollowEachOther) {
  const std::string doc = R"({"traceEvents": [)" + cpu_op("aten::mm", "1", "2") + "]}";
  const std::string z = gzip(doc.substr(0, 10)) + gzip(doc.substr(10));  // as `cat a.gz b.gz`
  TraceBytes bytes = TraceBytes::in_memory(z, "m.json");
  std::string back(4096, '\0');
  std::size_t n = 0;
  for (std::size_t k; (k = bytes.read(back.data() + n, 7)) > 0;) n += k;
  EXPECT_EQ(back.substr(0, n), doc);
  const std::string cut = gzip(doc).substr(0, 20);
  const std::string why = refusal([&] { import_trace_bytes(cut, "cut.json.gz"); });
  EXPECT_NE(why.find("cut.json.gz: the gzip stream is cut short"), std::string::npos) << why;
  EXPECT_EQ(import_trace_bytes(z, "m.json").ops.size(), 1u);
}

// Events whose fields cannot be placed on the time line are skipped and counted, the first
// one named by its place and fault; a trace of nothing else is refused. Never a negative or
// wrapped-around total.
TEST(ChromeImport, MalformedEventsAreSkippedAndCountedAndAllMalformedIsRefused) {
  const std::string doc = R"({"traceEvents": [)" + cpu_op("aten::a", R"("abc")", "1") + "," +
                          cpu_op("aten::b", "10", "null") + "," + cpu_op("aten::c", "20", "-5") + "," +
                          cpu_op("aten::d", "1e308", "1") + "," + cpu_op("aten::ok", "30", "2.5") +
                          R"(, {"ph": "X", "cat": "Trace", "tid": "not used", "ts": 0, "dur": 1}]})";
  const TraceRun run = import_trace_bytes(doc, "odd.json");
  ASSERT_EQ(run.ops.size(), 1u);
  EXPECT_EQ(run.ops[0].name, "aten::ok");
  EXPECT_EQ(run.ops[0].duration_ns(), 2500);
  EXPECT_EQ(run.skipped_events, 4u);  // the unused "Trace" event is not checked
  EXPECT_EQ(run.first_skipped, "event 1 at byte 17: ts \"abc\" is not a number");
  const auto table = op_table(run, false);
  EXPECT_EQ(table.total.cpu_self_us, 2.5);
  for (const auto& [bad, fault] : std::vector<std::pair<std::string, std::string>>{
           {cpu_op("aten::b", "10", "null"), "dur null is not a number"},
           {cpu_op("aten::c", "20", "-5"), "dur -5 is out of range"},
           {cpu_op("aten::d", "1e308", "1"), "ts 1e+308 is out of range"}}) {
    const std::string why = refusal([&] { import_trace_bytes(R"({"traceEvents": [)" + bad + "]}", "bad.json"); });
    EXPECT_NE(
        why.find("bad.json: no valid operator calls: 1 events skipped as malformed, the first event 1 at byte 17: " +
                 fault),
        std::string::npos)
        << why;
  }
  TraceImportLimits few;
  few.max_records = 3;
  std::string many = R"({"traceEvents": [)";
  for (int i = 0; i < 5; ++i) many += (i ? "," : "") + cpu_op("aten::x", std::to_string(i * 10), "1");
  const std::string why = refusal([&] { import_trace_bytes(many + "]}", "many.json", few); });
  EXPECT_NE(why.find("many.json: more than 3 calls, ranges and device activities (event 4 at byte"), std::string::npos)
      << why;
}

// What `opcost trace -o` writes, `opcost trace --import` reads back to the same run: steps,
// layers, calls with their shapes, kernels tied to their calls, backward calls to their
// forward layer.
TEST(ChromeImport, OpcostsOwnTraceReadsBackToTheSameTies) {
  TraceRun run = sample_run();
  for (auto& o : run.ops) {  // aten::mm, on autograd's thread, is the backward of aten::linear's node
    if (o.name == "aten::mm") o.backward_of = 7;
    if (o.name == "aten::linear") o.forward_sequence = {7};
  }
  tie_activities(run);
  ASSERT_EQ(op_named(run, "aten::mm").layer, op_named(run, "aten::linear").layer);
  std::string doc;
  write_chrome_trace(run, select_for_file(run, {}), [&](std::string_view s) { doc += s; });
  const TraceRun back = import_trace_bytes(doc, "opcost.json");
  EXPECT_EQ(back.source, "test");
  EXPECT_EQ(back.device, "test GPU");
  EXPECT_EQ(back.skipped_events, 0u);
  ASSERT_EQ(back.steps.size(), 1u);
  ASSERT_EQ(back.layers.size(), run.layers.size());
  ASSERT_EQ(back.ops.size(), run.ops.size());
  ASSERT_EQ(back.device_activities.size(), run.device_activities.size());
  EXPECT_EQ(op_named(back, "aten::linear").shapes, "[4, 8], [2, 8]");
  EXPECT_EQ(op_named(back, "aten::linear").flops, 128u);
  auto ties = [](const TraceRun& r) {
    std::multiset<std::string> out;
    for (const auto& a : r.device_activities)
      out.insert(a.name + " -> " + (a.op >= 0 ? r.ops[std::size_t(a.op)].name : "-") + " @" + std::to_string(a.device) +
                 "/" + std::to_string(a.stream));
    for (const auto& o : r.ops)
      out.insert(o.name + " in " + (o.layer >= 0 ? r.layers[std::size_t(o.layer)].name : "-"));
    return out;
  };
  EXPECT_EQ(ties(back), ties(run));
  EXPECT_EQ(op_named(back, "aten::mm").layer, op_named(back, "aten::linear").layer) << "backward: the forward's layer";
  const auto before = op_table(run, true), after = op_table(back, true);
  EXPECT_EQ(after.total.cpu_self_us, before.total.cpu_self_us);
  EXPECT_EQ(after.total.gpu_self_us, before.total.gpu_self_us);
}

// The nsys importer's entry on bytes in memory (a fuzzer's) reads as the file does.
TEST(NsysImport, BytesInMemoryReadAsTheFile) {
  const auto path = std::filesystem::path(OPCOST_TEST_DATA_DIR) / "nsys-small.sqlite";
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 1000u);
  const TraceRun file = import_trace(path.string()), memory = import_trace_bytes(bytes, "nsys.sqlite");
  EXPECT_EQ(memory.ops.size(), file.ops.size());
  EXPECT_EQ(memory.device_activities.size(), file.device_activities.size());
  EXPECT_GT(file.ops.size(), 0u);
  const std::string why = refusal([&] { import_trace_bytes(bytes.substr(0, 4096), "cut.sqlite"); });
  EXPECT_NE(why.find("cut.sqlite: "), std::string::npos) << why;
}

// A range name of megabytes (emit_nvtx's "sizes = [...]" of a hostile export) is parsed without
// recursion (std::regex overflowed the stack on it), and a value over the limit is refused.
TEST(NsysImport, LongRangeNamesParseWithoutRecursionAndOverLongValuesAreRefused) {
  const auto data = std::filesystem::path(OPCOST_TEST_DATA_DIR) / "nsys-small.sqlite";
  const auto path =
      std::filesystem::temp_directory_path() / ("opcost-nsys-long-" + std::to_string(::getpid()) + ".sqlite");
  std::filesystem::copy_file(data, path, std::filesystem::copy_options::overwrite_existing);
  std::string shapes;
  for (int i = 0; i < 200000; ++i) shapes += (i ? ", [" : "[") + std::to_string(i) + "]";
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db,
                                 "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) "
                                 "SELECT max(end) + 10, max(end) + 20, 59, ?, globalTid FROM NVTX_EVENTS",
                                 -1, &s, nullptr),
              SQLITE_OK);
    const std::string name = "aten::cat, seq = 42, op_id = 1, sizes = [" + shapes + "], input_op_ids = [1]";
    sqlite3_bind_text(s, 1, name.c_str(), int(name.size()), SQLITE_TRANSIENT);
    ASSERT_EQ(sqlite3_step(s), SQLITE_DONE);
    sqlite3_finalize(s);
    sqlite3_close(db);
  }
  const TraceRun run = import_trace(path.string());
  const OpActivity& cat = op_named(run, "aten::cat");
  EXPECT_EQ(cat.shapes, shapes);
  EXPECT_EQ(cat.forward_sequence, std::vector<int64_t>{42});
  TraceImportLimits small;
  small.max_event_bytes = 1 << 20;
  const std::string why = refusal([&] { import_trace(path.string(), small); });
  EXPECT_NE(why.find("too big"), std::string::npos) << why;
  std::filesystem::remove(path);
}

// A kernel row that ends before it starts (a damaged export; the fuzzer made one) is skipped and
// counted, never imported as a negative duration.
TEST(NsysImport, RowsEndingBeforeTheyStartAreSkippedAndCounted) {
  const auto data = std::filesystem::path(OPCOST_TEST_DATA_DIR) / "nsys-small.sqlite";
  const auto path =
      std::filesystem::temp_directory_path() / ("opcost-nsys-backwards-" + std::to_string(::getpid()) + ".sqlite");
  std::filesystem::copy_file(data, path, std::filesystem::copy_options::overwrite_existing);
  const TraceRun before = import_trace(path.string());
  EXPECT_EQ(before.skipped_events, 0u);
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db,
                           "CREATE TEMP TABLE k AS SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1; "
                           "UPDATE k SET start = 9223372036854775807, end = 400; "
                           "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT * FROM k;",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  const TraceRun run = import_trace(path.string());
  EXPECT_EQ(run.skipped_events, 1u);
  EXPECT_NE(run.first_skipped.find("ends (400 ns) before it starts"), std::string::npos) << run.first_skipped;
  EXPECT_EQ(run.device_activities.size(), before.device_activities.size());
  for (const auto& a : run.device_activities) EXPECT_GE(a.end_ns, a.start_ns) << a.name;
  std::filesystem::remove(path);
}

namespace {

// Protobuf's wire format, read back: each field of a message as (number, varint or bytes).
struct Field {
  int number = 0;
  uint64_t value = 0;  // varint or fixed64
  std::string bytes;   // length-delimited
};
std::vector<Field> fields(std::string_view m) {
  std::vector<Field> out;
  std::size_t i = 0;
  auto varint = [&] {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      const auto b = static_cast<unsigned char>(m.at(i++));
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
  };
  while (i < m.size()) {
    const uint64_t tag = varint();
    Field f{int(tag >> 3)};
    switch (tag & 7) {
      case 0:
        f.value = varint();
        break;
      case 1:
        std::memcpy(&f.value, m.data() + i, 8);
        i += 8;
        break;
      case 2: {
        const uint64_t n = varint();
        f.bytes = std::string(m.substr(i, n));
        i += n;
        break;
      }
      default:
        throw std::runtime_error("unexpected wire type");
    }
    out.push_back(std::move(f));
  }
  return out;
}
const Field* field(const std::vector<Field>& fs, int number) {
  for (const auto& f : fs)
    if (f.number == number) return &f;
  return nullptr;
}

}  // namespace

// Perfetto's protobuf (perfetto.protos.Trace): the same tracks, slices, arrows and counters as
// the JSON, with slices nested on each track.
TEST(PerfettoTrace, PacketsHoldTracksNestedSlicesFlowsAndCounters) {
  const TraceRun run = sample_run();
  std::string doc;
  write_perfetto_trace(run, select_for_file(run, {}), [&](std::string_view s) { doc += s; });
  std::map<uint64_t, std::string> track_names;
  std::map<uint64_t, std::vector<std::pair<uint64_t, std::string>>> slices;  // track: (begin/end, name)
  std::vector<uint64_t> flows, ends_of_flows;
  std::vector<double> counter_values;
  uint64_t last_ts = 0;
  std::map<uint64_t, uint64_t> last_ts_on_track;
  for (const Field& packet : fields(doc)) {
    ASSERT_EQ(packet.number, 1);  // Trace.packet
    const auto p = fields(packet.bytes);
    ASSERT_TRUE(field(p, 10));            // trusted_packet_sequence_id
    if (const Field* d = field(p, 60)) {  // a TrackDescriptor
      const auto t = fields(d->bytes);
      const Field* name = field(t, 2);
      track_names[field(t, 1)->value] = name ? name->bytes : "(process)";
      continue;
    }
    const Field* e = field(p, 11);  // a TrackEvent
    ASSERT_TRUE(e);
    const auto ev = fields(e->bytes);
    const uint64_t ts = field(p, 8)->value, type = field(ev, 9)->value, track = field(ev, 11)->value;
    ASSERT_TRUE(track_names.count(track)) << "a track is described before its events";
    EXPECT_GE(ts, last_ts_on_track[track]);  // each track's events in time order
    last_ts_on_track[track] = ts;
    last_ts = ts;
    if (type == 4) {
      counter_values.push_back([&] {
        double v;
        std::memcpy(&v, &field(ev, 44)->value, 8);
        return v;
      }());
      continue;
    }
    const Field* name = field(ev, 23);
    slices[track].emplace_back(type, name ? name->bytes : "");
    for (const auto& f : ev) {
      if (f.number == 47) flows.push_back(f.value);
      if (f.number == 48) ends_of_flows.push_back(f.value);
    }
  }
  // Each track's begins and ends nest: "block" > "block.fc" > aten::linear on the host thread.
  for (const auto& [track, marks] : slices) {
    std::vector<std::string> open;
    for (const auto& [type, name] : marks) {
      if (type == 1) open.push_back(name);
      if (type == 2) {
        ASSERT_FALSE(open.empty()) << track_names[track];
        open.pop_back();
      }
    }
    EXPECT_TRUE(open.empty()) << track_names[track];
  }
  std::vector<std::string> host;
  for (const auto& [type, name] : slices.begin()->second)
    if (type == 1) host.push_back(name);
  EXPECT_EQ(host, (std::vector<std::string>{"ProfilerStep#0", "block", "block.fc", "aten::linear", "aten::relu",
                                            "aten::flatten"}));
  std::sort(flows.begin(), flows.end());
  std::sort(ends_of_flows.begin(), ends_of_flows.end());
  EXPECT_EQ(flows.size(), 3u);  // the stray memcpy has no arrow
  EXPECT_EQ(flows, ends_of_flows);
  EXPECT_EQ(counter_values, (std::vector<double>{120.0, 310.5, 305.0}));
  std::set<std::string> names;
  for (const auto& [uuid, name] : track_names) names.insert(name);
  EXPECT_TRUE(names.count("stream 7") && names.count("GPU power (W)") && names.count("thread 1")) << names.size();
  EXPECT_TRUE(is_perfetto_path("x.pftrace.gz") && is_perfetto_path("x.perfetto-trace") && !is_perfetto_path("x.json"));
}
