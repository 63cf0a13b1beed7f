#include "core/trace/step_selection.h"

#include <fmt/format.h>

#include <algorithm>
#include <regex>
#include <stdexcept>

namespace opcost {

StepRange parse_step_range(const std::string& text) {
  static const std::regex form(R"((\d+)(?:-(\d+))?)");
  std::smatch m;
  if (!std::regex_match(text, m, form) || std::stoull(m[1]) == 0 ||
      (m[2].matched && std::stoull(m[2]) < std::stoull(m[1])))
    throw std::invalid_argument(
        fmt::format("--only-steps '{}': give a step or a range of steps, counted from 1: 3, or 2-4", text));
  const std::size_t first = std::stoull(m[1]);
  return StepRange{first, m[2].matched ? std::size_t(std::stoull(m[2])) : first};
}

TraceRun only_steps(const TraceRun& run, StepRange range) {
  if (range.last > run.steps.size())
    throw std::invalid_argument(fmt::format(
        "--only-steps {}: the run has {} step{}; name steps from 1 to {}",
        range.first == range.last ? std::to_string(range.first) : fmt::format("{}-{}", range.first, range.last),
        run.steps.size(), run.steps.size() == 1 ? "" : "s", run.steps.size()));
  TraceRun out;
  out.source = run.source;
  out.device = run.device;
  out.measured_step = run.measured_step;
  out.counters_unavailable = run.counters_unavailable;
  auto kept_step = [&](int s) { return s >= int(range.first) - 1 && s <= int(range.last) - 1; };
  // The kept steps' span: their host ranges and what they launched, which may run after them.
  int64_t from = run.steps[range.first - 1].start_ns, to = run.steps[range.last - 1].end_ns;
  std::vector<bool> kept_op(run.ops.size());
  for (std::size_t i = 0; i < run.ops.size(); ++i) kept_op[i] = kept_step(run.ops[i].step);
  for (const auto& a : run.device_activities)
    if (a.op >= 0 && kept_op[std::size_t(a.op)]) to = std::max(to, a.end_ns);
  auto inside = [&](int64_t start, int64_t end) { return start >= from && end <= to; };

  for (std::size_t s = range.first - 1; s < range.last; ++s) out.steps.push_back(run.steps[s]);
  for (std::size_t i = 0; i < run.ops.size(); ++i)
    if (kept_op[i]) out.ops.push_back(run.ops[i]);
  for (const auto& a : run.device_activities)
    if (a.op >= 0 ? bool(kept_op[std::size_t(a.op)]) : inside(a.start_ns, a.start_ns))
      out.device_activities.push_back(a);
  for (const auto& l : run.layers)
    if (inside(l.start_ns, l.end_ns)) out.layers.push_back(l);
  for (const auto& b : run.backward_ranges)
    if (inside(b.start_ns, b.end_ns)) out.backward_ranges.push_back(b);
  for (const auto& s : run.synchronizations)
    if (inside(s.start_ns, s.end_ns)) out.synchronizations.push_back(s);
  for (const auto& c : run.counters) {
    CounterTrack track{c.name, c.device, {}};
    for (const auto& sample : c.samples)
      if (inside(sample.first, sample.first)) track.samples.push_back(sample);
    if (!track.samples.empty()) out.counters.push_back(std::move(track));
  }
  tie_activities(out);
  return out;
}

}  // namespace opcost
