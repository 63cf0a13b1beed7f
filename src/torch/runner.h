#pragma once
// The measurement engine: warm-up, timing with an adaptive stopping rule, host-side issue
// cost, and energy from the device's cumulative counter. Torch-free header.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/energy/probe.h"
#include "core/measure/watchdog.h"
#include "core/measurement.h"
#include "core/spec/device_spec.h"
#include "core/stats/stopping.h"
#include "torch/replay.h"

namespace opcost {

struct MeasureConfig {
  StoppingCriterion time;  // its defaults are the stopping rule's (core/stats/stopping.h)
  double warmup_s = 0.05;
  double target_sample_s = 0.001;  // one timing sample spans about this much GPU time
  bool energy = true;
  // Energy: settle after the loop starts, then whole counter periods until the per-call
  // energy CI is within target, or the budget is spent.
  double energy_settle_s = 0.3;
  double energy_target_rel_ci95 = 0.02;
  std::size_t energy_min_windows = 6;
  double energy_max_s = 2.0;
  // At the power cap the clock control oscillates (~1 s period): more windows are needed.
  double energy_max_capped_s = 3.5;
  // The measurement is one part of a whole (an operator of a model's step, in `model` and
  // `validate`): its energy interval target follows its share of the whole's time, calls ×
  // its median time / the whole's (part_rel_ci95), in place of energy_target_rel_ci95, so that
  // the operators together keep the whole's interval. Unset: a measurement on its own.
  struct Whole {
    double time_us = 0;          // the whole's time
    double calls = 1;            // how often the part runs in it
    double energy_rel_ci95 = 0;  // the interval the parts together may add to the whole (always given)
  };
  std::optional<Whole> part_of;
  // Time the op from the energy loop's settle (batches back to back, each queued while the
  // one ahead of it ran: events then time its kernels alone), not in a loop of its own; an op
  // that leaves the GPU waiting for the host still gets its own loop. Short loops use it: the
  // settle is spent anyway.
  bool time_in_energy_settle = false;
  bool keep_power_trace = false;
  // The call synchronises itself (a whole model step): time it by wall clock, as on the CPU,
  // instead of CUDA events behind a sleep-kernel prefill.
  bool synchronous_calls = false;
  // A measurement running past budget × this is abandoned with an error (see Watchdog).
  double abandon_factor = Watchdog::Options{}.abandon_factor;
  // Status lines for a measurement that runs past a few seconds; none when empty.
  ProgressFn progress;
};

class Runner {
 public:
  // Opens the energy probe for the device (NVML on CUDA, RAPL on the CPU) if there is one.
  Runner(const std::string& device_kind, int device_index, MeasureConfig cfg);
  ~Runner();

  // Throws ReplayError (kind kOutOfMemory) when the loop runs out of device memory.
  Measurement measure(PreparedCall& call);
  // Later measurements use these loops; energy stays as the constructor chose (on or off).
  void reconfigure(MeasureConfig cfg) {
    cfg.energy = cfg_.energy;
    cfg_ = std::move(cfg);
  }
  const Environment& environment() const { return env_; }
  // Why energy is unavailable, or empty when a probe is open.
  const std::string& energy_unavailable_reason() const { return energy_why_; }

 private:
  Measurement measure_call(PreparedCall& call);
  struct CudaWarmUp {
    double per_call_s = 0;        // a call's time in synchronised chunks of ten
    double issue_per_call_s = 0;  // its host issue time behind a GPU sleep
  };
  CudaWarmUp warm_up_cuda(PreparedCall& call, Measurement& m);
  void time_cuda(PreparedCall& call, Measurement& m, const CudaWarmUp& warm);
  // The GPU times of the energy loop's batches during its settle, each queued while the batch
  // ahead of it still ran (MeasureConfig::time_in_energy_settle).
  struct SettleTiming {
    std::vector<double> per_call_us, host_us, cpu_us;
    std::size_t calls_per_sample = 0;
  };
  // Fills m.time from them, or says there are too few (the GPU waited for the host).
  bool take_settle_timing(const SettleTiming& t, Measurement& m) const;
  // Whether a call blocks until the device is idle (.item(), nonzero, a copy to the host).
  bool waits_for_device(PreparedCall& call);
  double budget_s() const;
  void time_cpu(PreparedCall& call, Measurement& m);
  // Batches of about 2 ms from `per_call_s`; `timing`, when given, collects the settle's GPU
  // times (energy before timing).
  void measure_energy(PreparedCall& call, Measurement& m, double per_call_s, SettleTiming* timing);
  // The energy loop's stopping target: cfg_'s, or as part of a whole, by the part's share of it.
  double energy_target_rel_ci95(double per_call_us) const;
  double share_of_whole(double per_call_us) const;
  std::optional<double> idle_power();

  class EnergyLoop;  // the energy loop's batches and their completions (runner.cpp)

  DeviceSpec device_;  // the kind ("cuda" or "cpu"), parsed once
  int index_;
  MeasureConfig cfg_;
  Environment env_;
  std::unique_ptr<EnergyProbe> probe_;
  std::string energy_why_;
  std::optional<double> idle_W_;
  double idle_at_s_ = -1e9;
  std::string idle_why_;
  Watchdog* watch_ = nullptr;  // the measurement in progress
};

Environment describe_environment(const std::string& device_kind, int device_index);
// The model name of the device a spec ("auto", "cpu", "cuda", "cuda:N") resolves to.
std::string device_model_name(const std::string& device_spec);

// Waits until the device has finished all work queued on it (nothing on the CPU).
void synchronize_device(const std::string& device_kind, int device_index);

// Median host time to observe an idle device finishing (a synchronise with nothing queued).
double synchronize_latency_us(const std::string& device_kind, int device_index);

// From a launch onto an idle GPU to the host seeing its kernel done, less the kernel's own
// time and `sync_us` (an idle synchronisation): the launch latency as the timeline adds it,
// measured without a profiler (median of 200 launches of a ~2 µs spin kernel). nullopt on the
// CPU or in a build without CUDA.
std::optional<double> launch_latency_untraced_us(const std::string& device_kind, int device_index, double sync_us);

// What one measurement may take at these settings, in seconds: set-up, warm-up, timing, and
// with energy the idle-power probe and the energy loop at its longest (at the power cap). The
// watchdog's budget, and the upper bound `measure --dry-run` gives.
double measurement_budget_s(const MeasureConfig& cfg, bool with_energy);

// Keeps the current CUDA stream busy for about `seconds` (a spin kernel, sized by the SM
// clock rate measured once per device), so that calls issued behind it never wait on the GPU
// and a full queue never blocks the host. Does nothing in a build without CUDA.
void gpu_sleep_s(double seconds);

}  // namespace opcost
