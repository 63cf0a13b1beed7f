#include "core/trace/energy_attribution.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

#include "core/inventory/compiled_kernel_name.h"

namespace opcost {

std::vector<int> match_inventory_calls(const TraceRun& run, const Inventory& inv) {
  std::map<std::string, std::vector<int>> inventory_calls;  // operator -> its calls, in order
  // A traced ATen call carries its operator's name, a generated kernel's its whole record name
  // (the kernel and its source hash: the entry's display name).
  for (std::size_t k = 0; k < inv.sequence.size(); ++k) {
    const InventoryEntry& e = inv.entries[inv.sequence[k].entry];
    inventory_calls[is_compiled_kernel_name(e.op) ? e.display_name() : e.op].push_back(int(k));
  }
  std::vector<int> match(run.ops.size(), -1);
  std::vector<std::map<std::string, std::size_t>> seen(run.steps.size());  // per step: calls of each operator so far
  for (std::size_t i = 0; i < run.ops.size(); ++i) {                       // ordered by start
    const OpActivity& op = run.ops[i];
    if (op.step < 0) continue;
    const auto calls = inventory_calls.find(op.name);
    std::size_t& k = seen[std::size_t(op.step)][op.name];
    if (calls != inventory_calls.end() && k < calls->second.size()) match[i] = calls->second[k];
    ++k;
  }
  return match;
}

namespace {

double us(int64_t ns) { return double(ns) / 1000.0; }

// The kept step each device activity belongs to: its call's, or for one tied to no call, the
// step whose host range holds its start. -1: none (it ran outside the kept steps).
int step_of(const TraceRun& run, const DeviceActivity& a) {
  if (a.op >= 0) return run.ops[std::size_t(a.op)].step;
  for (std::size_t s = 0; s < run.steps.size(); ++s)
    if (a.start_ns >= run.steps[s].start_ns && a.start_ns <= run.steps[s].end_ns) return int(s);
  return -1;
}

// The GPU's idle time in the kept steps, each stretch owned by the call whose activity ends it:
// from the step's start (or the previous activity's end) to the next activity's start, with
// activities on all streams merged. Idle time before an activity tied to no call passes on to
// the next tied one, and at a step's end to its last.
struct IdleTimes {
  std::vector<double> owned_us;  // by call
  double owned_total_us = 0, busy_us = 0;
};
IdleTimes idle_times(const TraceRun& run) {
  std::vector<std::pair<const DeviceActivity*, int>> kept;
  for (const auto& a : run.device_activities)
    if (int s = step_of(run, a); s >= 0) kept.emplace_back(&a, s);
  std::stable_sort(kept.begin(), kept.end(),
                   [](const auto& x, const auto& y) { return x.first->start_ns < y.first->start_ns; });
  IdleTimes t{std::vector<double>(run.ops.size(), 0.0)};
  int64_t cursor = std::numeric_limits<int64_t>::min();
  int step = -1, last_owner = -1;
  double pending_us = 0;
  auto settle = [&] {  // the step ends: idle time not yet owned goes to its last call
    if (pending_us > 0 && last_owner >= 0) {
      t.owned_us[std::size_t(last_owner)] += pending_us;
      t.owned_total_us += pending_us;
    }
    pending_us = 0;
    last_owner = -1;
  };
  for (const auto& [a, s] : kept) {
    if (s != step) {
      settle();
      step = s;
      cursor = std::max(cursor, run.steps[std::size_t(s)].start_ns);
    }
    if (a->start_ns > cursor) pending_us += us(a->start_ns - cursor);
    if (a->end_ns > cursor) {
      t.busy_us += us(a->end_ns - std::max(a->start_ns, cursor));
      cursor = a->end_ns;
    }
    if (a->op >= 0) {
      t.owned_us[std::size_t(a->op)] += pending_us;
      t.owned_total_us += pending_us;
      pending_us = 0;
      last_owner = a->op;
    }
  }
  settle();
  return t;
}

}  // namespace

EnergyAttribution attribute_energy(const TraceRun& run, const std::vector<CallPower>& power, double gap_power_W,
                                   double gap_power_ci_W, const StepMeasurement& step) {
  if (power.size() != run.ops.size())
    throw std::invalid_argument(
        fmt::format("energy attribution: {} call powers for {} traced calls", power.size(), run.ops.size()));
  if (!step.energy_mJ) throw std::invalid_argument("the untraced step has no energy figure: " + step.energy_why);
  EnergyAttribution e;
  e.calls.resize(run.ops.size());
  e.gap_power_W = gap_power_W;
  e.gap_power_ci_W = gap_power_ci_W;
  const double steps = double(run.steps.size());
  e.measured_mJ = *step.energy_mJ * steps;
  e.measured_ci_mJ = step.energy_ci_mJ.value_or(0) * steps;  // one measurement: its error repeats

  std::set<std::size_t> without_power;
  for (const auto& a : run.device_activities) {
    if (step_of(run, a) < 0) continue;
    const double d_us = us(a.duration_ns());
    if (a.op < 0 || !power[std::size_t(a.op)].why_none.empty()) {
      e.unattributed_us += d_us;
      if (a.op >= 0 && without_power.insert(std::size_t(a.op)).second)
        ++e.calls_without_power[power[std::size_t(a.op)].why_none];
      continue;
    }
    const CallPower& p = power[std::size_t(a.op)];
    CallEnergy& c = e.calls[std::size_t(a.op)];
    c.kernels_mJ += d_us * p.active_W * 1e-3;  // W × µs = µJ
    c.kernels_ci_mJ += d_us * p.active_ci_W * 1e-3;
    c.measurement = p.measurement;
    e.kernels_mJ += d_us * p.active_W * 1e-3;
  }

  // The untraced step's idle time: its time in the energy loop less the kernels' busy time.
  const IdleTimes idle = idle_times(run);
  const double step_us = step.energy_loop_time_us.value_or(step.time_us);
  const double untraced_idle_us = std::max(0.0, steps * step_us - idle.busy_us);
  e.gap_scale = idle.owned_total_us > 0 ? untraced_idle_us / idle.owned_total_us : 0;
  for (std::size_t i = 0; i < run.ops.size(); ++i) {
    CallEnergy& c = e.calls[i];
    c.gap_us = idle.owned_us[i] * e.gap_scale;
    c.gaps_mJ = c.gap_us * gap_power_W * 1e-3;
    e.gaps_mJ += c.gaps_mJ;
  }
  return e;
}

}  // namespace opcost
