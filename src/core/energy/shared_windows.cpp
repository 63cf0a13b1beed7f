#include "core/energy/shared_windows.h"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>

namespace opcost {

namespace {

// Each input comes from the runner's own loop, not from a user: a violated contract is a bug,
// reported as one line naming the input.
void require(bool ok, const char* what) {
  if (!ok) throw std::invalid_argument(std::string("shared counter windows: ") + what);
}

// The part of a batch's span [span_t0, span_t1] inside [t0, t1].
double overlap_s(double span_t0, double span_t1, double t0, double t1) {
  return std::max(0.0, std::min(span_t1, t1) - std::max(span_t0, t0));
}

// Calls of `batch` that fall inside [t0, t1]: the batch's calls spread evenly over its span.
double calls_inside(double span_t0, double span_t1, double calls, double t0, double t1) {
  const double span = span_t1 - span_t0;
  if (span <= 0) return span_t1 > t0 && span_t1 <= t1 ? calls : 0.0;  // an instant: counted once
  return calls * overlap_s(span_t0, span_t1, t0, t1) / span;
}

}  // namespace

bool edges_too_blurred(const CounterEdge& a, const CounterEdge& b) {
  return a.half_gap_s + b.half_gap_s > kMaxEdgeBlurShare * (b.t_s - a.t_s);
}

std::vector<bool> irregular_batches(const std::vector<GroupCompletion>& timeline, std::size_t ops) {
  std::vector<bool> irregular(timeline.size(), false);
  for (const auto& c : timeline) require(c.op < ops, "a completion names an operator outside the group");
  // Each batch's time per call over its span (none for the opening completion or a batch of no calls).
  std::vector<std::optional<double>> pace(timeline.size());
  std::vector<std::vector<double>> per_call(ops);
  for (std::size_t k = 1; k < timeline.size(); ++k)
    if (timeline[k].calls > 0) {
      pace[k] = (timeline[k].t_s - timeline[k - 1].t_s) / timeline[k].calls;
      per_call[timeline[k].op].push_back(*pace[k]);
    }
  std::vector<double> median(ops, 0.0);
  for (std::size_t i = 0; i < ops; ++i)
    if (!per_call[i].empty()) median[i] = median_of(per_call[i]);
  for (std::size_t k = 1; k < timeline.size(); ++k) {
    const auto& c = timeline[k];
    if (!pace[k] || !(median[c.op] > 0)) continue;  // an operator seen only at instants: no pace to judge by
    const double s = *pace[k];
    if (s > kIrregularBatchFactor * median[c.op]) irregular[k] = true;
    // Complete at once with the batch before: its time is inside that batch's span.
    if (s * kIrregularBatchFactor < median[c.op]) {
      irregular[k] = true;
      if (k > 1) irregular[k - 1] = true;
    }
  }
  return irregular;
}

namespace {

void check_timeline(const std::vector<GroupCompletion>& timeline, std::size_t ops) {
  for (std::size_t k = 0; k < timeline.size(); ++k) {
    require(timeline[k].op < ops, "a completion names an operator outside the group");
    require(std::isfinite(timeline[k].t_s) && std::isfinite(timeline[k].calls) && timeline[k].calls >= 0,
            "a completion's time or calls is not a finite, non-negative number");
    require(k == 0 || timeline[k].t_s >= timeline[k - 1].t_s, "the completion timeline goes back in time");
  }
}

// make_shared_windows on a checked timeline, its irregular batches given: the lag search cuts
// windows at 21 lags from one timeline, between two batches of the loop.
std::vector<SharedWindow> windows_of(const std::vector<CounterEdge>& edges,
                                     const std::vector<GroupCompletion>& timeline, std::size_t ops,
                                     double start_after_s, const std::vector<bool>& irregular,
                                     LeftOutWindows* left_out) {
  if (left_out) *left_out = {};
  std::vector<SharedWindow> out;
  // The first completion only opens the timeline: when its calls began is unknown.
  if (timeline.size() < 2) return out;
  const double covered_from = timeline.front().t_s, covered_to = timeline.back().t_s;
  std::vector<CounterEdge> usable;
  for (const auto& e : edges)
    if (e.t_s >= start_after_s && e.t_s >= covered_from && e.t_s <= covered_to && std::isfinite(e.energy_mJ))
      usable.push_back(e);
  std::size_t first_batch = 1;  // batches ending before the current window start never count again
  for (std::size_t i = 0; i + 1 < usable.size(); ++i) {
    const auto& a = usable[i];
    const auto& b = usable[i + 1];
    if (b.t_s <= a.t_s || b.energy_mJ <= a.energy_mJ) continue;  // a 0 J window is invalid, not zero
    if (edges_too_blurred(a, b)) {
      if (left_out) ++left_out->blurred;
      continue;
    }
    SharedWindow w{a.t_s, b.t_s, b.energy_mJ - a.energy_mJ, std::vector<double>(ops, 0.0),
                   std::vector<double>(ops, 0.0)};
    while (first_batch < timeline.size() && timeline[first_batch].t_s < a.t_s) ++first_batch;
    double total = 0;
    bool stalled = false;
    for (std::size_t k = first_batch; k < timeline.size() && timeline[k - 1].t_s < b.t_s; ++k) {
      const double c = calls_inside(timeline[k - 1].t_s, timeline[k].t_s, timeline[k].calls, a.t_s, b.t_s);
      w.calls[timeline[k].op] += c;
      w.busy_s[timeline[k].op] += overlap_s(timeline[k - 1].t_s, timeline[k].t_s, a.t_s, b.t_s);
      total += c;
      stalled = stalled || (irregular[k] && c > 0);
    }
    if (stalled) {
      if (left_out) ++left_out->stalled;
      continue;
    }
    if (total > 0) out.push_back(std::move(w));
  }
  return out;
}

}  // namespace

std::vector<SharedWindow> make_shared_windows(const std::vector<CounterEdge>& edges,
                                              const std::vector<GroupCompletion>& timeline, std::size_t ops,
                                              double start_after_s, LeftOutWindows* left_out) {
  check_timeline(timeline, ops);
  return windows_of(edges, timeline, ops, start_after_s, irregular_batches(timeline, ops), left_out);
}

std::vector<Segment> plan_segments(const std::vector<double>& per_call_s, double counter_period_s, std::size_t cycles,
                                   double length_periods) {
  require(std::isfinite(counter_period_s) && counter_period_s > 0, "the counter period is not positive");
  require(std::isfinite(length_periods) && length_periods > 0, "the segments' length is not positive");
  for (double t : per_call_s) require(std::isfinite(t) && t > 0, "an operator's time per call is not positive");
  // Golden-ratio fractions: an evenly spread, never repeating sequence in [0, 1), so segment
  // lengths are neither equal nor commensurate with the counter period, with no random source.
  const double inverse_golden = (std::sqrt(5.0) - 1) / 2;
  std::vector<Segment> out;
  const std::size_t ops = per_call_s.size();
  std::size_t k = 0;
  for (std::size_t c = 0; c < cycles; ++c) {
    std::vector<std::size_t> order(ops);
    for (std::size_t j = 0; j < ops; ++j) order[j] = j;
    auto key = [&](std::size_t a) { return std::fmod(double((a + 1) * (c + 2)) * inverse_golden, 1.0); };
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
    for (std::size_t j = 0; j < ops; ++j, ++k) {
      const std::size_t op = order[j];
      const double fraction = std::fmod(double(k + 1) * inverse_golden, 1.0);
      const double length_s = (0.25 + 0.5 * fraction) * counter_period_s * length_periods;
      const double calls = std::max(1.0, std::round(length_s / per_call_s[op]));
      out.push_back({op, std::size_t(std::min(calls, 1e9))});
    }
  }
  return out;
}

namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

// Lawson–Hanson active-set non-negative least squares: min |A x − y| with x ≥ 0. Eigen has no
// NNLS; each inner step is an ordinary least-squares solve on the free (passive) columns.
VectorXd nnls(const MatrixXd& a, const VectorXd& y) {
  const Eigen::Index n = a.cols();
  VectorXd x = VectorXd::Zero(n);
  std::vector<bool> passive(std::size_t(n), false);
  const double tol = 1e-12 * std::max(1.0, (a.transpose() * y).cwiseAbs().maxCoeff());
  auto solve_passive = [&]() {
    std::vector<Eigen::Index> cols;
    for (Eigen::Index j = 0; j < n; ++j)
      if (passive[std::size_t(j)]) cols.push_back(j);
    MatrixXd sub(a.rows(), Eigen::Index(cols.size()));
    for (std::size_t c = 0; c < cols.size(); ++c) sub.col(Eigen::Index(c)) = a.col(cols[c]);
    const VectorXd s_sub = sub.colPivHouseholderQr().solve(y);
    VectorXd s = VectorXd::Zero(n);
    for (std::size_t c = 0; c < cols.size(); ++c) s(cols[c]) = s_sub(Eigen::Index(c));
    return s;
  };
  for (Eigen::Index outer = 0; outer < 3 * n + 10; ++outer) {
    const VectorXd gradient = a.transpose() * (y - a * x);
    Eigen::Index best = -1;
    for (Eigen::Index j = 0; j < n; ++j)
      if (!passive[std::size_t(j)] && gradient(j) > tol && (best < 0 || gradient(j) > gradient(best))) best = j;
    if (best < 0) break;  // the Karush–Kuhn–Tucker conditions hold: optimal
    passive[std::size_t(best)] = true;
    for (Eigen::Index inner = 0; inner < 3 * n + 10; ++inner) {
      const VectorXd s = solve_passive();
      bool feasible = true;
      double alpha = 1.0;
      for (Eigen::Index j = 0; j < n; ++j)
        if (passive[std::size_t(j)] && s(j) <= 0) {
          feasible = false;
          alpha = std::min(alpha, x(j) / (x(j) - s(j)));
        }
      if (feasible) {
        x = s;
        break;
      }
      x += alpha * (s - x);
      for (Eigen::Index j = 0; j < n; ++j)
        if (passive[std::size_t(j)] && x(j) <= tol) {
          passive[std::size_t(j)] = false;
          x(j) = 0;
        }
    }
  }
  return x;
}

std::string join_operators(const std::vector<std::size_t>& ops) {
  std::string s;
  for (std::size_t i = 0; i < ops.size(); ++i) s += (i ? ", " : "") + std::to_string(ops[i]);
  return s;
}

// Operators that take part in an exact (to `relative_tol`) linear dependence among the columns:
// the components of the right singular vectors of the (near-)zero singular values.
std::vector<std::size_t> collinear_operators(const MatrixXd& scaled, const std::vector<std::size_t>& fitted,
                                             double relative_tol) {
  Eigen::JacobiSVD<MatrixXd> svd(scaled, Eigen::ComputeFullV);
  const VectorXd& sv = svd.singularValues();
  std::vector<std::size_t> out;
  for (Eigen::Index j = 0; j < scaled.cols(); ++j) {
    bool involved = false;
    for (Eigen::Index k = 0; k < scaled.cols(); ++k) {
      const double s = k < sv.size() ? sv(k) : 0.0;
      if (s <= relative_tol * sv(0) && std::abs(svd.matrixV()(j, k)) > 1e-3) involved = true;
    }
    if (involved) out.push_back(fitted[std::size_t(j)]);
  }
  return out;
}

}  // namespace

