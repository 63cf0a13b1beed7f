#pragma once
// Energy per call at a model's duty cycle, for an operator whose own loop ran at the power cap
// (issue 25). Torch-free: the decision, the loop's shape and the window arithmetic.
//
// A continuous loop of a heavy GEMM holds the GPU at its power limit: the cap controller lowers
// the clock, and the energy per call is the capped one. In a model step whose average power is
// below the limit the same kernel runs in short bursts between lighter ones, at full clock. The
// duty-cycled loop reproduces that: bursts of the operator, each followed by a gap in which the
// GPU does what the gap-power probe does, so that the loop's average power is near the step's.
// Per counter window the gaps' energy (gap power × gap time) is taken off and the rest divided by
// the calls: the operator's energy per call with the gaps charged as the prediction's timeline
// charges them.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/energy/windows.h"
#include "core/stats/summary.h"

namespace opcost {

// What the decision needs from the operator's plain energy loop and from the step around it.
struct DutyCycleInputs {
  std::optional<double> power_limit_W;  // the board's limit (before the loop)
  bool sw_power_cap_seen = false;       // the loop's monitor saw the software power-cap reason
  double loop_power_W = 0;              // the plain loop's average power
  double loop_max_window_power_W = 0;   // its highest window
  std::optional<double> step_power_W;   // the model step's average power (energy / loop time)
  std::optional<double> gap_power_W;    // the GPU's power between kernels (the gap probe)
};

// The loop ran at the cap when the cap reason was seen or a window reached this share of the
// limit; the step is below it when its power is under the other share.
inline constexpr double kAtCapShare = 0.97;
inline constexpr double kStepBelowCapShare = 0.9;
// Whether a model step of `step_W` runs below the board's limit `limit_W` by that share: a loop
// at the cap then measures another regime than the step's (false where either is unknown).
inline bool step_below_cap(std::optional<double> step_W, std::optional<double> limit_W) {
  return step_W && limit_W && *step_W < kStepBelowCapShare * *limit_W;
}
// Busy shares outside this range make either the gaps' or the bursts' energy too small a part of
// the windows to measure well.
inline constexpr double kMinBusyShare = 0.2, kMaxBusyShare = 0.9;
// A burst spans about this much GPU time (the op's own time when longer): long enough that the
// host's issue and synchronisation are a small part, short against the counter's period.
inline constexpr double kBurstBusyS = 1e-3;

// A plain loop seen at the cap, which will be measured again duty-cycled, stops after this many
// windows: the duty cycle needs its power alone (busy_share_for), not a narrow energy figure.
inline constexpr std::size_t kWindowsBeforeDutyCycle = 2;

struct DutyCyclePlan {
  bool at_cap = false;  // the plain loop ran at the cap (then the row says so either way)
  bool run = false;     // measure again duty-cycled
  double busy_share = 0;
  std::string why_not;  // at the cap but not run: why (for the row's method)
};

// Whether to measure again duty-cycled, and at which busy share.
DutyCyclePlan plan_duty_cycle(const DutyCycleInputs& in);

// The busy share d that brings the loop's average power to the step's, from the plain loop's
// power as the busy power: d·P_loop + (1−d)·P_gap = P_step, clamped to [kMinBusyShare,
// kMaxBusyShare]. The plain loop's power is the capped one, so the duty-cycled loop runs a little
// above the step's power: near it, never at the limit while P_step is below 0.9 of it.
double busy_share_for(double step_W, double gap_W, double loop_W);

// Calls per burst for an op of `per_call_s` GPU time: kBurstBusyS of work, at least one call.
std::size_t calls_per_burst(double per_call_s);

// The gap that follows a burst of `burst_busy_s` so that the cycle's busy share is `busy_share`.
double gap_after_burst_s(double burst_busy_s, double busy_share);

struct DutyCycleEstimate {
  // Per window: (energy − gap power × (window time − calls × busy per call)) / calls.
  Summary per_call_mJ;
  double power_W = 0;           // the loop's average power over the windows
  double busy_share = 0;        // achieved: calls × busy per call / window time
  double gap_s_per_call = 0;    // window time not spent on the op, per call
  double gap_share_of_mJ = 0;   // of each window's energy, the share taken off as gaps
  double systematic_ci_mJ = 0;  // the gap power's interval × gap time per call, in the interval
  double seconds = 0;
  std::size_t windows = 0;
  double effective_windows = 0;  // corrected for the windows' lag-1 autocorrelation
  std::string why_none;          // set when no estimate could be made (then windows == 0)
};

// The fit over the duty-cycled loop's windows. `busy_s_per_call` is the op's GPU time per call in
// the bursts (CUDA events around each burst); `gap_power_ci_W` is the gap power's 95% half-width,
// added to the interval in full (a systematic error shared by every window).
DutyCycleEstimate estimate_duty_cycled(const std::vector<EnergyWindow>& windows, double busy_s_per_call,
                                       double gap_power_W, double gap_power_ci_W);

}  // namespace opcost
