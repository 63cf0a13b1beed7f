#pragma once
// The result of measuring one operator: what the reports print and the database stores.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/energy/monitor.h"
#include "core/energy/probe.h"
#include "core/stats/summary.h"

namespace opcost {

struct Environment {
  std::string device_kind;  // "cuda" or "cpu"
  std::string device_name, device_uuid;
  std::string driver_version, cuda_version, torch_version;
  std::string opcost_version;
  std::string host;
};

struct TimeResult {
  Summary per_call_us;      // GPU time per call (CUDA events); wall time on the CPU
  std::string stop_reason;  // converged / time_budget / sample_budget
  std::size_t calls_per_sample = 1;
  double host_us_per_call = 0;      // host wall time to issue one call (dispatch + launch)
  double host_cpu_us_per_call = 0;  // host thread CPU time to issue one call
  // CUDA: samples kept although their batch outlasted the GPU prefill, so the GPU may have
  // waited for the host inside them (after 50 late batches; see Runner::time_cuda).
  std::size_t host_bound_samples = 0;
  // The host wall time per call with its interval, where the host time is the figure: a call
  // without device work on a GPU (per_call_us is then all zeros). n = 0 otherwise.
  Summary host_us;
};

struct EnergyResult {
  bool available = false;
  std::string unavailable_reason;  // when !available
  std::string source;              // "nvml-energy-counter", "rapl"
  Summary per_call_mJ;             // over windows
  double above_idle_mJ = 0;
  double power_W = 0;  // average over the windows
  std::optional<double> idle_power_W;
  double wall_us_per_call = 0;  // loop wall time per call (>= GPU time when launch-bound)
  double counter_period_s = 0;
  std::size_t windows = 0;
  double effective_windows = 0;     // windows corrected for their autocorrelation
  std::size_t stalled_windows = 0;  // dropped: the loop stalled and the GPU idled
  double seconds = 0;
  // The windows themselves (start relative to the loop's start), for the JSON report.
  std::vector<EnergyWindow> window_list;
  double loop_start_s = 0;
  // The busy share of a duty-cycled loop (core/energy/duty_cycle.h), 0 for a continuous one. Not
  // stored: the row keeps it in its source, method and flags.
  double duty_cycle_busy_share = 0;
  // How the loop issued its calls when not one by one ("replayed from a CUDA graph of 400
  // calls"), or why a graph it wanted was not used (torch/graph_batch.h): for the method text.
  // Not stored (the row's method keeps it).
  std::string loop_note;
};

// Appended to the method of an op timed by wall clock because it waits for the device
// (aten::item, nonzero, a copy to the host), for the human reader. Predictions read the
// stored `waits_for_device` instead; only the migration of rows stored before that field
// existed reads this note (core/store/measurement_record.h).
inline constexpr const char* kWaitsForDeviceNote = " (the op waits for the device)";

// The settings a measurement ran with: the options registry's names (workflow/options.h) →
// canonical text values, in the registry's order. Read back from a stored document they come
// in name order (a JSON object's).
using Settings = std::vector<std::pair<std::string, std::string>>;

struct Measurement {
  int64_t db_id = -1;
  std::string created_at;  // UTC ISO-8601
  std::string op, overload, args, args_hash, dtype;
  std::string cache_mode = "warm";
  std::string autocast;  // "" or the autocast dtype the op was replayed under
  std::string method;
  // Timed by wall clock because the op waits for the device: its time is all host time.
  bool waits_for_device = false;
  // "none-view" or "none-no-kernel" for a call that does no work on its device
  // (core/measure/loop_plan.h); "" when it does, or for a row stored before schema 5.
  std::string device_work;
  // What it ran with, and the stable hash of the identity members among them (the settings
  // that change the figure: seed, budgets, energy settings): part of the identity key.
  Settings settings;
  std::string settings_key;  // "" for a row stored before settings were recorded
  Environment env;
  TimeResult time;
  EnergyResult energy;
  DeviceState before, after;
  StateSummary during;
  std::vector<std::string> flags;
  std::size_t total_calls = 0;
  double total_seconds = 0;
  std::vector<PowerSample> power_trace;     // not stored in the database
  std::vector<PowerSample> sm_clock_trace;  // likewise

  std::string display_name() const { return overload.empty() ? op : op + "." + overload; }
};

// Flags for a run that saw throttling, a clock change or another process on the GPU.
std::vector<std::string> hygiene_flags(const DeviceState& before, const DeviceState& after, const StateSummary& during);

// The power a row's energy per call implies over its GPU time per call, its loop's own gaps
// charged at `gap_power_W` (the GPU's power between kernels; idle power when not given).
// nullopt without energy or GPU time (a call timed by wall clock).
std::optional<double> implied_power_W(const Measurement& m, std::optional<double> gap_power_W = std::nullopt);

// Flags for figures that are weaker than they look: a time from a single sample (no
// interval), samples in which the GPU may have waited for the host, an energy per call that
// implies more than the board's power limit over the GPU time
// (`energy_over_power_limit:<implied>W><limit>W`, see implied_power_W). Also
// `energy_at_duty_cycle:<busy>%` on an energy measured duty-cycled (core/energy/duty_cycle.h).
std::vector<std::string> measurement_flags(const Measurement& m, std::optional<double> gap_power_W = std::nullopt);

// The flag of an energy that is a pooled column's power over the call's own time, followed by the
// column's members (core/energy/shared_windows.h): how it was measured, not a warning about the
// device.
inline constexpr std::string_view kPooledEnergyFlag = "energy_pooled:";

std::string utc_timestamp();

}  // namespace opcost