SharedSplit split_shared_energy(const std::vector<SharedWindow>& windows, std::size_t ops,
                                std::size_t searched_parameters) {
  SharedSplit split;
  split.per_call_mJ.assign(ops, Summary{});
  split.power_W.assign(ops, 0.0);
  split.calls.assign(ops, 0.0);
  split.busy_s.assign(ops, 0.0);
  split.windows = windows.size();
  for (const auto& w : windows) {
    require(w.calls.size() == ops && w.busy_s.size() == ops,
            "a window's calls or times do not list every operator of the group");
    require(std::isfinite(w.energy_mJ), "a window's energy is not a finite number");
    for (std::size_t i = 0; i < ops; ++i) {
      require(std::isfinite(w.calls[i]) && w.calls[i] >= 0 && std::isfinite(w.busy_s[i]) && w.busy_s[i] >= 0,
              "a window's calls or times are not finite and non-negative");
      split.calls[i] += w.calls[i];
      split.busy_s[i] += w.busy_s[i];
    }
  }
  // An operator that never ran inside a window contributes nothing and cannot be estimated;
  // the others are fitted without it.
  std::vector<std::size_t> fitted, absent;
  for (std::size_t i = 0; i < ops; ++i) (split.calls[i] > 0 && split.busy_s[i] > 0 ? fitted : absent).push_back(i);
  std::vector<std::string> why;
  if (!absent.empty())
    why.push_back(
        fmt::format("operator(s) {} had no calls or time inside the counter windows", join_operators(absent)));
  const std::size_t w_count = windows.size(), g = fitted.size();
  auto done = [&]() {
    for (std::size_t i = 0; i < why.size(); ++i) split.why += (i ? "; " : "") + why[i];
    return split;
  };
  if (g == 0) {
    if (ops > 0 && absent.empty()) why.push_back("no operators");
    return done();
  }
  if (w_count <= g + searched_parameters) {
    why.push_back(fmt::format(
        "{} counter window(s) for {} operator(s){}: the split needs more windows than unknowns (a longer shared loop: "
        "raise --energy-max-time, or --no-shared-windows for a loop of its own each)",
        w_count, g, searched_parameters ? fmt::format(" and {} searched parameter(s)", searched_parameters) : ""));
    return done();
  }
  // Columns scaled to unit norm: one operator may run a hundredth of another's time, and
  // scaling keeps the solves and the rank test about the mix, not the units.
  MatrixXd x(static_cast<Eigen::Index>(w_count), static_cast<Eigen::Index>(g));
  VectorXd y(static_cast<Eigen::Index>(w_count));
  for (std::size_t r = 0; r < w_count; ++r) {
    y(Eigen::Index(r)) = windows[r].energy_mJ;
    for (std::size_t c = 0; c < g; ++c) x(Eigen::Index(r), Eigen::Index(c)) = windows[r].busy_s[fitted[c]];
  }
  const VectorXd scale = x.colwise().norm().transpose();
  const MatrixXd a = x * scale.cwiseInverse().asDiagonal();
  constexpr double kRankTolerance = 1e-9;
  Eigen::ColPivHouseholderQR<MatrixXd> qr(a);
  qr.setThreshold(kRankTolerance);
  if (qr.rank() < Eigen::Index(g)) {
    why.push_back(
        fmt::format("operators {} ran in the same proportions in every window (collinear): the "
                    "windows cannot tell them apart",
                    join_operators(collinear_operators(a, fitted, kRankTolerance))));
    return done();
  }
  // Unconstrained least squares; the non-negative fit only when it gives an impossible negative
  // energy (both are the same fit when every coefficient is positive).
  VectorXd b = qr.solve(y);
  if (b.minCoeff() <= 0) b = nnls(a, y);
  const VectorXd residuals = y - a * b;
  const double rss = residuals.squaredNorm();
  split.residual_rel = y.mean() > 0 ? std::sqrt(rss / double(w_count)) / y.mean() : 0.0;
  // Intervals from σ²(AᵀA)⁻¹ (the full model's, so an operator pinned at zero does not narrow the
  // others'). Consecutive windows share segments and drifting power: widen the variance by
  // (1+r1)/(1−r1) and count dof from the effective windows, as estimate_energy does.
  const double sigma2 = rss / double(w_count - g - searched_parameters);
  // (AᵀA)⁻¹ = A⁺A⁺ᵀ with A⁺ from the QR: positive semi-definite even when A is ill conditioned,
  // where inverting AᵀA itself would square the condition number.
  const MatrixXd pseudo_inverse = qr.solve(MatrixXd::Identity(a.rows(), a.rows()));
  const MatrixXd inverse_gram = pseudo_inverse * pseudo_inverse.transpose();
  const double r1 = std::clamp(
      lag1_autocorrelation(std::vector<double>(residuals.data(), residuals.data() + residuals.size())), 0.0, 0.95);
  const double effective_windows = double(w_count) * (1 - r1) / (1 + r1);
  const std::size_t dof =
      std::size_t(std::max(1.0, std::floor(effective_windows) - double(g) - double(searched_parameters)));
  const double t = student_t975(dof);
  std::vector<std::size_t> at_zero;
  for (std::size_t c = 0; c < g; ++c) {
    const auto j = Eigen::Index(c);
    const std::size_t op = fitted[c];
    if (b(j) <= 0) {
      // NNLS pinned it: its power is below what the windows resolve; a 0 mJ call is no figure.
      at_zero.push_back(op);
      continue;
    }
    // The fit is a power (mJ per second of the operator's batches); a call's energy is that
    // power over its time per call in the windows.
    const double busy_s_per_call = split.busy_s[op] / split.calls[op];
    split.power_W[op] = b(j) / scale(j) / 1000.0;
    const double mean = b(j) / scale(j) * busy_s_per_call;
    const double standard_error =
        std::sqrt(sigma2 * inverse_gram(j, j) * (1 + r1) / (1 - r1)) / scale(j) * busy_s_per_call;
    Summary& s = split.per_call_mJ[op];
    s.n = w_count;
    s.mean = s.median = s.clipped_mean = s.min = s.max = mean;
    // stdev such that stdev/√n is the fit's standard error, as the loops' summaries read.
    s.stdev = standard_error * std::sqrt(double(w_count));
    s.ci95_low = mean - t * standard_error;
    s.ci95_high = mean + t * standard_error;
  }
  if (!at_zero.empty())
    why.push_back(fmt::format("operator(s) {} fitted at 0 mJ per call (below what the windows resolve)",
                              join_operators(at_zero)));
  return done();
}

