#include "core/energy/windows.h"

#include <algorithm>
#include <cmath>

namespace opcost {

std::optional<double> calls_at(const std::vector<CompletionPoint>& tl, double t) {
  if (tl.empty() || t < tl.front().t_s || t > tl.back().t_s) return std::nullopt;
  auto hi = std::lower_bound(tl.begin(), tl.end(), t, [](const CompletionPoint& p, double x) { return p.t_s < x; });
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
                                       const std::vector<CompletionPoint>& timeline, double start_after_s,
                                       std::size_t periods) {
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

std::size_t drop_stalled_windows(std::vector<EnergyWindow>& windows, double min_fraction) {
  if (windows.size() < 3) return 0;
  std::vector<double> rates;
  for (const auto& w : windows) rates.push_back(w.calls / w.seconds());
  const double median = median_of(rates);
  const auto before = windows.size();
  std::erase_if(windows, [&](const EnergyWindow& w) { return w.calls / w.seconds() < min_fraction * median; });
  return before - windows.size();
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
  // Widen the interval for correlated windows; never narrow it for anti-correlated ones.
  const double n = double(per_call.size());
  est.lag1_autocorrelation = lag1_autocorrelation(per_call);
  const double r = std::clamp(est.lag1_autocorrelation, 0.0, 0.95);
  est.effective_windows = std::max(2.0, n * (1 - r) / (1 + r));
  if (per_call.size() >= 2) {
    const double neff = std::min(est.effective_windows, n);
    const double half =
        student_t975(std::size_t(std::max(1.0, std::floor(neff - 1)))) * est.per_call_mJ.stdev / std::sqrt(neff);
    est.per_call_mJ.ci95_low = est.per_call_mJ.mean - half;
    est.per_call_mJ.ci95_high = est.per_call_mJ.mean + half;
  }
  est.power_W = energy / 1000.0 / est.seconds;
  est.wall_s_per_call = est.seconds / calls;
  est.above_idle_mJ = est.per_call_mJ.mean - idle_power_W * est.wall_s_per_call * 1000.0;
  return est;
}

double lag1_autocorrelation(const std::vector<double>& x) {
  if (x.size() < 3) return 0;
  double mean = 0;
  for (double v : x) mean += v / double(x.size());
  double num = 0, den = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    den += (x[i] - mean) * (x[i] - mean);
    if (i) num += (x[i] - mean) * (x[i - 1] - mean);
  }
  return den > 0 ? num / den : 0;
}

std::optional<double> average_power_W(const std::vector<CounterEdge>& edges) {
  if (edges.size() < 2) return std::nullopt;
  const auto& a = edges.front();
  const auto& b = edges.back();
  if (b.t_s <= a.t_s) return std::nullopt;
  return (b.energy_mJ - a.energy_mJ) / 1000.0 / (b.t_s - a.t_s);
}

}  // namespace opcost
