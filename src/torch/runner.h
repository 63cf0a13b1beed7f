#pragma once
// The measurement engine: warm-up, timing with an adaptive stopping rule, host-side issue
// cost, and energy from the device's cumulative counter. Torch-free header.
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/energy/probe.h"
#include "core/measure/loop_plan.h"
#include "core/measure/watchdog.h"
#include "core/measurement.h"
#include "core/spec/device_spec.h"
#include "core/stats/stopping.h"
#include "torch/graph_batch.h"
#include "torch/replay.h"

namespace opcost {

struct SplitColumns;  // core/energy/shared_windows.h

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
  // The model step the op is part of, as power (validate, model: the step and the gap probe are
  // measured before the operators). An op whose own energy loop ran at the power cap while the
  // step stays below it gets its energy measured again at the step's duty cycle
  // (duty_cycle_loop.cpp, core/energy/duty_cycle.h). Unset: the loop's figure stands.
  struct StepPower {
    double step_W = 0;            // the step's average power: energy per step / its loop's time
    std::optional<double> gap_W;  // the GPU's power between kernels (the gap probe); without it, no
                                  // duty-cycled loop, and the row's method says so
    double gap_ci_W = 0;          // its 95% half-width
  };
  std::optional<StepPower> step_power;
  // Time the op from the energy loop's settle (batches back to back, each queued while the
  // one ahead of it ran: events then time its kernels alone), not in a loop of its own; an op
  // that leaves the GPU waiting for the host still gets its own loop. Short loops use it: the
  // settle is spent anyway.
  bool time_in_energy_settle = false;
  bool keep_power_trace = false;
  // "auto": on CUDA, a call whose host issue time exceeds its GPU time has its energy loop
  // replay a CUDA graph of its batch (torch/graph_batch.h), so the loop runs at the GPU's pace,
  // not the host's; "off": every loop issues its calls one by one.
  std::string energy_graphs{kEnergyGraphsAuto};
  // The call synchronises itself (a whole model step): time it by wall clock, as on the CPU,
  // instead of CUDA events behind a sleep-kernel prefill.
  bool synchronous_calls = false;
  // A measurement running past budget × this is abandoned with an error (see Watchdog).
  double abandon_factor = Watchdog::Options{}.abandon_factor;
  // Status lines for a measurement that runs past a few seconds; none when empty.
  ProgressFn progress;
};

// Whether `part` is a share of a whole with its time (a step's operator): its energy interval is
// then sized to that share, else it keeps energy_target_rel_ci95 (a sweep's item, a measure).
inline bool is_part_of_whole(const std::optional<MeasureConfig::Whole>& part) { return part && part->time_us > 0; }

class Runner {
 public:
  // Opens the energy probe for the device (NVML on CUDA, RAPL on the CPU) if there is one.
  Runner(const std::string& device_kind, int device_index, MeasureConfig cfg);
  // With this energy probe instead (unit tests' simulated sensor; C++ only: neither command
  // line nor Python reaches it). nullptr: no energy, as with energy switched off.
  Runner(const std::string& device_kind, int device_index, MeasureConfig cfg, std::unique_ptr<EnergyProbe> probe);
  ~Runner();

