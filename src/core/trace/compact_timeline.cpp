#include "core/trace/compact_timeline.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace opcost {

namespace {

constexpr int kLongestLanePath = 4;  // module-path components

// The first kept step's start, else (no step kept) the run's earliest event.
int64_t origin_of(const TraceRun& run) {
  if (run.steps.empty()) return earliest_ns(run);
  int64_t o = std::numeric_limits<int64_t>::max();
  for (const auto& s : run.steps) o = std::min(o, s.start_ns);
  return o;
}

// Keeps at most `limit` samples: per bucket of consecutive samples its first, lowest and
// highest, in time order, so that a peak between kept samples is never thinned away (a limit
// under 3 keeps the first samples only).
std::vector<std::pair<int64_t, double>> thin(const std::vector<std::pair<int64_t, double>>& s, std::size_t limit) {
  if (s.size() <= limit) return s;
  if (limit < 3) return {s.begin(), s.begin() + std::ptrdiff_t(limit)};
  const std::size_t buckets = limit / 3;
  std::vector<std::pair<int64_t, double>> kept;
  for (std::size_t b = 0; b < buckets; ++b) {
    const std::size_t from = s.size() * b / buckets, to = s.size() * (b + 1) / buckets;
    if (from >= to) continue;
    std::size_t lo = from, hi = from;
    for (std::size_t i = from; i < to; ++i) {
      if (s[i].second < s[lo].second) lo = i;
      if (s[i].second > s[hi].second) hi = i;
    }
    std::set<std::size_t> pick{from, lo, hi};
    for (std::size_t i : pick) kept.push_back(s[i]);
  }
  return kept;
}

// The first `parts` components of a module path ("layer1.0.conv1", 1: "layer1"). Lanes go by
// path, not by the nesting of the traced ranges: a model may open "layer1.0" with no "layer1"
// range around it (opcost's built-in ResNets do), and its lanes are still layer1 ... layer4.
std::string path_prefix(const std::string& path, int parts) {
  std::size_t end = std::string::npos, from = 0;
  for (int k = 0; k < parts; ++k) {
    end = path.find('.', from);
    if (end == std::string::npos) return path;
    from = end + 1;
  }
  return path.substr(0, end);
}

// An activity's layer as lanes see it: its call's layer index, or one of the two lanes of
// activities without one. Lanes are named once per layer, not once per activity (a trace has
// tens of thousands of activities and a few hundred layers).
constexpr int kNotTied = -2, kNoLayer = -1;
int layer_key(const TraceRun& run, const DeviceActivity& a) {
  if (a.op < 0) return kNotTied;
  const int layer = run.ops[std::size_t(a.op)].layer;
  return layer < 0 ? kNoLayer : layer;
}

std::string lane_name(const TraceRun& run, int key, int parts) {
  if (key == kNotTied) return "(not tied to a call)";
  if (key == kNoLayer) return "(no layer)";
  return path_prefix(run.layers[std::size_t(key)].name, parts);
}

// The longest path prefix whose lanes fit the limit (one component when none does); a longer
// one that names the same lanes as the shorter adds nothing.
int lane_path_parts_of(const TraceRun& run, const std::set<int>& keys, std::size_t lanes) {
  int chosen = 1;
  std::set<std::string> chosen_names;
  for (int parts = 1; parts <= kLongestLanePath; ++parts) {
    std::set<std::string> names;
    for (int key : keys) names.insert(lane_name(run, key, parts));
    if (names.size() > lanes) break;
    if (parts == 1 || names != chosen_names) {
      chosen = parts;
      chosen_names = std::move(names);
    }
  }
  return chosen;
}

std::size_t merge_spans(std::vector<TimelineLane>& lanes,
                        const std::vector<std::vector<std::pair<double, double>>>& raw, double gap_us) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    auto& out = lanes[i].spans_us;
    out.clear();
    for (const auto& s : raw[i]) {
      if (!out.empty() && s.first - out.back().second <= gap_us)
        out.back().second = std::max(out.back().second, s.second);
      else
        out.push_back(s);
    }
    n += out.size();
  }
  return n;
}

}  // namespace