LaggedSplit split_with_counter_lag(const std::vector<CounterEdge>& edges, const std::vector<GroupCompletion>& timeline,
                                   std::size_t ops, double start_after_s, double counter_period_s, double step_s) {
  return split_with_counter_lag(edges, timeline, own_columns(ops), start_after_s, counter_period_s, step_s);
}

SplitColumns own_columns(std::size_t ops) {
  SplitColumns c;
  for (std::size_t i = 0; i < ops; ++i) {
    c.of_op.push_back(i);
    c.members.push_back({i});
  }
  return c;
}

SplitColumns pool_columns(const std::vector<std::string>& keys, const std::vector<double>& target_rel_ci95,
                          const std::vector<double>& per_call_s) {
  require(keys.size() == target_rel_ci95.size() && keys.size() == per_call_s.size(),
          "pooled columns need a key, a target and a time per call for every operator");
  SplitColumns c;
  // key → its column still taking members, and the shortest and longest time per call in it
  struct Open {
    std::size_t column;
    double shortest_s, longest_s;
  };
  std::map<std::string, Open> open;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const double t = per_call_s[i];
    const bool poolable = target_rel_ci95[i] >= kPoolTargetRelCi95 && t > 0;  // NaN: its own column
    if (poolable) {
      if (auto it = open.find(keys[i]); it != open.end()) {
        Open& o = it->second;
        auto& members = c.members[o.column];
        if (members.size() < kMaxPoolMembers && std::max(o.longest_s, t) <= 2 * std::min(o.shortest_s, t)) {
          c.of_op.push_back(o.column);
          members.push_back(i);
          o.shortest_s = std::min(o.shortest_s, t);
          o.longest_s = std::max(o.longest_s, t);
          continue;
        }
      }
      open[keys[i]] = Open{c.members.size(), t, t};
    }
    c.of_op.push_back(c.members.size());
    c.members.push_back({i});
  }
  return c;
}