  // Throws ReplayError (kind kOutOfMemory) when the loop runs out of device memory.
  Measurement measure(PreparedCall& call);
  // Whether `call` does work on the device (torch/device_work.h): kNoneView for a view of its
  // inputs (any device), kNoneNoKernel on CUDA for a call that launches no kernel, kUnknown
  // otherwise (and for a call that waits for the device). A few calls and ms of GPU sleep.
  // measure() decides the same itself; a caller grouping calls routes those without work
  // (plan_loops says no energy loop) to measure() alone.
  DeviceWork device_work_of(PreparedCall& call);
  // Several calls measured together (shared_energy_loop.cpp): each warmed up and timed as
  // measure() does it, then their energies in ONE loop whose counter windows a least-squares
  // split divides among them (core/energy/shared_windows.h), when the counter updates slowly
  // (NVML's ~100 ms); each in its own energy loop otherwise, or where the split cannot tell it
  // apart. `parts[i]`: call i's share of a whole (as MeasureConfig::part_of), or none. One
  // call's failure is its own result (what measure() would have thrown); the others go on.
  struct GroupResult {
    std::optional<Measurement> measurement;
    std::exception_ptr error;
  };
  std::vector<GroupResult> measure_group(const std::vector<PreparedCall*>& calls,
                                         const std::vector<std::optional<MeasureConfig::Whole>>& parts);
  // Whether measure_group shares counter windows here: energy on, and a counter that updates
  // slowly enough for shared windows to pay (NVML's ~100 ms, not RAPL's ~1 ms).
  bool shares_counter_windows();
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
    double gpu_per_call_s = 0;    // those calls' GPU time (events; 0: unknown), for the energy loop's graph choice
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
  // A call that synchronises itself (a whole step), timed by wall clock batch by batch in its
  // energy loop, which then runs until this rule is done too.
  struct LoopWallTiming {
    explicit LoopWallTiming(const StoppingCriterion& rule) : stop(rule) {}
    AdaptiveStop stop;
    std::vector<double> per_call_us, cpu_us;
    std::size_t calls_per_sample = 0;
  };
  // Fills m.time from them, or says there are none (the loop never ran).
  bool take_loop_wall_timing(const LoopWallTiming& t, Measurement& m) const;
  // Whether a call blocks until the device is idle (.item(), nonzero, a copy to the host), and
  // for one issued within half the check's sleep (so it did not wait), the GPU time of that call.
  struct DeviceWait {
    bool waits = false;
    std::optional<double> one_call_gpu_us;
  };
  DeviceWait waits_for_device(PreparedCall& call);
  double budget_s() const;
  // The watchdog's settings for one measurement: this budget, the abandon factor.
  Watchdog::Options watchdog_options() const;
  // Calls one by one for at least `warmup_s`, each synchronised on CUDA where `sync_device`:
  // the time per call.
  double warm_up_host(PreparedCall& call, Measurement& m, const StoppingCriterion& rule, double warmup_s,
                      bool sync_device);
  // Batches of about `sample_s` each (cfg_.target_sample_s but for a view's host time), each
  // ending in a device synchronisation on CUDA where `sync_device` (not for a call without
  // device work: there is nothing to wait for, and the synchronisation's own cost would be
  // counted in its host time).
  void time_cpu(PreparedCall& call, Measurement& m, const StoppingCriterion& rule, double warmup_s, double sample_s,
                bool sync_device);
  // A call without device work on CUDA: host wall time with its interval (a short budget), GPU
  // time 0, and no energy loop (plan_loops).
  void time_host_only(PreparedCall& call, Measurement& m, DeviceWork work);
  struct WorkCheck {
    DeviceWork work = DeviceWork::kUnknown;
    bool synchronous = false;  // the call waits for the device, or synchronises itself
  };
  WorkCheck check_device_work(PreparedCall& call);
  // Batches of about 2 ms from `per_call_s`; `timing`, when given, collects the settle's GPU
  // times (energy before timing).
  // `warm` (energy before timing): the warm-up's GPU and issue times, whether the op is host-bound
  // (once timed, m.time says); a host-bound op's loop replays a CUDA graph (cfg_.energy_graphs).
  // `wall` (a call that synchronises itself): its wall time per batch, the loop running until
  // wall's rule is done as well.
  void measure_energy(PreparedCall& call, Measurement& m, double per_call_s, SettleTiming* timing,
                      const CudaWarmUp* warm = nullptr, LoopWallTiming* wall = nullptr);
  // The energy loop's batch as a CUDA graph, for a host-bound op with graphs on
  // (energy_loop_replays_graph), else nullptr; sets `gpu_us` (its GPU time per call) and
  // m.energy.loop_note (the graph's size, or why the capture failed).
  std::unique_ptr<GraphBatch> energy_graph(PreparedCall& call, Measurement& m, const CudaWarmUp* warm, double& gpu_us);
  // The energy loop's stopping target: cfg_'s, or as part of a whole, by the part's share of it.
  double energy_target_rel_ci95(double per_call_us) const;
  double share_of_whole(double per_call_us) const;
  // After an energy loop at the power cap, for an op of a step below the cap (cfg_.step_power):
  // its energy again, in bursts at the step's duty cycle (duty_cycle_loop.cpp). Replaces
  // m.energy when it gives a figure; the method keeps the capped loop's and says why.
  void measure_energy_duty_cycled(PreparedCall& call, Measurement& m);
  // Whether measure_energy_duty_cycled will measure `m` again, its plain loop seen at the cap
  // with `loop_power_W` so far (duty_cycle_loop.cpp).
  bool duty_cycle_will_run(const Measurement& m, double loop_power_W) const;
  // Whether `m` can be measured duty-cycled at all (CUDA, energy, issued ahead of the GPU).
  bool may_duty_cycle(const Measurement& m) const;
  std::optional<double> idle_power();
  // measure_group's parts (shared_energy_loop.cpp). The calls' energies from one shared loop
  // whose split has `columns` (pooled columns: core/energy/shared_windows.h); those it could not
  // identify are returned (their own loops measure them).
  std::vector<std::size_t> measure_energy_shared(const std::vector<PreparedCall*>& calls,
                                                 const std::vector<Measurement*>& ms,
                                                 const std::vector<std::optional<MeasureConfig::Whole>>& parts,
                                                 const SplitColumns& columns);
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
  std::optional<double> counter_period_s_;  // from the idle-power probe's counter edges
  // measure_group times its calls first: their energy loops wait for the group's shared loop.
  bool energy_deferred_ = false;
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
