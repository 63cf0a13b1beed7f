// Does anything opcost runs while measuring slow the host? (issue 11, must-have 2). For SECONDS
// it cycles through phases of about 0.4 s, in this order, each timing synchronised steps of a
// host-bound model (wall time, and host time until the step returns):
//   none          nothing else running
//   monitor       the energy monitor as a measurement runs it (NVML energy counter every
//                 0.5 ms, power every 5 ms, clocks/temperature/processes every 50 ms)
//   monitor_5ms   the same with the counter polled every 5 ms
//   none_again    nothing (a second baseline, to see drift within a cycle)
// Adjacent phases see nearly the same host, so the per-cycle ratio monitor / mean(none,
// none_again) separates the monitor's effect from the host's drift.
//   opcost_monitor_interference OUT.json [SECONDS] [MODEL] [BATCH] [DTYPE]
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <fmt/format.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/energy/monitor.h"
#include "core/energy/probe.h"
#include "core/stats/summary.h"
#include "torch/models.h"

using namespace opcost;

int main(int argc, char** argv) {
  if (argc < 2) {
    fmt::print(stderr, "usage: {} OUT.json [SECONDS] [MODEL] [BATCH] [DTYPE]\n", argv[0]);
    return 2;
  }
  const double seconds = argc > 2 ? std::stod(argv[2]) : 60;
  ModelInput in;
  in.batch = argc > 4 ? std::stoi(argv[4]) : 1;
  in.seq = 128;
  in.dtype = argc > 5 ? argv[5] : "fp32";
  const std::string name = argc > 3 ? argv[3] : "resnet50";
  c10::InferenceMode guard;
  auto model = make_builtin_model(name, in);
  for (int i = 0; i < 20; ++i) model->step();
  model->synchronize();
  std::string why;
  auto probe = make_nvml_probe(0, &why);
  if (!probe) {
    fmt::print(stderr, "no NVML: {}\n", why);
    return 1;
  }
  const std::vector<std::string> phases = {"none", "monitor", "monitor_5ms", "none_again"};
  std::map<std::string, std::vector<double>> wall, host;  // per phase: the phase's median step
  const double start = now_s();
  while (now_s() - start < seconds) {
    for (const auto& phase : phases) {
      std::unique_ptr<EnergyMonitor> monitor;
      if (phase.rfind("monitor", 0) == 0) {
        MonitorConfig cfg;
        if (phase == "monitor_5ms") cfg.poll_s = 0.005;
        monitor = std::make_unique<EnergyMonitor>(*probe, cfg);
        monitor->start();
      }
      std::vector<double> w, h;
      const double t_phase = now_s();
      while (now_s() - t_phase < 0.4) {
        const double t0 = now_s();
        model->step();
        const double t1 = now_s();
        model->synchronize();
        w.push_back((now_s() - t0) * 1e6);
        h.push_back((t1 - t0) * 1e6);
      }
      if (monitor) monitor->stop();
      wall[phase].push_back(median_of(w));
      host[phase].push_back(median_of(h));
    }
  }
  nlohmann::json out = {{"model", name}, {"batch", in.batch}, {"dtype", in.dtype}, {"seconds", seconds}};
  const std::size_t cycles = wall["none"].size();
  for (const auto& phase : phases) {
    std::vector<double> ratio;  // against the mean of the two baselines of the same cycle
    for (std::size_t i = 0; i < cycles; ++i)
      ratio.push_back(wall[phase][i] / ((wall["none"][i] + wall["none_again"][i]) / 2));
    out["phases"][phase] = {{"wall_us", wall[phase]},
                            {"host_us", host[phase]},
                            {"median_wall_us", median_of(wall[phase])},
                            {"median_ratio_to_baselines", median_of(ratio)}};
    fmt::print(stderr, "{:12} median step {:8.1f} µs, host {:8.1f} µs, ratio to the cycle's baselines {:.4f}\n", phase,
               median_of(wall[phase]), median_of(host[phase]), median_of(ratio));
  }
  std::ofstream(argv[1]) << out.dump(1) << std::endl;
  return 0;
}
