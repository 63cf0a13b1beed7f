#pragma once
// Energy per call of several operators measured in one loop (issue 25): the operators run one
// after another in segments of a few tens of milliseconds, back to back, while the counter
// updates every ~100 ms. Each counter window then holds a known number of calls of each
// operator (from the completion timeline) and the time they took, and its energy is their sum:
//     E_w = Σ_i busy_{w,i} · P_i,   e_i = P_i · (Σ_w busy_{w,i} / Σ_w calls_{w,i})
// A non-negative least-squares fit over the windows splits the energy into each operator's
// power P_i, and so its energy per call e_i, with an interval from the residuals. Fitted on
// time, not on calls: where a call's time varies (a host that is preempted, clocks that move)
// its energy varies with it, and a fit on calls would read slow, costly calls as few, cheap
// ones (on a loaded CPU, half the truth). Where each call takes the same time the two fits
// are the same fit. One loop, one settle, and about one counter
// period per operator instead of a settle and several periods each. Torch-free.
#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/energy/windows.h"
#include "core/stats/summary.h"

namespace opcost {

// One batch of one operator's calls in the shared loop, complete at `t_s` (the host's clock; on
// a GPU the batch's end on the GPU's clock, mapped to the host's).
// Its calls are spread evenly over the span since the completion before it (of any operator).
struct GroupCompletion {
  double t_s = 0;
  std::size_t op = 0;  // index into the group
  double calls = 0;    // calls in this batch
};

// A counter window (edge to edge) of the shared loop, with each operator's calls inside it and
// the time its batches took inside it.
struct SharedWindow {
  double t0_s = 0, t1_s = 0, energy_mJ = 0;
  std::vector<double> calls;   // per operator of the group
  std::vector<double> busy_s;  // per operator: its batches' spans inside the window
  double gap_s = 0;            // a duty-cycled loop's gaps inside it, their energy taken off (GapCharge)
  double seconds() const { return t1_s - t0_s; }
};

// Windows of one counter period each from edges after `start_after_s` and inside the
// timeline; a window in which nothing completed, or whose energy did not increase, is dropped.
// Two kinds more are left out, and counted in `left_out` when given:
// - `blurred`: a window whose edges' blur (CounterEdge::half_gap_s, both ends) exceeds
//   kMaxEdgeBlurShare of its length: a monitor thread put off for tens of milliseconds (on a
//   loaded 2-core machine, split energies read half the truth). A blur of a few milliseconds
//   is every edge's on the H100, where one NVML energy read takes ~3 ms (median 2.9 ms, p90
//   5.7 ms, up to 17 ms: bench/results/2026-11-26-h100-shared-windows/), so each edge is known
//   to ±3.5–4 ms, 7–8% of a window for its two edges (5%, the first limit, left out every
//   window there). Errors in the windows' times bias a least-squares split towards zero with
//   their variance against the spread of the operators' times; at ±4 ms that bias is under 1%
//   for every operator, while the split's noise triples and its intervals widen with it and
//   still cover (BlurredEdgesWidenTheIntervalsAndBiasLittle). Where inside a read NVML takes
//   its value is unknown: the edge's bounds hold either way, its midpoint may sit off by up to
//   half a read at every edge alike.
// - `stalled`: a window with calls of an irregular batch (irregular_batches): one that waited
//   (a host put off, a GPU idle between batches at no operator's power) or was seen complete at
//   once with the batch before it (a span with none of its own time). One operator's loop
//   leaves out its stalled windows too (drop_stalled_windows).
inline constexpr double kMaxEdgeBlurShare = 0.15;
// Whether the window between edges `a` and `b` is `blurred` (above).
bool edges_too_blurred(const CounterEdge& a, const CounterEdge& b);
struct LeftOutWindows {
  std::size_t blurred = 0, stalled = 0;
};
std::vector<SharedWindow> make_shared_windows(const std::vector<CounterEdge>& edges,
                                              const std::vector<GroupCompletion>& timeline, std::size_t ops,
                                              double start_after_s, LeftOutWindows* left_out = nullptr);

// Per completion of the timeline: whether its batch's time per call lies outside
// [1/kIrregularBatchFactor, kIrregularBatchFactor] times its operator's median over the loop;
// a batch under it (complete at once with the one before) marks that one too, whose span holds
// its time. With one or two batches of an operator the median is theirs: nothing is judged
// irregular. (Until GroupLoop timed its batches on the GPU, a host saw a launch-bound operator's
// batches one batch late, and a rule spared such instants at the end of a run; no timeline has
// them now: a GPU's batch ends are its own, a CPU's calls run as they are issued.)
// Within it, a call that takes longer is a call that costs more (the split follows its time);
// a clock that moves at the power cap stays inside (1980 to 1400 MHz is 1.41×). Wide on
// purpose: a host under load stretches many batches 2–3× (an oversubscribed 2-core CPU), and
// a factor of 2 left too few windows there to split, and those it kept chosen by the load.
inline constexpr double kIrregularBatchFactor = 4.0;
std::vector<bool> irregular_batches(const std::vector<GroupCompletion>& timeline, std::size_t ops);

// The order and length of the loop's segments: operator `op` for `calls` calls. Segment
// lengths vary (about 0.25 to 0.75 of the counter period, not commensurate with it) so that
// consecutive windows hold different mixes and the split is well conditioned.
struct Segment {
  std::size_t op = 0;
  std::size_t calls = 0;
};
// `per_call_s`: each operator's time per call (GPU time, or its loop's pace when longer);
// `cycles`: how often every operator appears; `length_periods` scales every segment (4: 1 to 3
// periods, most windows then one operator's alone). Deterministic for the same inputs.
std::vector<Segment> plan_segments(const std::vector<double>& per_call_s, double counter_period_s, std::size_t cycles,
                                   double length_periods = 1.0);

struct SharedSplit {
  // Per operator: energy per call, mean = the fit, ci95 from the residuals (n = the windows).
  // An operator the windows cannot separate (too few windows, collinear) has n = 0.
  std::vector<Summary> per_call_mJ;
  std::vector<double> power_W;  // per operator: the fitted power while its batches ran (0: none)
  std::vector<double> calls;    // per operator, over the windows used
  std::vector<double> busy_s;   // per operator, over the windows used
  std::size_t windows = 0;
  // RMS residual / mean window energy: how well the sum explains them; NaN where no fit was made.
  double residual_rel = std::numeric_limits<double>::quiet_NaN();
  std::string why;  // "" when every operator is identified; else what is lacking
};

// The non-negative least-squares split (Eigen), the 95% intervals from σ²(XᵀX)⁻¹ with σ² the
// residual variance (dof = windows − operators − searched_parameters) widened by the
// residuals' lag-1 autocorrelation as estimate_energy does. `searched_parameters`: those chosen
// before this fit for its small residual (the counter lag): each costs a window, or a fit of
// 3 windows for 2 operators at the best of 21 lags reads a residual of 0 and a ±0% interval.
SharedSplit split_shared_energy(const std::vector<SharedWindow>& windows, std::size_t ops,
                                std::size_t searched_parameters = 0);

// The counter may publish the energy up to a moment a little before the host sees its value
// change. In one operator's loop that lag cancels (the power is the same on both sides of an
// edge); in a shared loop it moves energy across segment boundaries, from each operator to the
// next (on the H100, small operators after heavy ones read up to 4× their own loops' energy).
// The split is therefore fitted with the edges moved back by each candidate lag, 0 to
// the largest lag in steps of `step_s`, and the lag whose fit leaves the smallest residual is
// kept (a lag searched is a parameter fitted: split_shared_energy's `searched_parameters`). The
// largest lag is kMaxCounterLagS (the H100's counter lags its host reading by up to ~40 ms of its
// 100 ms period), and at most kMaxLagPeriodShare of `counter_period_s`: a lag of a whole period
// only relabels the windows, and on noisy windows one such alias can fit best by chance.
inline constexpr double kMaxCounterLagS = 0.04, kMaxLagPeriodShare = 0.4;
// The lag search's step.
inline constexpr double kCounterLagStepS = 0.002;
struct LaggedSplit {
  SharedSplit split;  // per column (below): per operator where each has its own
  std::vector<SharedWindow> windows;
  double lag_s = 0;
  LeftOutWindows left_out;  // at that lag (make_shared_windows)
  // A duty-cycled loop's (GapCharge): per column, the gap power's interval over its calls' share
  // of the gaps, in mJ per call: one error for every window, added to the column's interval in
  // full and not narrowed by more windows (empty without gaps).
  std::vector<double> gap_systematic_mJ;
  // Over the windows used: the operators' time and the gaps', and the gaps' energy taken off.
  double busy_s = 0, gap_s = 0, gap_mJ = 0;
  // The operators' share of those windows' time: a duty-cycled loop's busy share achieved.
  double busy_share() const { return busy_s + gap_s > 0 ? busy_s / (busy_s + gap_s) : 0.0; }
};
LaggedSplit split_with_counter_lag(const std::vector<CounterEdge>& edges, const std::vector<GroupCompletion>& timeline,
                                   std::size_t ops, double start_after_s, double counter_period_s,
                                   double step_s = kCounterLagStepS);

// Pooled columns. An operator whose energy target is loose (a tiny share of the step: a target of
// ±kPoolTargetRelCi95 or wider, from part_rel_ci95) need not have a power of its own: it shares
// one column of the split, one power, with the loop's other such calls of the same operator and
// dtype (`keys`), as long as the column's longest time per call stays within 2x of its shortest,
// up to kMaxPoolMembers to a column. Each member's energy per call is that power over its own time
// per call, and its interval adds ±kPooledMemberRelCi95 in quadrature to the column's: how far a
// member's own power lay from its pool's on the GPU (members of one kind 4x apart in time, on an
// H200: up to +54%, from L2 reuse and occupancy; bench/results/2026-11-27-pooled-columns/). A
// loop then needs windows for its columns, not for its operators (DenseNet-121's training step:
// ~580 calls in shared windows, each loop of 16 needing 21 windows, ~0.15 s an operator; issue
// 25). The loop runs a column's members in proportion to their weights (their time in the step:
// SegmentBatches), so that the pooled power is the one the step draws over them, mixed as it
// mixes them: the pool's sum is right whatever each member would draw alone.
inline constexpr double kPoolTargetRelCi95 = 0.5, kPooledMemberRelCi95 = 0.5;
inline constexpr std::size_t kMaxPoolMembers = 8;
// The fewest batches of a pooled member outside the settle, stalls left out, for its own time per
// call: fewer are too few to rest a time on (the shared loop runs on for them, then gives such a
// member a loop of its own).
inline constexpr std::size_t kMinPooledMemberBatches = 3;
// A pooled member's weight is at least this share of its column's heaviest member's: one whose
// time in the step is tiny still gets batches enough for its own time per call, at a mix that
// moves the column's power by at most that share of the members' spread.
inline constexpr double kMinMemberWeightShare = 1.0 / 32;
struct SplitColumns {
  std::vector<std::size_t> of_op;                 // each operator's column
  std::vector<std::vector<std::size_t>> members;  // each column's operators, in their order
  std::size_t columns() const { return members.size(); }
  bool pooled(std::size_t column) const { return members[column].size() > 1; }
};
// Columns in the operators' order: a column per operator, but for those pooled as above
// (`per_call_s`: each operator's time per call).
SplitColumns pool_columns(const std::vector<std::string>& keys, const std::vector<double>& target_rel_ci95,
                          const std::vector<double>& per_call_s);
// `columns` packed whole into loops of at most `max_columns`, in their order: each loop's
// operators (indices into `columns`' operators, ascending) and its columns over them (indices
// into the loop's operators).
struct ColumnLoop {
  std::vector<std::size_t> ops;
  SplitColumns columns;
};
std::vector<ColumnLoop> pack_columns(const SplitColumns& columns, std::size_t max_columns);
// One column per operator: the split of operators each with its own power.
SplitColumns own_columns(std::size_t ops);
// A duty-cycled shared loop (one that ran at the power cap while the model's step runs below
// it, measured again at the step's duty cycle: core/energy/duty_cycle.h): after each batch of
// about kBurstBusyS the GPU does what the gap probe does for a gap that brings the loop to the
// step's busy share. The timeline holds each gap as a completion of one more operator, numbered
// after the group's (`columns.of_op.size()`). Its energy is charged, not fitted: every gap is
// the same share of the batch before it, so the gaps' time in a window is that share of the
// operators' and a column of its own would be collinear with their sum. Each window's energy
// less power_W × its gap time is split as a plain loop's, as the duty-cycled loop of one
// operator takes its gaps off (the prediction's timeline charges the model's gaps at that power).
struct GapCharge {
  double power_W = 0;
  double power_ci_W = 0;  // its 95% half-width
};
// The split over `columns`: batches are judged irregular per operator (a column's members differ
// in pace), the windows and their fit per column; with `gap`, a duty-cycled loop's (above).
LaggedSplit split_with_counter_lag(const std::vector<CounterEdge>& edges, const std::vector<GroupCompletion>& timeline,
                                   const SplitColumns& columns, double start_after_s, double counter_period_s,
                                   double step_s = kCounterLagStepS, const GapCharge* gap = nullptr);
// `s` with `systematic_mJ` added to its interval's half-width (an error shared by every window,
// as the gap power's): with_ci95_half_width.
Summary with_systematic(Summary s, double systematic_mJ);
// Per operator: its batches' spans over their calls in the timeline from the first completion
// after `start_after_s`, irregular batches (irregular_batches) left out: its own time per call in
// the loop (0 for one without such batches), and how many batches that is.
struct OwnPace {
  double s_per_call = 0;
  std::size_t batches = 0;
};
// `ops` counts a duty-cycled loop's gaps as an operator where the timeline has them.
std::vector<OwnPace> own_paces(const std::vector<GroupCompletion>& timeline, std::size_t ops, double start_after_s);
// The member of a column to issue next: the one whose issued seconds lag its weight the most
// (the first of equals), so that each member's time in the loop follows its weight.
std::size_t next_member(const std::vector<std::size_t>& members, const std::vector<double>& issued_s,
                        const std::vector<double>& weight);
// The shared loop's batches, segment by segment (plan_segments over the columns, with
// column_per_call_s()): a column's segment is spent on its members' batches, each next chosen by
// next_member (weights floored at kMinMemberWeightShare of the column's heaviest), of at most
// `batch` calls and no more than the segment has left, and at least one batch a segment (a member
// slower than the segment's rest still runs, and the loop moves on).
class SegmentBatches {
 public:
  SegmentBatches(SplitColumns columns, std::vector<double> per_call_s, std::vector<double> weight,
                 std::vector<std::size_t> batch);
  // Per column: its members' mean time per call.
  const std::vector<double>& column_per_call_s() const { return column_per_call_s_; }
  void start(const Segment& segment);
  // The next batch of the segment started: its operator and calls; nullopt once it is spent.
  std::optional<Segment> next();
  // The batch just issued ran `calls` calls (a CUDA graph runs its own number).
  void ran(std::size_t op, double calls);

 private:
  SplitColumns columns_;
  std::vector<double> per_call_s_, weight_, column_per_call_s_, issued_s_;
  std::vector<std::size_t> batch_;
  std::size_t column_ = 0;
  double left_s_ = 0;
  bool issued_in_segment_ = false;
};

}  // namespace opcost
