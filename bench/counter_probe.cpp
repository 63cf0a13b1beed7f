// Planted-load experiment: does NVML's total-energy counter see all of the time, or only a
// sampled part of each update period as the instant-power sensor does (25 ms of 100 ms on
// A100/H100)?
//
// Method: a burst of bf16 matrix products lasting `burst_ms` is started at a fixed phase after
// each counter update, once per update period, for `periods` periods; the phase is swept
// across the period. If the counter integrates all of the time, the energy added per period
// is the same at every phase (one burst plus the rest of the period at gap power). If it
// only samples part of each period, the per-period energy swings with the phase: high when
// the burst falls in the sampled part, low when outside. The instant-power reading (field 186)
// taken at each update is recorded beside it as a positive control.
//
//   opcost_counter_probe [burst_ms=20] [periods=12] > result.json
#include <ATen/ATen.h>
#include <ATen/DeviceAccelerator.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/energy/monitor.h"
#include "core/energy/nvml.h"
#include "core/energy/probe.h"
#include "core/stats/summary.h"

using namespace opcost;

namespace {

void gpu_sync() { at::accelerator::synchronizeDevice(0); }

void sleep_until(double t) {
  while (now_s() < t - 0.002) std::this_thread::sleep_for(std::chrono::microseconds(500));
  while (now_s() < t) {}
}

// Polls the counter until it changes; returns the host time of the change and the new value.
CounterEdge wait_edge(NvmlDevice& dev) {
  const double start = now_s();
  auto last = dev.total_energy_mJ().value();
  double last_t = now_s();
  while (now_s() - start < 1.0) {
    const double t = now_s();
    auto e = dev.total_energy_mJ().value();
    if (e != last) return {(t + last_t) / 2, double(e)};
    last_t = t;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  throw std::runtime_error("the energy counter did not update within 1 s");
}

}  // namespace

int main(int argc, char** argv) {
  const double burst_ms = argc > 1 ? std::atof(argv[1]) : 20.0;
  const int periods = argc > 2 ? std::atoi(argv[2]) : 12;
  const Nvml& nvml = Nvml::instance();
  if (!nvml.available()) {
    fmt::print(stderr, "NVML unavailable: {}\n", nvml.unavailable_reason());
    return 1;
  }
  auto dev = nvml.device_for_cuda_ordinal(0).value();
  c10::InferenceMode guard;
  const auto opts = at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16);
  at::Tensor a = at::randn({8192, 8192}, opts), b = at::randn({8192, 8192}, opts);
  for (int i = 0; i < 10; ++i) at::mm(a, b);
  gpu_sync();
  double t0 = now_s();
  for (int i = 0; i < 20; ++i) at::mm(a, b);
  gpu_sync();
  const double mm_s = (now_s() - t0) / 20;
  const int per_burst = std::max(1, int(std::lround(burst_ms * 1e-3 / mm_s)));
  auto burst = [&] {
    for (int i = 0; i < per_burst; ++i) at::mm(a, b);
    gpu_sync();
  };

  // Reference levels: idle, and continuous load (steady, so no blind spot can matter).
  std::string why;
  auto probe = make_nvml_probe(0, &why);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const double idle_W = measure_idle_power_W(*probe, 5, 3.0, &why).value();
  std::vector<CounterEdge> load_edges;
  {
    const double end = now_s() + 1.5;
    EnergyMonitor mon(*probe);
    mon.start();
    while (now_s() < end) burst();
    mon.stop();
    for (const auto& e : mon.edges())
      if (e.t_s > end - 1.0) load_edges.push_back(e);
  }
  const double load_W = average_power_W(load_edges).value_or(NAN);
  const double period_s = update_period_s(load_edges).value_or(0.1);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));

  nlohmann::json phases = nlohmann::json::array();
  const double burst_s = per_burst * mm_s;
  std::vector<double> phase_means, instant_means;
  for (double phase_ms = 0; phase_ms + burst_s * 1e3 < period_s * 1e3 - 3; phase_ms += 15) {
    std::vector<CounterEdge> edges;
    std::vector<double> instant, burst_start_offsets;
    edges.push_back(wait_edge(dev));
    for (int k = 0; k < periods + 1; ++k) {
      const double edge_t = edges.back().t_s;
      instant.push_back(dev.instant_power_W().value_or(NAN));
      sleep_until(edge_t + phase_ms * 1e-3);
      burst_start_offsets.push_back((now_s() - edge_t) * 1e3);
      burst();
      edges.push_back(wait_edge(dev));
    }
    // Per-period energy, skipping the first period (the first burst's power ramp).
    std::vector<double> per_period_J, dt_ms;
    for (std::size_t i = 2; i < edges.size(); ++i) {
      per_period_J.push_back((edges[i].energy_mJ - edges[i - 1].energy_mJ) / 1000.0);
      dt_ms.push_back((edges[i].t_s - edges[i - 1].t_s) * 1e3);
    }
    std::vector<double> inst(instant.begin() + 2, instant.end());
    const Summary e = summarize(per_period_J), p = summarize(inst), d = summarize(dt_ms);
    phase_means.push_back(e.mean);
    instant_means.push_back(p.mean);
    phases.push_back(
        {{"phase_ms", phase_ms},
         {"energy_per_period_J",
          {{"mean", e.mean}, {"ci95_low", e.ci95_low}, {"ci95_high", e.ci95_high}, {"stdev", e.stdev}, {"n", e.n}}},
         {"period_ms", d.mean},
         {"instant_power_W_at_update", {{"mean", p.mean}, {"stdev", p.stdev}}},
         {"burst_start_offset_ms", median_of(burst_start_offsets)}});
    fmt::print(stderr,
               "phase {:5.1f} ms: {:.3f} J/period ± {:.3f} (95%), "
               "instant power at update {:.0f} W ± {:.0f}\n",
               phase_ms, e.mean, e.ci95_half_width(), p.mean, p.stdev);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  auto spread = [](const std::vector<double>& v) {
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    double mean = 0;
    for (double x : v) mean += x / double(v.size());
    return (*hi - *lo) / mean;
  };
  const double expected_J = (load_W * burst_s + idle_W * (period_s - burst_s));
  nlohmann::json out = {
      {"device", dev.name().value_or("?")},
      {"driver", nvml.driver_version().value_or("?")},
      {"burst_ms", burst_s * 1e3},
      {"matmuls_per_burst", per_burst},
      {"counter_period_ms", period_s * 1e3},
      {"idle_power_W", idle_W},
      {"continuous_load_power_W", load_W},
      {"naive_expected_J_per_period", expected_J},
      {"phases", phases},
      {"energy_spread_across_phases", spread(phase_means)},
      {"instant_power_spread_across_phases", spread(instant_means)},
  };
  fmt::print("{}\n", out.dump(2));
  fmt::print(stderr,
             "counter: per-period energy varies {:.1f}% (max-min over mean) across phases; "
             "instant power at update varies {:.1f}%\n",
             100 * spread(phase_means), 100 * spread(instant_means));
  return 0;
}
