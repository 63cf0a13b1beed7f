// How sharp are the energy monitor's counter edges on this GPU (issue 25's shared windows)?
// Each edge is known to within half the span from the previous good counter read's start to
// the read that saw the change (CounterEdge::half_gap_s); the shared split leaves out a window
// whose two edges' blur exceeds kMaxEdgeBlurShare of it. This reports what each NVML read
// costs on an idle GPU, from one thread, and the blur the monitor achieves, idle and under a
// bf16 GEMM load (a few large kernels, not the shared loop's stream of small launches), with
// its power and state reads interleaved (as measurements run it) and with the counter polled
// alone.
//   opcost_monitor_edges [seconds=2] > result.json
#include <ATen/ATen.h>
#include <ATen/DeviceAccelerator.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/energy/monitor.h"
#include "core/energy/probe.h"
#include "core/energy/shared_windows.h"

using namespace opcost;
using nlohmann::json;

namespace {

json spread(std::vector<double> v, double scale) {
  if (v.empty()) return {{"n", 0}};
  std::sort(v.begin(), v.end());
  auto q = [&](double p) { return scale * v[std::min(v.size() - 1, std::size_t(p * double(v.size())))]; };
  return {{"n", v.size()}, {"median", q(0.5)}, {"p90", q(0.9)}, {"max", scale * v.back()}};
}

template <typename F>
json read_cost_us(F read, int n = 300) {
  std::vector<double> s;
  for (int i = 0; i < n; ++i) {
    const double t0 = now_s();
    read();
    s.push_back(now_s() - t0);
  }
  return spread(s, 1e6);
}

// The monitor for `seconds`, with a GEMM loop on the GPU when `load`; its edges' blur.
json edges_of(EnergyProbe& probe, double seconds, bool load, MonitorConfig cfg) {
  std::atomic<bool> stop{false};
  std::thread loader;
  if (load)
    loader = std::thread([&] {
      auto a = at::randn({8192, 8192}, at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16));
      while (!stop) {
        for (int i = 0; i < 4; ++i) (void)at::mm(a, a);
        at::accelerator::synchronizeDevice(0);
      }
    });
  if (load) std::this_thread::sleep_for(std::chrono::milliseconds(300));  // at the load's power
  EnergyMonitor monitor(probe, cfg);
  monitor.start();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  monitor.stop();
  stop = true;
  if (loader.joinable()) loader.join();
  const auto edges = monitor.edges();
  std::vector<double> half_gap, period, pair_share;
  std::size_t blurred = 0;
  for (std::size_t i = 0; i < edges.size(); ++i) {
    half_gap.push_back(edges[i].half_gap_s);
    if (i > 0) {
      const double w = edges[i].t_s - edges[i - 1].t_s;
      period.push_back(w);
      pair_share.push_back((edges[i].half_gap_s + edges[i - 1].half_gap_s) / w);
      blurred += edges_too_blurred(edges[i - 1], edges[i]);  // the split's own rule
    }
  }
  return {{"load", load},
          {"power_every_s", cfg.power_every_s},
          {"state_every_s", cfg.state_every_s},
          {"edges", edges.size()},
          {"half_gap_ms", spread(half_gap, 1e3)},
          {"period_ms", spread(period, 1e3)},
          {"window_blur_share", spread(pair_share, 1.0)},
          {"windows_blurred", blurred},
          {"windows", pair_share.size()}};
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 2.0;
  std::string why;
  auto probe = make_nvml_probe(0, &why);
  if (!probe) {
    std::fprintf(stderr, "monitor_edges: no NVML probe: %s\n", why.c_str());
    return 1;
  }
  json out;
  out["read_cost_us"] = {{"energy", read_cost_us([&] { (void)probe->energy_mJ(); })},
                         {"power", read_cost_us([&] { (void)probe->power_W(); })},
                         {"state", read_cost_us([&] { (void)probe->state(false); }, 100)},
                         {"state_with_processes", read_cost_us([&] { (void)probe->state(true); }, 30)}};
  MonitorConfig as_measured;
  MonitorConfig counter_alone;
  counter_alone.power_every_s = counter_alone.state_every_s = 1e9;
  json runs = json::array();
  for (bool load : {false, true})
    for (const MonitorConfig& cfg : {as_measured, counter_alone}) runs.push_back(edges_of(*probe, seconds, load, cfg));
  out["monitor"] = runs;
  std::printf("%s\n", out.dump(1).c_str());
  return 0;
}