std::vector<ColumnLoop> pack_columns(const SplitColumns& columns, std::size_t max_columns) {
  require(max_columns > 0, "a loop needs room for a column");
  std::vector<ColumnLoop> loops;
  for (std::size_t first = 0; first < columns.columns(); first += max_columns) {
    const std::size_t last = std::min(columns.columns(), first + max_columns);
    ColumnLoop loop;
    for (std::size_t c = first; c < last; ++c)
      loop.ops.insert(loop.ops.end(), columns.members[c].begin(), columns.members[c].end());
    std::sort(loop.ops.begin(), loop.ops.end());
    loop.columns.of_op.resize(loop.ops.size());
    for (std::size_t c = first; c < last; ++c) {
      std::vector<std::size_t> members;
      for (std::size_t op : columns.members[c]) {
        const auto local = std::size_t(std::lower_bound(loop.ops.begin(), loop.ops.end(), op) - loop.ops.begin());
        loop.columns.of_op[local] = c - first;
        members.push_back(local);
      }
      loop.columns.members.push_back(std::move(members));
    }
    loops.push_back(std::move(loop));
  }
  return loops;
}

std::vector<OwnPace> own_paces(const std::vector<GroupCompletion>& timeline, std::size_t ops, double start_after_s) {
  check_timeline(timeline, ops);
  // A batch that stalled (or was seen at once with the one before) is left out, as its windows
  // are from the split: its span is not its calls' time.
  const std::vector<bool> irregular = irregular_batches(timeline, ops);
  std::vector<double> seconds(ops, 0.0), calls(ops, 0.0);
  std::vector<OwnPace> out(ops);
  for (std::size_t k = 1; k < timeline.size(); ++k) {
    if (timeline[k - 1].t_s < start_after_s || !(timeline[k].calls > 0) || irregular[k]) continue;
    seconds[timeline[k].op] += timeline[k].t_s - timeline[k - 1].t_s;
    calls[timeline[k].op] += timeline[k].calls;
    ++out[timeline[k].op].batches;
  }
  for (std::size_t i = 0; i < ops; ++i) out[i].s_per_call = calls[i] > 0 ? seconds[i] / calls[i] : 0.0;
  return out;
}

