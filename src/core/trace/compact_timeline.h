#pragma once
// A compact timeline of a traced run for the HTML report: the counter tracks (GPU power, SM
// clock, temperature, the energy counter) and the device's busy spans, one lane per layer,
// on one time axis. The full timeline stays Perfetto's (`trace -o`): here samples are thinned
// and neighbouring kernels of a lane merged, so that a long trace stays a few hundred KB.
// Torch-free.
#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "core/trace/activities.h"

namespace opcost {

struct CompactTimelineLimits {
  std::size_t samples_per_track = 1000;  // beyond: each bucket's first, lowest and highest kept
  std::size_t lanes = 12;                // beyond: the lanes of least busy time share one
  std::size_t spans = 2000;              // over every lane; beyond: nearer spans merge
};

struct TimelineCounter {
  std::string name;                                // with its unit, as the trace names it: "GPU power (W)"
  std::vector<std::pair<double, double>> samples;  // (µs since the origin, value)
  std::size_t samples_in_trace = 0;
};

struct TimelineLane {
  std::string name;    // a layer (module path at the lane depth), "(no layer)" or "(not tied to a call)"
  double busy_us = 0;  // its device activities' time, before merging
  std::size_t activities = 0;
  std::vector<std::pair<double, double>> spans_us;  // (start, end) µs since the origin, merged
};

struct CompactTimeline {
  // Times are µs since the origin: the first kept step's start (else the first event's).
  int64_t origin_ns = 0;
  bool origin_is_step = false;
  std::vector<std::pair<double, double>> steps_us;
  std::vector<TimelineCounter> counters;
  std::vector<TimelineLane> lanes;  // by busy time, the most first
  int lane_path_parts = 1;          // module-path components a lane's name keeps ("layer1": 1)
  // Device activities closer than this in one lane are drawn as one span (0: none merged).
  double merge_gap_us = 0;
  std::size_t activities = 0;
  std::string counters_unavailable;  // why there are no counter tracks ("" when there are)
  bool empty() const { return lanes.empty() && counters.empty(); }
};

CompactTimeline compact_timeline(const TraceRun& run, const CompactTimelineLimits& limits = {});
nlohmann::json to_json(const CompactTimeline& t);

}  // namespace opcost
