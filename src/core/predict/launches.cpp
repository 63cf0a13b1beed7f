#include "core/predict/launches.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "core/stats/summary.h"

namespace opcost {

namespace {

// A call's launches in launch order, each at its fraction of the call's host time, with its
// share of the call's device time. A launch the trace did not see is placed at the return.
std::vector<LaunchPoint> points_of(const CallKernels& call) {
  std::vector<TracedLaunch> ls = call.launches;
  const auto when = [](const TracedLaunch& l) { return l.launch_ns ? l.launch_ns : UINT64_MAX; };
  std::stable_sort(ls.begin(), ls.end(), [&](const auto& a, const auto& b) { return when(a) < when(b); });
  uint64_t device_ns = 0;
  for (const auto& l : ls) device_ns += l.duration_ns;
  const double span = call.end_ns > call.start_ns ? double(call.end_ns - call.start_ns) : 0;
  std::vector<LaunchPoint> out;
  for (const auto& l : ls) {
    LaunchPoint p;
    if (l.launch_ns && span > 0)
      p.at_fraction = std::clamp((double(l.launch_ns) - double(call.start_ns)) / span, 0.0, 1.0);
    p.gpu_share = device_ns ? double(l.duration_ns) / double(device_ns) : 1.0 / double(ls.size());
    out.push_back(p);
  }
  return out;
}

// LaunchProfiles::traced_step_timeline_us: each traced call as a timeline op of its own host
// time (since the previous call returned) and kernel time, launched at its own points.
void replay_through_timeline(const std::vector<CallKernels>& traced, LaunchProfiles& out) {
  if (traced.empty()) return;
  const uint64_t first_ns = traced.front().start_ns;
  uint64_t last_return_ns = first_ns, end_ns = first_ns;
  std::vector<TimelineOp> ops;
  for (const auto& call : traced) {
    const double before_us = call.start_ns > last_return_ns ? (call.start_ns - last_return_ns) / 1e3 : 0;
    const double through_us = call.end_ns > last_return_ns ? (call.end_ns - last_return_ns) / 1e3 : 0;
    ops.emplace_back(through_us, call.device_ns / 1e3, false, before_us, points_of(call));
    last_return_ns = std::max(last_return_ns, call.end_ns);
    end_ns = std::max(end_ns, call.end_ns);
    for (const auto& l : call.launches) end_ns = std::max(end_ns, l.start_ns + l.duration_ns);
  }
  out.traced_step_us = (end_ns - first_ns) / 1e3;
  out.traced_step_timeline_us = simulate(ops, 0, out.latency_us.value_or(0)).wall_us;
}

}  // namespace

LaunchProfiles launch_profiles(const Inventory& inv, const std::vector<CallKernels>& traced) {
  if (traced.size() != inv.sequence.size())
    throw std::runtime_error(
        fmt::format("the launch trace saw {} operator calls, the inventory {}", traced.size(), inv.sequence.size()));
  LaunchProfiles out;
  out.by_entry.resize(inv.entries.size());
  // Per entry, the points of its calls that launch as many kernels as its first call does
  // (the kernel check reports calls that launch others).
  std::vector<std::vector<std::vector<LaunchPoint>>> calls_of(inv.entries.size());
  for (std::size_t i = 0; i < traced.size(); ++i) {
    auto points = points_of(traced[i]);
    auto& calls = calls_of[inv.sequence[i].entry];
    if (points.empty() || (!calls.empty() && calls.front().size() != points.size())) continue;
    calls.push_back(std::move(points));
  }
  for (std::size_t e = 0; e < calls_of.size(); ++e) {
    const auto& calls = calls_of[e];
    if (calls.empty()) continue;
    double shares = 0;
    for (std::size_t k = 0; k < calls.front().size(); ++k) {
      std::vector<double> at, share;
      for (const auto& c : calls) {
        at.push_back(c[k].at_fraction);
        share.push_back(c[k].gpu_share);
      }
      // Medians per launch keep the points in order only if each call's are: enforce it.
      const double prev = out.by_entry[e].empty() ? 0 : out.by_entry[e].back().at_fraction;
      out.by_entry[e].push_back({std::max(prev, median_of(at)), median_of(share)});
      shares += out.by_entry[e].back().gpu_share;
    }
    for (auto& p : out.by_entry[e]) p.gpu_share = shares > 0 ? p.gpu_share / shares : 1.0 / calls.front().size();
  }
  // The latency: kernels whose launch found the GPU done with everything launched before.
  std::vector<TracedLaunch> all;
  for (const auto& c : traced)
    for (const auto& l : c.launches)
      if (l.launch_ns) all.push_back(l);
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
  std::vector<double> latency_us;
  uint64_t busy_until = 0;
  for (const auto& l : all) {
    if (l.launch_ns >= busy_until && l.start_ns >= l.launch_ns) latency_us.push_back((l.start_ns - l.launch_ns) / 1e3);
    busy_until = std::max(busy_until, l.start_ns + l.duration_ns);
  }
  out.idle_launches = latency_us.size();
  if (latency_us.size() >= LaunchProfiles::kMinIdleLaunches) out.latency_us = median_of(latency_us);
  replay_through_timeline(traced, out);
  return out;
}

}  // namespace opcost