std::size_t next_member(const std::vector<std::size_t>& members, const std::vector<double>& issued_s,
                        const std::vector<double>& weight) {
  require(!members.empty(), "a column without members");
  std::size_t best = members.front();
  double best_ratio = std::numeric_limits<double>::infinity();
  for (std::size_t m : members) {
    require(m < issued_s.size() && m < weight.size(), "a member outside the group");
    require(std::isfinite(weight[m]) && weight[m] > 0, "a member's weight is not positive");
    if (const double ratio = issued_s[m] / weight[m]; ratio < best_ratio) {
      best = m;
      best_ratio = ratio;
    }
  }
  return best;
}

SegmentBatches::SegmentBatches(SplitColumns columns, std::vector<double> per_call_s, std::vector<double> weight,
                               std::vector<std::size_t> batch)
    : columns_(std::move(columns)),
      per_call_s_(std::move(per_call_s)),
      weight_(std::move(weight)),
      column_per_call_s_(columns_.columns(), 0.0),
      issued_s_(per_call_s_.size(), 0.0),
      batch_(std::move(batch)) {
  const std::size_t ops = columns_.of_op.size();
  require(per_call_s_.size() == ops && weight_.size() == ops && batch_.size() == ops,
          "segment batches need a time per call, a weight and a batch for every operator");
  for (std::size_t i = 0; i < ops; ++i)
    require(std::isfinite(per_call_s_[i]) && per_call_s_[i] > 0 && batch_[i] > 0,
            "an operator's time per call or batch is not positive");
  for (std::size_t i = 0; i < ops; ++i)
    require(std::isfinite(weight_[i]) && weight_[i] > 0, "an operator's weight is not positive");
  for (std::size_t c = 0; c < columns_.columns(); ++c) {
    const auto& members = columns_.members[c];
    double heaviest = 0;
    for (std::size_t i : members) {
      column_per_call_s_[c] += per_call_s_[i] / double(members.size());
      heaviest = std::max(heaviest, weight_[i]);
    }
    for (std::size_t i : members) weight_[i] = std::max(weight_[i], kMinMemberWeightShare * heaviest);
  }
}

