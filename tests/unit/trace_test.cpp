#include <gtest/gtest.h>

#include <zlib.h>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/io/output_file.h"
#include "core/trace/chrome_trace.h"
#include "core/trace/energy_attribution.h"
#include "core/trace/event_chunks.h"
#include "core/trace/perfetto_trace.h"
#include "core/trace/table.h"
#include "core/trace/trace_file.h"

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

TEST(EventChunks, WholeEventsInChunksWhateverTheirStringsHold) {
  const auto path = std::filesystem::temp_directory_path() / "opcost-event-chunks.json";
  // Braces, brackets, escaped quotes and backslashes in strings; nested arrays; the events
  // array after another key; a key "traceEvents" inside an event that is not the document's.
  std::ofstream(path) << R"({"schemaVersion": 1, "deviceProperties": [{"name": "GPU \"x\" {0}"}],
    "traceEvents": [ {"name": "a{[\"", "args": {"Input Dims": [[1, 2], []]}},
                     {"name": "b\\", "traceEvents": [1]} ,{"name": "c"}],
    "traceName": "t"})";
  for (std::size_t chunk_bytes : {std::size_t(1), std::size_t(1) << 20}) {
    std::vector<std::string> chunks;
    const ChunkedTrace t = read_event_chunks(path.string(), chunk_bytes, 64, [&](const std::string& c) {
      EXPECT_GE(c.capacity(), c.size() + 64);
      chunks.push_back(c);
    });
    ASSERT_TRUE(t.has_events);
    std::vector<nlohmann::json> events;
    for (const auto& c : chunks)
      for (const auto& e : nlohmann::json::parse(c)) events.push_back(e);  // each chunk is a JSON array
    ASSERT_EQ(events.size(), 3u) << chunk_bytes;
    EXPECT_EQ(chunks.size(), chunk_bytes == 1 ? 3u : 1u);
    EXPECT_EQ(events[0]["name"], "a{[\"");
    EXPECT_EQ(events[1]["name"], "b\\");
    const auto rest = nlohmann::json::parse(t.rest);
    EXPECT_EQ(rest["traceEvents"], nlohmann::json::array());
    EXPECT_EQ(rest["deviceProperties"][0]["name"], "GPU \"x\" {0}");
    EXPECT_EQ(rest["traceName"], "t");
  }
  std::ofstream(path) << R"({"traceEvents": [{"name": "a"}, {"name": "b)";
  EXPECT_THROW(read_event_chunks(path.string(), 1, 64, [](const std::string&) {}), std::invalid_argument);
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
