// Does the shared-window split agree with separate loops? (issue 25, must-have 3.) A dozen small
// operators (elementwise, layer norm, softmax, small GEMMs; bf16 and fp32) are measured each in
// its own energy loop (measure(): today's loop, full budgets, 2% target) and together in one
// shared loop (measure_group with validate's short loops), the separate loops once before and
// once after the groups (drift), the group `rounds` times. Per operator: both figures with
// their 95% intervals, whether they overlap, and each loop's time per call and GPU-seconds.
//
// With `pooled`, sixteen calls of DenseNet-121's kinds (relu, add, batch norm, 1x1 convolution;
// its first block's four widths each) measured as parts of tiny shares: the shared loop pools each kind into columns
// (pool_columns, core/energy/shared_windows.h), and each call's pooled figure is compared with
// its own loops: how far a member's own power lies from its pool's.
//
//   opcost_shared_windows_check [rounds=3] [pooled] > result.json     (bench/shared_windows_check runs it)
#include <ATen/DeviceAccelerator.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/energy/monitor.h"
#include "core/spec/op_call.h"
#include "core/spec/spec_file.h"
#include "torch/runner.h"
#include "workflow/predict.h"

using namespace opcost;
using nlohmann::json;

namespace {

// A small operator's call of a transformer or a CNN: each 10 µs to a few hundred on the H100.
const std::vector<std::string> kCalls = {
    "aten::add.Tensor self=bf16[2048,2048] other=bf16[2048,2048]",
    "aten::mul.Tensor self=f32[2048,2048] other=f32[2048,2048]",
    "aten::gelu self=bf16[4096,1024] approximate=none",
    "aten::relu self=f32[4096,1024]",
    "aten::native_layer_norm input=bf16[2048,768] normalized_shape=[768] weight=bf16[768] bias=bf16[768] eps=1e-05",
    "aten::native_layer_norm input=f32[2048,768] normalized_shape=[768] weight=f32[768] bias=f32[768] eps=1e-05",
    "aten::_softmax self=f32[96,128,128] dim=-1 half_to_float=false",
    "aten::_softmax self=bf16[96,128,128] dim=-1 half_to_float=false",
    "aten::mm self=bf16[512,768] mat2=bf16[768,768]",
    "aten::mm self=f32[512,768] mat2=f32[768,768]",
    "aten::addmm self=bf16[3072] mat1=bf16[1024,768] mat2=bf16[768,3072]",
    "aten::bmm self=bf16[48,128,64] mat2=bf16[48,64,128]",
};

// DenseNet-121 b16's small operators, four sizes of each kind: its first dense block's widths,
// times within about 2x (pool_columns pools those within 2x of a column's first member).
std::vector<std::string> pooled_calls() {
  std::vector<std::string> out;
  const std::vector<std::pair<int, int>> shapes = {{128, 56}, {160, 56}, {192, 56}, {224, 56}};
  for (auto [c, hw] : shapes) out.push_back(fmt::format("aten::relu self=f32[16,{},{},{}]", c, hw, hw));
  for (auto [c, hw] : shapes)
    out.push_back(fmt::format("aten::add.Tensor self=f32[16,{0},{1},{1}] other=f32[16,{0},{1},{1}]", c, hw));
  for (auto [c, hw] : shapes)
    out.push_back(
        fmt::format("aten::batch_norm input=f32[16,{0},{1},{1}] weight=f32[{0}] bias=f32[{0}] running_mean=f32[{0}] "
                    "running_var=f32[{0}] training=false momentum=0.1 eps=1e-05 cudnn_enabled=true",
                    c, hw));
  for (auto [c, hw] : shapes)
    out.push_back(fmt::format("aten::conv2d input=f32[16,{0},{1},{1}] weight=f32[128,{0},1,1]", c, hw));
  return out;
}

json energy_json(const Measurement& m) {
  const auto& e = m.energy;
  if (!e.available) return {{"available", false}, {"why", e.unavailable_reason}};
  return {{"available", true},
          {"per_call_mJ", e.per_call_mJ.mean},
          {"ci95_low_mJ", e.per_call_mJ.ci95_low},
          {"ci95_high_mJ", e.per_call_mJ.ci95_high},
          {"rel_ci95", e.per_call_mJ.rel_ci95()},
          {"windows", e.windows},
          {"power_W", e.power_W},
          {"wall_us_per_call", e.wall_us_per_call},
          {"gpu_us_per_call", m.time.per_call_us.median},
          {"source", e.source},
          {"total_seconds", m.total_seconds},
          {"flags", m.flags},
          {"method", m.method}};
}

bool overlap(const Measurement& a, const Measurement& b) {
  return a.energy.available && b.energy.available && a.energy.per_call_mJ.ci95_low <= b.energy.per_call_mJ.ci95_high &&
         b.energy.per_call_mJ.ci95_low <= a.energy.per_call_mJ.ci95_high;
}

double seconds_of(const std::vector<Measurement>& ms) {
  double s = 0;
  for (const auto& m : ms) s += m.total_seconds;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  const bool pooled = argc > 2 && std::string(argv[2]) == "pooled";
  if (argc > 2 && !pooled) {
    std::fprintf(stderr, "shared_windows_check: the second argument is `pooled` or nothing, not '%s'\n", argv[2]);
    return 2;
  }
  const std::vector<std::string> lines = pooled ? pooled_calls() : kCalls;
  ReplayOptions replay;
  replay.device = "cuda:0";
  std::vector<std::unique_ptr<PreparedCall>> prepared;
  std::vector<PreparedCall*> calls;
  for (const auto& line : lines) {
    prepared.push_back(PreparedCall::prepare(parse_call_line(line, "shared_windows_check"), replay));
    calls.push_back(prepared.back().get());
  }
  const MeasureConfig alone_cfg;  // measure's loops: the reference
  const MeasureConfig group_cfg = PredictOptions::validate().short_op_config();
  Runner runner("cuda", 0, alone_cfg);
  if (!runner.energy_unavailable_reason().empty()) {
    std::fprintf(stderr, "no energy: %s\n", runner.energy_unavailable_reason().c_str());
    return 1;
  }
  auto measure_alone = [&] {
    runner.reconfigure(alone_cfg);
    std::vector<Measurement> out;
    for (PreparedCall* c : calls) out.push_back(runner.measure(*c));
    return out;
  };
  auto measure_together = [&] {
    runner.reconfigure(group_cfg);
    std::vector<Measurement> out;
    const double t0 = now_s();
    // Pooled: each a part of a whole a million times its time (the widest target, ±100%).
    const std::optional<MeasureConfig::Whole> part =
        pooled ? std::optional<MeasureConfig::Whole>(MeasureConfig::Whole{1e9, 1, 0.02}) : std::nullopt;
    for (auto& r : runner.measure_group(calls, std::vector<std::optional<MeasureConfig::Whole>>(calls.size(), part))) {
      if (r.error) std::rethrow_exception(r.error);
      out.push_back(std::move(*r.measurement));
    }
    std::fprintf(stderr, "group of %zu: %.2f s wall\n", calls.size(), now_s() - t0);
    return out;
  };
  std::vector<Measurement> before = measure_alone();
  std::vector<std::vector<Measurement>> groups;
  for (int r = 0; r < rounds; ++r) groups.push_back(measure_together());
  std::vector<Measurement> after = measure_alone();

  json ops = json::array();
  // A group figure is the split's only when its energy came from the shared windows; otherwise
  // the group fell back to a loop of its own for it, and its agreement says nothing of the split.
  auto from_split = [](const Measurement& m) { return m.energy.source.find("shared windows") != std::string::npos; };
  std::size_t overlapping = 0, compared = 0, split = 0, split_overlapping = 0;
  std::fprintf(stderr, "%-70s %22s %22s %s\n", "call", "alone mJ (±95%)", "group mJ (±95%)", "overlap");
  for (std::size_t i = 0; i < calls.size(); ++i) {
    json rows = json::array();
    std::size_t op_overlaps = 0;
    for (const auto& g : groups) {
      const bool ok = overlap(before[i], g[i]) || overlap(after[i], g[i]);
      op_overlaps += ok;
      overlapping += ok;
      ++compared;
      split += from_split(g[i]);
      split_overlapping += from_split(g[i]) && ok;
      rows.push_back({{"energy", energy_json(g[i])}, {"overlaps_alone", ok}, {"from_split", from_split(g[i])}});
      std::fprintf(stderr, "%-70.70s %10.4f ±%9.4f %10.4f ±%9.4f %s%s\n", lines[i].c_str(),
                   before[i].energy.per_call_mJ.mean, before[i].energy.per_call_mJ.ci95_half_width(),
                   g[i].energy.per_call_mJ.mean, g[i].energy.per_call_mJ.ci95_half_width(), ok ? "yes" : "NO",
                   from_split(g[i]) ? "" : " (own loop: the split fell back)");
    }
    const double alone_mJ = (before[i].energy.per_call_mJ.mean + after[i].energy.per_call_mJ.mean) / 2;
    double group_mJ = 0;
    for (const auto& g : groups) group_mJ += g[i].energy.per_call_mJ.mean / double(groups.size());
    ops.push_back({{"call", lines[i]},
                   {"alone_before", energy_json(before[i])},
                   {"alone_after", energy_json(after[i])},
                   {"alone_before_after_overlap", overlap(before[i], after[i])},
                   {"groups", rows},
                   {"group_rounds_overlapping_alone", op_overlaps},
                   {"group_mean_over_alone_mean", alone_mJ > 0 ? group_mJ / alone_mJ - 1 : 0.0}});
  }
  // Per kind: the members' energies summed, pooled against alone (each a call of the step's
  // mix here: the pool's power is right for this sum whatever each member's own power).
  json kinds = json::object();
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const std::string kind = before[i].display_name();
    double group_mJ = 0;
    for (const auto& g : groups) group_mJ += g[i].energy.per_call_mJ.mean / double(groups.size());
    if (!kinds.contains(kind)) kinds[kind] = json{{"group_mJ", 0.0}, {"alone_mJ", 0.0}};
    auto& k = kinds[kind];
    k["group_mJ"] = k.value("group_mJ", 0.0) + group_mJ;
    k["alone_mJ"] =
        k.value("alone_mJ", 0.0) + (before[i].energy.per_call_mJ.mean + after[i].energy.per_call_mJ.mean) / 2;
  }
  for (auto& [kind, k] : kinds.items()) {
    k["group_over_alone"] =
        k["alone_mJ"].get<double>() > 0 ? k["group_mJ"].get<double>() / k["alone_mJ"].get<double>() - 1 : 0.0;
    std::fprintf(stderr, "%-30s summed: group %.4f mJ, alone %.4f mJ (%+.1f%%)\n", kind.c_str(),
                 k["group_mJ"].get<double>(), k["alone_mJ"].get<double>(), 100 * k["group_over_alone"].get<double>());
  }
  double group_s = 0;
  for (const auto& g : groups) group_s += seconds_of(g) / double(groups.size());
  const json out = {{"device", runner.environment().device_name},
                    {"pooled", pooled},
                    {"driver", runner.environment().driver_version},
                    {"operators", calls.size()},
                    {"group_rounds", rounds},
                    {"overlapping", overlapping},
                    {"compared", compared},
                    {"from_split", split},
                    {"from_split_overlapping", split_overlapping},
                    {"alone_seconds_per_pass", (seconds_of(before) + seconds_of(after)) / 2},
                    {"group_seconds_per_pass", group_s},
                    {"kinds", kinds},
                    {"ops", ops}};
  std::cout << out.dump(1) << "\n";
  std::fprintf(stderr,
               "%zu of %zu group figures came from the split, %zu of those overlap a separate loop's interval "
               "(%zu of %zu with the fallbacks); %.1f s alone vs %.1f s shared\n",
               split, compared, split_overlapping, overlapping, compared, (seconds_of(before) + seconds_of(after)) / 2,
               group_s);
  return 0;
}
