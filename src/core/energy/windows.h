#pragma once
// Energy per call from a cumulative counter that updates in steps (~100 ms on the H100).
//
// The operator loops continuously; a monitor records the counter's update edges (the host
// time at which the value changed), and the loop records a completion timeline (host time,
// calls completed so far). Each window spans whole counter periods, edge to edge, so no
// partial interval of the counter is ever guessed; the calls that completed inside the window
// come from the timeline by linear interpolation. Energy per call is the window's energy over
// its calls; the spread across windows gives the confidence interval.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/stats/summary.h"

namespace opcost {

struct CounterEdge {
  double t_s;        // host time of the update: midway between the polls that bracket it
  double energy_mJ;  // the counter's value from then on
  // Half the gap between those polls: the update happened within t_s ± half_gap_s. A monitor
  // thread the OS put off sees an edge late and blurred; such edges mis-cut a shared window.
  double half_gap_s = 0;
};

struct CompletionPoint {
  double t_s;    // host time at which these calls were known complete
  double calls;  // cumulative calls completed
};

struct EnergyWindow {
  double t0_s, t1_s, energy_mJ, calls;
  double seconds() const { return t1_s - t0_s; }
  double power_W() const { return energy_mJ / 1000.0 / seconds(); }
  double per_call_mJ() const { return energy_mJ / calls; }
};

// Cumulative calls at time t, interpolated; nullopt outside the timeline.
std::optional<double> calls_at(const std::vector<CompletionPoint>& timeline, double t_s);

// Median interval between counter updates (the counter's update period), or nullopt.
std::optional<double> update_period_s(const std::vector<CounterEdge>& edges);

// Windows of `periods` counter periods each, taken back to back from edges after
// `start_after_s` and inside the timeline. Windows in which no call completed are dropped.
std::vector<EnergyWindow> make_windows(const std::vector<CounterEdge>& edges,
                                       const std::vector<CompletionPoint>& timeline, double start_after_s,
                                       std::size_t periods = 1);

// Drops windows in which the loop completed calls more slowly than `min_fraction` of the
// median rate: the host stalled (page faults, preemption), the GPU idled, and the window's
// energy per call describes the stall rather than the operator. Returns how many it dropped.
std::size_t drop_stalled_windows(std::vector<EnergyWindow>& windows, double min_fraction = 0.9);

struct EnergyEstimate {
  // Over windows. Consecutive windows are correlated when power drifts or oscillates (a
  // power-capped GPU's clock control swings with a period of about a second): the interval
  // uses the effective number of windows n(1-r1)/(1+r1), r1 the lag-1 autocorrelation.
  Summary per_call_mJ;
  double power_W = 0;          // mean power over all windows
  double above_idle_mJ = 0;    // per call, power above the idle power
  double wall_s_per_call = 0;  // window time / calls: includes any gaps the GPU saw
  double seconds = 0;          // total window time
  std::size_t windows = 0;
  double lag1_autocorrelation = 0;
  double effective_windows = 0;
};

// Lag-1 autocorrelation of a series (0 for fewer than 3 values).
double lag1_autocorrelation(const std::vector<double>& x);

EnergyEstimate estimate_energy(const std::vector<EnergyWindow>& windows, double idle_power_W);

// Average power between the first and last edge (an idle measurement); nullopt if < 2 edges.
std::optional<double> average_power_W(const std::vector<CounterEdge>& edges);

}  // namespace opcost