void SegmentBatches::start(const Segment& segment) {
  require(segment.op < columns_.columns(), "a segment names a column outside the split");
  column_ = segment.op;
  left_s_ = double(segment.calls) * column_per_call_s_[column_];
  issued_in_segment_ = false;
}

std::optional<Segment> SegmentBatches::next() {
  const std::size_t op = next_member(columns_.members[column_], issued_s_, weight_);
  auto left_calls = std::llround(left_s_ / per_call_s_[op]);
  if (left_calls <= 0) {
    if (issued_in_segment_) return std::nullopt;
    left_calls = 1;  // at least one batch a segment
  }
  return Segment{op, std::min(std::size_t(left_calls), batch_[op])};
}

void SegmentBatches::ran(std::size_t op, double calls) {
  require(op < per_call_s_.size() && std::isfinite(calls) && calls >= 0, "a batch outside the group");
  const double seconds = calls * per_call_s_[op];
  left_s_ -= seconds;
  issued_s_[op] += seconds;
  issued_in_segment_ = true;
}

namespace {

// A duty-cycled loop's windows (GapCharge): each window's gaps (the last operator of `windows`)
// moved to its gap_s, their energy taken off.
void charge_gaps(std::vector<SharedWindow>& windows, const GapCharge& gap) {
  for (auto& w : windows) {
    w.gap_s = w.busy_s.back();
    w.energy_mJ -= gap.power_W * w.gap_s * 1000.0;
    w.calls.pop_back();
    w.busy_s.pop_back();
  }
}

}  // namespace

