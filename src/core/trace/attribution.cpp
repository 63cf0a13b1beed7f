#include <algorithm>
#include <climits>
#include <map>
#include <unordered_map>

#include "core/trace/activities.h"

namespace opcost {

namespace {

// Open layers per thread while sweeping by start time: a trace holds hundreds of thousands of
// calls, so each call finds its innermost layer at the top of its thread's stack.
class LayerStacks {
 public:
  explicit LayerStacks(const std::vector<HostRange>& layers) : layers_(layers) {}
  // Opens every layer that starts at or before `t`; each gets its depth.
  void advance_to(int64_t t, std::vector<HostRange>* with_depths = nullptr) {
    for (; next_ < layers_.size() && layers_[next_].start_ns <= t; ++next_) {
      const HostRange& l = layers_[next_];
      auto& stack = open_[l.thread];
      while (!stack.empty() && layers_[stack.back()].end_ns < l.end_ns) stack.pop_back();
      if (with_depths) {
        (*with_depths)[next_].depth = int(stack.size());
        (*with_depths)[next_].parent = stack.empty() ? -1 : stack.back();
      }
      stack.push_back(int(next_));
    }
  }
  // The innermost open layer of `thread` that contains [start, end]; -1 when none.
  int innermost(uint64_t thread, int64_t start, int64_t end) {
    auto it = open_.find(thread);
    if (it == open_.end()) return -1;
    auto& stack = it->second;
    while (!stack.empty() && layers_[stack.back()].end_ns < start) stack.pop_back();
    for (auto i = stack.rbegin(); i != stack.rend(); ++i)
      if (layers_[*i].start_ns <= start && end <= layers_[*i].end_ns) return *i;
    return -1;
  }