CompactTimeline compact_timeline(const TraceRun& run, const CompactTimelineLimits& limits) {
  CompactTimeline t;
  t.origin_ns = origin_of(run);
  t.origin_is_step = !run.steps.empty();
  // In double: an imported trace's times may be anywhere in int64, and their difference overflow it.
  const auto us = [&](int64_t ns) { return (double(ns) - double(t.origin_ns)) / 1000.0; };
  for (const auto& s : run.steps) t.steps_us.emplace_back(us(s.start_ns), us(s.end_ns));
  t.counters_unavailable = run.counters_unavailable;
  for (const auto& track : run.counters) {
    if (track.samples.empty()) continue;
    auto sorted = track.samples;
    std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    TimelineCounter c{track.name, {}, sorted.size()};
    for (const auto& [ns, v] : thin(sorted, limits.samples_per_track)) c.samples.emplace_back(us(ns), v);
    t.counters.push_back(std::move(c));
  }

  t.activities = run.device_activities.size();
  std::set<int> keys;
  for (const auto& a : run.device_activities) keys.insert(layer_key(run, a));
  t.lane_path_parts = lane_path_parts_of(run, keys, std::max<std::size_t>(limits.lanes, 1));
  std::map<std::string, std::size_t> index;  // lane name -> lane, in order of first activity
  std::map<int, std::size_t> lane_of_key;    // layer key -> lane
  std::vector<std::vector<std::pair<double, double>>> raw;
  for (const auto& a : run.device_activities) {
    const int key = layer_key(run, a);
    auto known = lane_of_key.find(key);
    if (known == lane_of_key.end()) {
      auto [it, fresh] = index.try_emplace(lane_name(run, key, t.lane_path_parts), t.lanes.size());
      if (fresh) {
        t.lanes.push_back(TimelineLane{it->first, 0, 0, {}});
        raw.emplace_back();
      }
      known = lane_of_key.emplace(key, it->second).first;
    }
    const std::size_t lane_index = known->second;
    TimelineLane& lane = t.lanes[lane_index];
    const double start = us(a.start_ns), end = std::max(start, us(a.end_ns));  // an import's end may precede its start
    lane.busy_us += end - start;
    ++lane.activities;
    raw[lane_index].emplace_back(start, end);
  }
  // The most busy first; past the limit, the rest share one lane.
  std::vector<std::size_t> order(t.lanes.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return t.lanes[a].busy_us > t.lanes[b].busy_us; });
  const std::size_t max_lanes = std::max<std::size_t>(limits.lanes, 1);
  const std::size_t kept = order.size() <= max_lanes ? order.size() : max_lanes - 1;
  std::vector<TimelineLane> lanes;
  std::vector<std::vector<std::pair<double, double>>> lane_raw;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const std::size_t i = order[k];
    if (k < kept) {
      lanes.push_back(std::move(t.lanes[i]));
      lane_raw.push_back(std::move(raw[i]));
      continue;
    }
    if (k == kept) {
      lanes.push_back(TimelineLane{"(other layers)", 0, 0, {}});
      lane_raw.emplace_back();
    }
    lanes.back().busy_us += t.lanes[i].busy_us;
    lanes.back().activities += t.lanes[i].activities;
    lane_raw.back().insert(lane_raw.back().end(), raw[i].begin(), raw[i].end());
  }
  t.lanes = std::move(lanes);
  double first = std::numeric_limits<double>::max(), last = std::numeric_limits<double>::lowest();
  for (auto& r : lane_raw) {
    std::sort(r.begin(), r.end());
    if (!r.empty()) first = std::min(first, r.front().first);
    for (const auto& s : r) last = std::max(last, s.second);
  }
  // Touching and overlapping activities always merge; past the span limit, so do those closer
  // than the narrowest gap that fits it: doubled until it fits, then bisected, so that the
  // timeline keeps about as many spans as it may.
  const std::size_t most = std::max<std::size_t>(limits.spans, t.lanes.size());
  const auto fits = [&](double gap) { return merge_spans(t.lanes, lane_raw, gap) <= most; };
  double gap = 0;
  if (!fits(0)) {
    const double range = last > first ? last - first : 1.0;
    double lo = 0, hi = range / double(std::max<std::size_t>(limits.spans, 1)) / 4;
    while (!fits(hi)) {
      lo = hi;
      hi *= 2;
    }
    for (int i = 0; i < 12; ++i) {
      const double mid = (lo + hi) / 2;
      (fits(mid) ? hi : lo) = mid;
    }
    gap = hi;
    fits(gap);  // the spans of the gap chosen
  }
  t.merge_gap_us = gap;
  return t;
}

nlohmann::json to_json(const CompactTimeline& t) {
  const auto pairs = [](const std::vector<std::pair<double, double>>& v) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& [x, y] : v) a.push_back({x, y});
    return a;
  };
  nlohmann::json counters = nlohmann::json::array();
  for (const auto& c : t.counters)
    counters.push_back({{"name", c.name}, {"samples_in_trace", c.samples_in_trace}, {"samples", pairs(c.samples)}});
  nlohmann::json lanes = nlohmann::json::array();
  for (const auto& l : t.lanes)
    lanes.push_back(
        {{"name", l.name}, {"busy_us", l.busy_us}, {"activities", l.activities}, {"spans_us", pairs(l.spans_us)}});
  nlohmann::json j = {{"origin", t.origin_is_step ? "the first kept step's start" : "the trace's first event"},
                      {"steps_us", pairs(t.steps_us)},
                      {"counters", counters},
                      {"lane_path_parts", t.lane_path_parts},
                      {"merge_gap_us", t.merge_gap_us},
                      {"device_activities", t.activities},
                      {"lanes", lanes}};
  if (!t.counters_unavailable.empty()) j["counters_unavailable"] = t.counters_unavailable;
  return j;
}

}  // namespace opcost
