#pragma once
// A background thread that polls an EnergyProbe while a measurement runs: it records every
// update edge of the energy counter, samples power (the power trace) and, less often, the
// clocks, temperature, throttle reasons and other processes (hygiene).
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/energy/probe.h"
#include "core/energy/windows.h"

namespace opcost {

// Host time in seconds on the steady clock, shared by the monitor and the loops.
double now_s();

struct PowerSample {
  double t_s, watts;
};

// Aggregate of the state samples taken during a run.
struct StateSummary {
  std::optional<unsigned> sm_clock_min_MHz, sm_clock_max_MHz;
  std::optional<unsigned> temperature_max_C;
  uint64_t throttle_reasons_seen = 0;
  unsigned other_processes_max = 0;
  std::size_t samples = 0;
};

struct MonitorConfig {
  double poll_s = 0.0005;        // energy counter poll period
  double power_every_s = 0.005;  // power trace sample period
  double state_every_s = 0.05;   // clocks/temperature/throttle period
};

class EnergyMonitor {
 public:
  explicit EnergyMonitor(EnergyProbe& probe, MonitorConfig cfg = {});
  ~EnergyMonitor();
  void start();
  void stop();
  std::vector<CounterEdge> edges() const;  // copy, safe while running
  std::size_t edge_count() const;
  std::vector<PowerSample> power_trace() const;
  std::vector<PowerSample> sm_clock_trace() const;     // (t, MHz) at each state sample
  std::vector<PowerSample> temperature_trace() const;  // (t, °C) at each state sample
  StateSummary state_summary() const;

 private:
  void run();
  EnergyProbe& probe_;
  MonitorConfig cfg_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::vector<CounterEdge> edges_;
  std::vector<PowerSample> power_, sm_clock_, temperature_;
  StateSummary state_;
};

// Waits for `count` counter updates with the device idle and returns the average power
// between the first and the last; nullopt (with `why`) if the counter does not move within
// `timeout_s`.
std::optional<double> measure_idle_power_W(EnergyProbe& probe, std::size_t count, double timeout_s, std::string* why,
                                           std::vector<CounterEdge>* edges_out = nullptr);

}  // namespace opcost
