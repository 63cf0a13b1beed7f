#include "core/energy/windows.h"

#include <algorithm>

namespace opcost {

std::optional<double> calls_at(const std::vector<CompletionPoint>& tl, double t) {
  if (tl.empty() || t < tl.front().t_s || t > tl.back().t_s) return std::nullopt;
  auto hi = std::lower_bound(tl.begin(), tl.end(), t,
                             [](const CompletionPoint& p, double x) { return p.t_s < x; });
  if (hi == tl.begin()) return hi->calls;
  auto lo = hi - 1;
  const double span = hi->t_s - lo->t_s;
  if (span <= 0) return hi->calls;
  return lo->calls + (hi->calls - lo->calls) * (t - lo->t_s) / span;
}

std::optional<double> update_period_s(const std::vector<CounterEdge>& edges) {
  if (edges.size() < 3) return std::nullopt;
  std::vector<double> d;
  for (std::size_t i = 1; i < edges.size(); ++i) d.push_back(edges[i].t_s - edges[i - 1].t_s);
  return median_of(d);
}

std::vector<EnergyWindow> make_windows(const std::vector<CounterEdge>& edges,
                                       const std::vector<CompletionPoint>& timeline,
                                       double start_after_s, std::size_t periods) {
  std::vector<CounterEdge> usable;
  for (const auto& e : edges)
    if (e.t_s >= start_after_s && calls_at(timeline, e.t_s)) usable.push_back(e);
  std::vector<EnergyWindow> out;
  periods = std::max<std::size_t>(periods, 1);
  for (std::size_t i = 0; i + periods < usable.size(); i += periods) {
    const auto& a = usable[i];
    const auto& b = usable[i + periods];
    const double calls = *calls_at(timeline, b.t_s) - *calls_at(timeline, a.t_s);
    if (calls <= 0 || b.energy_mJ <= a.energy_mJ) continue;  // a 0 J window is invalid
    out.push_back({a.t_s, b.t_s, b.energy_mJ - a.energy_mJ, calls});
  }
  return out;
}

EnergyEstimate estimate_energy(const std::vector<EnergyWindow>& windows, double idle_power_W) {
  EnergyEstimate est;
  est.windows = windows.size();
  if (windows.empty()) return est;
  std::vector<double> per_call;
  double energy = 0, calls = 0;
  for (const auto& w : windows) {
    per_call.push_back(w.per_call_mJ());
    energy += w.energy_mJ;
    calls += w.calls;
    est.seconds += w.seconds();
  }
  est.per_call_mJ = summarize(per_call);
  est.power_W = energy / 1000.0 / est.seconds;
  est.wall_s_per_call = est.seconds / calls;
  est.above_idle_mJ = est.per_call_mJ.mean - idle_power_W * est.wall_s_per_call * 1000.0;
  return est;
}

std::optional<double> average_power_W(const std::vector<CounterEdge>& edges) {
  if (edges.size() < 2) return std::nullopt;
  const auto& a = edges.front();
  const auto& b = edges.back();
  if (b.t_s <= a.t_s) return std::nullopt;
  return (b.energy_mJ - a.energy_mJ) / 1000.0 / (b.t_s - a.t_s);
}

}  // namespace opcost
