#pragma once
// Energy per call and per layer of a traced run (docs/trace.md, "Energy per layer"). The GPU's
// energy counter updates about every 100 ms, far slower than a layer, so the traced kernels
// are charged with power measured elsewhere: each call's kernels at its operator's active
// power (its own loop's energy above the GPU's power between kernels, over its device time),
// and the GPU's idle time before them at the power between kernels. The sum is then checked
// against the untraced steps' measured energy, never scaled to it. Torch-free.
#include <cstdint>
#include <string>
#include <vector>

#include "core/inventory/inventory.h"
#include "core/trace/activities.h"

namespace opcost {

// What one traced call's kernels draw, from its operator's measurement.
struct CallPower {
  double active_W = 0, active_ci_W = 0;  // above the power between kernels; 95% half-width
  int64_t measurement = -1;              // calls sharing a measurement share its error
  std::string why_none;                  // not empty: no power (no measurement, no energy in it)
};

// The inventory's call (index into Inventory::sequence) each traced call is, -1 for none. A
// model makes the same calls in the same order every step, so the k-th call of an operator in
// a kept step is the k-th call of that operator in the inventory's step. Calls outside the
// kept steps, or beyond the inventory's count of their operator, match nothing.
std::vector<int> match_inventory_calls(const TraceRun& run, const Inventory& inv);

// Attributes energy to the run's calls (TraceRun::energy). `step`, the untraced step measured
// with energy, gives the step's time in its energy loop: the traced idle time between kernels
// is scaled to that step's (its time less the traced kernels' busy time), since the profiler
// slows the host and the GPU waits longer for it. Idle time before a kernel belongs to the
// call that launched the kernel. Throws std::invalid_argument when `step` has no energy or
// `power` does not cover the run's calls.
EnergyAttribution attribute_energy(const TraceRun& run, const std::vector<CallPower>& power, double gap_power_W,
                                   double gap_power_ci_W, const StepMeasurement& step);

}  // namespace opcost