 private:
  const std::vector<HostRange>& layers_;
  std::size_t next_ = 0;
  std::unordered_map<uint64_t, std::vector<int>> open_;
};

// Backward calls: the backward range around each call (on its thread) names the forward node,
// and the forward call that made that node names the layer.
// A call may also name its node itself (backward_of: torch.profiler's "Fwd thread id" with
// its "Sequence number", or opcost's own trace read back), with no backward ranges at all.
void tie_backward_calls(TraceRun& run) {
  std::unordered_map<int64_t, int> layer_of_node;
  for (const auto& op : run.ops)
    for (int64_t s : op.forward_sequence) layer_of_node.emplace(s, op.layer);
  // The innermost backward range around each call on its thread (ranges nest when a backward
  // function calls another's), found as layers are: a sweep by start time.
  std::vector<TraceRun::BackwardRange> sorted = run.backward_ranges;
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
  std::vector<HostRange> ranges;
  for (const auto& r : sorted) ranges.push_back(HostRange{"", r.thread, r.start_ns, r.end_ns});
  LayerStacks open(ranges);
  for (auto& op : run.ops) {  // in start order (tie_activities sorted them)
    if (op.backward_of < 0) {
      open.advance_to(op.start_ns);
      if (const int k = open.innermost(op.thread, op.start_ns, op.end_ns); k >= 0)
        op.backward_of = sorted[std::size_t(k)].sequence;
    }
    // The forward layer wins over the one open around the backward (the CPU runs backward on
    // the caller's thread, inside whatever scope called it).
    if (op.backward_of < 0) continue;
    if (auto it = layer_of_node.find(op.backward_of); it != layer_of_node.end() && it->second >= 0)
      op.layer = it->second;
  }
}

// Correlation ids made up for inferred ties, above any a profiler hands out.
constexpr uint64_t kInferredCorrelation = uint64_t(1) << 62;

// Device activities without a correlation id: their launches inferred from the
// synchronisations (see tie_activities). Each window between two synchronisations gets a
// made-up correlation id, given to its one call or to an inferred call spanning its calls.
void infer_from_synchronizations(TraceRun& run) {
  if (run.synchronizations.empty()) return;
  std::vector<HostRange> syncs = run.synchronizations;
  std::stable_sort(syncs.begin(), syncs.end(), [](const auto& a, const auto& b) { return a.end_ns < b.end_ns; });
  std::unordered_map<uint64_t, std::vector<std::size_t>> calls_of_thread;  // by start
  for (std::size_t k = 0; k < run.ops.size(); ++k) calls_of_thread[run.ops[k].thread].push_back(k);
  for (auto& [thread, calls] : calls_of_thread)
    std::stable_sort(calls.begin(), calls.end(),
                     [&](auto x, auto y) { return run.ops[x].start_ns < run.ops[y].start_ns; });
  std::map<std::size_t, uint64_t> window_correlation;  // by synchronisation; 0: no call there
  std::vector<OpActivity> inferred;
  uint64_t next = kInferredCorrelation;
  auto correlation_of_window = [&](std::size_t i) {
    const HostRange& sync = syncs[i];
    const int64_t from = i > 0 ? syncs[i - 1].end_ns : INT64_MIN;
    const auto& calls = calls_of_thread[sync.thread];
    auto first = std::lower_bound(calls.begin(), calls.end(), from,
                                  [&](std::size_t k, int64_t t) { return run.ops[k].start_ns < t; });
    auto last = std::upper_bound(first, calls.end(), sync.start_ns,
                                 [&](int64_t t, std::size_t k) { return t < run.ops[k].start_ns; });
    if (first == last) return uint64_t(0);
    const uint64_t id = next++;
    if (last - first == 1) {
      run.ops[*first].correlations.push_back(id);
      return id;
    }
    OpActivity between;
    between.name = "(between synchronisations)";
    between.thread = sync.thread;
    between.start_ns = run.ops[*first].start_ns;
    for (auto k = first; k != last; ++k) between.end_ns = std::max(between.end_ns, run.ops[*k].end_ns);
    between.correlations = {id};
    between.inferred = true;
    inferred.push_back(std::move(between));
    return id;
  };
  for (auto& a : run.device_activities) {
    if (a.linked_correlation != 0) continue;
    auto waited = std::lower_bound(syncs.begin(), syncs.end(), a.end_ns,
                                   [](const HostRange& s, int64_t t) { return s.end_ns < t; });
    if (waited == syncs.end()) continue;
    const std::size_t i = std::size_t(waited - syncs.begin());
    auto [w, fresh] = window_correlation.try_emplace(i, 0);
    if (fresh) w->second = correlation_of_window(i);
    if (w->second == 0) continue;
    a.linked_correlation = w->second;
    a.inferred = true;
  }
  for (auto& op : inferred) run.ops.push_back(std::move(op));
}

}  // namespace

std::vector<OpActivity> fold_nested_calls(std::vector<OpActivity> calls) {
  std::stable_sort(calls.begin(), calls.end(), [](const OpActivity& a, const OpActivity& b) {
    return a.thread != b.thread ? a.thread < b.thread : a.start_ns < b.start_ns;
  });
  std::vector<OpActivity> out;
  for (auto& c : calls) {
    if (!out.empty() && out.back().thread == c.thread && c.start_ns < out.back().end_ns) {
      auto& outer = out.back();
      outer.correlations.insert(outer.correlations.end(), c.correlations.begin(), c.correlations.end());
      outer.forward_sequence.insert(outer.forward_sequence.end(), c.forward_sequence.begin(), c.forward_sequence.end());
      if (outer.backward_of < 0) outer.backward_of = c.backward_of;
      if (!outer.flops) outer.flops = c.flops;  // linear's FLOPs are its addmm's
      continue;
    }
    out.push_back(std::move(c));
  }
  return out;
}

int64_t earliest_ns(const TraceRun& run) {
  int64_t t = INT64_MAX;
  for (const auto& s : run.steps) t = std::min(t, s.start_ns);
  for (const auto& l : run.layers) t = std::min(t, l.start_ns);
  for (const auto& o : run.ops) t = std::min(t, o.start_ns);
  for (const auto& a : run.device_activities) t = std::min(t, a.start_ns);
  for (const auto& c : run.counters)
    for (const auto& [at, v] : c.samples) t = std::min(t, at);
  return t == INT64_MAX ? 0 : t;
}

void tie_activities(TraceRun& run) {
  infer_from_synchronizations(run);
  auto by_start = [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; };
  // Layers starting together: the longer (the enclosing one) first.
  std::stable_sort(run.layers.begin(), run.layers.end(), [](const HostRange& a, const HostRange& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
  std::stable_sort(run.steps.begin(), run.steps.end(), by_start);
  std::stable_sort(run.ops.begin(), run.ops.end(), by_start);
  // Each layer's depth and parent (the sweep reads only start and end, which stay as they are).
  LayerStacks(run.layers).advance_to(INT64_MAX, &run.layers);
  LayerStacks open(run.layers);
  std::unordered_map<uint64_t, int> op_of_correlation;
  std::size_t step = 0;
  for (std::size_t i = 0; i < run.ops.size(); ++i) {
    auto& op = run.ops[i];
    open.advance_to(op.start_ns);
    op.layer = open.innermost(op.thread, op.start_ns, op.end_ns);
    while (step < run.steps.size() && run.steps[step].end_ns < op.start_ns) ++step;
    op.step = step < run.steps.size() && run.steps[step].start_ns <= op.start_ns ? int(step) : -1;
    for (uint64_t c : op.correlations) op_of_correlation[c] = int(i);
  }
  tie_backward_calls(run);
  run.untied.clear();
  for (auto& a : run.device_activities) {
    a.op = -1;
    if (a.linked_correlation == 0) {
      ++run.untied[run.synchronizations.empty()
                       ? "no correlation id (launched outside the profiler's view)"
                       : "no correlation id, and no host call between the synchronisations around it"];
      continue;
    }
    auto it = op_of_correlation.find(a.linked_correlation);
    if (it == op_of_correlation.end()) {
      ++run.untied["launched by a host call that is not a dispatcher op (e.g. a copy by the runtime)"];
      continue;
    }
    a.op = it->second;
  }
}

}  // namespace opcost