Summary with_systematic(Summary s, double systematic_mJ) {
  return systematic_mJ > 0 ? with_ci95_half_width(s, s.ci95_half_width() + systematic_mJ) : s;
}

LaggedSplit split_with_counter_lag(const std::vector<CounterEdge>& edges, const std::vector<GroupCompletion>& timeline,
                                   const SplitColumns& columns, double start_after_s, double counter_period_s,
                                   double step_s, const GapCharge* gap) {
  require(std::isfinite(counter_period_s) && counter_period_s > 0 && std::isfinite(step_s) && step_s > 0,
          "the counter's period and the lag's step must be finite and above 0");
  require(!gap || (std::isfinite(gap->power_W) && gap->power_W >= 0 && std::isfinite(gap->power_ci_W) &&
                   gap->power_ci_W >= 0),
          "the gaps' power and its interval must be finite and not negative");
  const double max_lag_s = std::min(kMaxCounterLagS, kMaxLagPeriodShare * counter_period_s);
  const std::size_t ops_in = columns.of_op.size();
  // A duty-cycled loop's gaps are one more operator of the timeline, after the group's.
  const std::size_t timeline_ops = ops_in + (gap ? 1 : 0);
  check_timeline(timeline, timeline_ops);
  // The same at every lag; a gap that stalled leaves its windows out as a batch's does.
  const std::vector<bool> irregular = irregular_batches(timeline, timeline_ops);
  // From here on, a column is an operator: its batches are its members'; the gaps come last.
  const std::size_t ops = columns.columns();
  std::vector<GroupCompletion> by_column = timeline;
  for (auto& c : by_column) {
    if (gap && c.op == ops_in) {
      c.op = ops;
      continue;
    }
    require(columns.of_op[c.op] < ops, "an operator's column is outside the split");
    c.op = columns.of_op[c.op];
  }
  LaggedSplit best;
  bool have = false;
  std::vector<CounterEdge> moved(edges.size());
  const auto steps = std::size_t(std::floor(max_lag_s / step_s + 1e-9));
  const std::size_t searched = steps > 0 ? 1 : 0;  // the lag, when there is a choice of lags
  for (std::size_t k = 0; k <= steps; ++k) {
    const double lag = double(k) * step_s;
    for (std::size_t i = 0; i < edges.size(); ++i)
      moved[i] = {edges[i].t_s - lag, edges[i].energy_mJ, edges[i].half_gap_s};
    LeftOutWindows left_out;
    auto windows = windows_of(moved, by_column, ops + (gap ? 1 : 0), start_after_s, irregular, &left_out);
    if (gap) charge_gaps(windows, *gap);
    SharedSplit split = split_shared_energy(windows, ops, searched);
    // A split that made no fit has no residual to compare (NaN); the first lag is kept for its why.
    const bool fitted = std::isfinite(split.residual_rel);
    if (!have || (fitted && !(best.split.residual_rel <= split.residual_rel))) {
      best = {std::move(split), std::move(windows), lag, left_out, {}, 0, 0, 0};
      have = true;
    }
  }
  for (const auto& w : best.windows) {
    for (double b : w.busy_s) best.busy_s += b;
    best.gap_s += w.gap_s;
  }
  if (gap) {
    best.gap_mJ = gap->power_W * best.gap_s * 1000.0;
    // Every gap is the same share of the batch before it, so a gap power off by δ moves every
    // column's fitted power by δ × gaps / busy alike: per call, δ × that ratio × its time per call.
    const double gaps_per_busy = best.busy_s > 0 ? best.gap_s / best.busy_s : 0.0;
    best.gap_systematic_mJ.assign(ops, 0.0);
    for (std::size_t c = 0; c < ops; ++c)
      if (best.split.calls[c] > 0)
        best.gap_systematic_mJ[c] =
            gap->power_ci_W * gaps_per_busy * best.split.busy_s[c] / best.split.calls[c] * 1000.0;
  }
  return best;
}

}  // namespace opcost
