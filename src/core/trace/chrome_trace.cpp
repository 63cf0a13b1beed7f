#include "core/trace/chrome_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <stdexcept>

#include "core/io/gzip_file.h"
#include "core/io/output_file.h"

namespace opcost {

namespace {

constexpr int kHostPid = 0;
constexpr int kDevicePidBase = 1;  // device d is process 1 + d

// The earliest time of the run: the trace's zero, so timestamps stay short.
int64_t origin_ns(const TraceRun& run) {
  int64_t t = INT64_MAX;
  for (const auto& s : run.steps) t = std::min(t, s.start_ns);
  for (const auto& l : run.layers) t = std::min(t, l.start_ns);
  for (const auto& o : run.ops) t = std::min(t, o.start_ns);
  for (const auto& a : run.device_activities) t = std::min(t, a.start_ns);
  for (const auto& c : run.counters)
    for (const auto& [at, v] : c.samples) t = std::min(t, at);
  return t == INT64_MAX ? 0 : t;
}

class EventWriter {
 public:
  EventWriter(const std::function<void(std::string_view)>& write, int64_t origin) : write_(write), origin_(origin) {}
  void begin(const TraceRun& run) {
    write_(fmt::format("{{\"displayTimeUnit\":\"ns\",\"otherData\":{{\"source\":{},\"device\":{}}},\"traceEvents\":[",
                       nlohmann::json(run.source).dump(), nlohmann::json(run.device).dump()));
  }
  void end() { write_("\n]}\n"); }
  void event(nlohmann::json e) {
    write_(first_ ? "\n" : ",\n");
    first_ = false;
    write_(e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  // Microseconds since the origin, to the nanosecond.
  double ts(int64_t ns) const { return double(ns - origin_) / 1000.0; }
  void slice(const std::string& name, const char* cat, int pid, uint64_t tid, int64_t start, int64_t end,
             nlohmann::json args = nullptr) {
    nlohmann::json e = {{"ph", "X"},
                        {"name", name},
                        {"cat", cat},
                        {"pid", pid},
                        {"tid", tid},
                        {"ts", ts(start)},
                        {"dur", double(end - start) / 1000.0}};
    if (!args.is_null()) e["args"] = std::move(args);
    event(std::move(e));
  }
  void name(const char* what, int pid, uint64_t tid, const std::string& name) {
    nlohmann::json e = {{"ph", "M"}, {"name", what}, {"pid", pid}, {"args", {{"name", name}}}};
    if (std::string_view(what) == "thread_name") e["tid"] = tid;
    event(std::move(e));
  }

 private:
  const std::function<void(std::string_view)>& write_;
  int64_t origin_;
  bool first_ = true;
};

// Which layers a --layers pattern keeps: those it matches and everything under them.
std::regex layer_regex(const std::string& pattern) {
  try {
    return std::regex(pattern);
  } catch (const std::regex_error& e) {
    throw std::invalid_argument(fmt::format("--layers '{}': not a regular expression ({})", pattern, e.what()));
  }
}

std::vector<bool> kept_layers(const TraceRun& run, const std::string& pattern) {
  std::vector<bool> kept(run.layers.size(), pattern.empty());
  if (pattern.empty()) return kept;
  const std::regex re = layer_regex(pattern);
  for (std::size_t i = 0; i < run.layers.size(); ++i)
    for (int l = int(i); l >= 0 && !kept[i]; l = run.layers[std::size_t(l)].parent)
      kept[i] = std::regex_search(run.layers[std::size_t(l)].name, re);
  return kept;
}

}  // namespace

void check_layer_pattern(const std::string& pattern) { layer_regex(pattern); }

void write_chrome_trace(const TraceRun& run, const std::function<void(std::string_view)>& write,
                        const ChromeTraceOptions& options) {
  const std::vector<bool> layer_kept = kept_layers(run, options.layers);
  auto op_kept = [&](int op) {
    if (options.layers.empty()) return true;
    const int l = run.ops[std::size_t(op)].layer;
    return l >= 0 && layer_kept[std::size_t(l)];
  };
  EventWriter w(write, origin_ns(run));
  w.begin(run);
  const auto min_ns = int64_t(options.min_duration_us * 1000.0);
  // Tracks: the host's threads, and each device's streams.
  std::set<uint64_t> threads;
  for (const auto& s : run.steps) threads.insert(s.thread);
  for (const auto& l : run.layers) threads.insert(l.thread);
  for (const auto& o : run.ops) threads.insert(o.thread);
  std::set<std::pair<int, int64_t>> streams;
  for (const auto& a : run.device_activities) streams.insert({a.device, a.stream});
  w.name("process_name", kHostPid, 0, "host: " + run.source);
  for (uint64_t t : threads) w.name("thread_name", kHostPid, t, fmt::format("thread {}", t));
  std::set<int> devices;
  for (const auto& [d, s] : streams) {
    if (devices.insert(d).second)
      w.name("process_name", kDevicePidBase + d, 0, fmt::format("{} (device {})", run.device, d));
    w.name("thread_name", kDevicePidBase + d, uint64_t(s), fmt::format("stream {}", s));
  }
  for (const auto& c : run.counters) {
    if (devices.insert(c.device).second)
      w.name("process_name", kDevicePidBase + c.device, 0, fmt::format("{} (device {})", run.device, c.device));
    for (const auto& [t, v] : c.samples)
      w.event({{"ph", "C"},
               {"name", c.name},
               {"pid", kDevicePidBase + c.device},
               {"ts", w.ts(t)},
               {"args", {{"value", v}}}});
  }
  for (const auto& s : run.steps) w.slice(s.name, "step", kHostPid, s.thread, s.start_ns, s.end_ns);
  for (std::size_t i = 0; i < run.layers.size(); ++i) {
    const auto& l = run.layers[i];
    if (layer_kept[i])
      w.slice(l.name, "layer", kHostPid, l.thread, l.start_ns, l.end_ns, {{"layer", l.name}, {"depth", l.depth}});
  }
  // Which ops launched a kept activity: they carry the flow's start.
  std::vector<std::vector<std::size_t>> launched(run.ops.size());
  for (std::size_t i = 0; i < run.device_activities.size(); ++i) {
    const auto& a = run.device_activities[i];
    if (a.op >= 0 && a.duration_ns() >= min_ns && op_kept(a.op)) launched[std::size_t(a.op)].push_back(i);
  }
  for (std::size_t i = 0; i < run.ops.size(); ++i) {
    const auto& o = run.ops[i];
    if ((o.duration_ns() < min_ns && launched[i].empty()) || !op_kept(int(i))) continue;
    nlohmann::json args = {{"layer", o.layer >= 0 ? run.layers[std::size_t(o.layer)].name : ""}};
    if (!o.shapes.empty()) args["input shapes"] = o.shapes;
    if (o.flops) args["flops"] = o.flops;
    if (o.step >= 0) args["step"] = run.steps[std::size_t(o.step)].name;
    if (run.energy) {  // attributed (opcost trace --energy): its kernels and the idle time before them
      const CallEnergy& e = run.energy->calls[i];
      args["energy uJ"] = e.mJ() * 1e3;
      args["GPU idle before its kernels us"] = e.gap_us;
    }
    w.slice(o.name, "cpu_op", kHostPid, o.thread, o.start_ns, o.end_ns, std::move(args));
    for (std::size_t k : launched[i])  // the arrow starts in the call's slice
      w.event({{"ph", "s"},
               {"id", k + 1},
               {"name", "launch"},
               {"cat", "launch"},
               {"pid", kHostPid},
               {"tid", o.thread},
               {"ts", w.ts(o.start_ns)}});
  }
  for (std::size_t i = 0; i < run.device_activities.size(); ++i) {
    const auto& a = run.device_activities[i];
    if (a.duration_ns() < min_ns) continue;
    if (!options.layers.empty() && (a.op < 0 || !op_kept(a.op))) continue;
    nlohmann::json args = {{"correlation", a.linked_correlation}};
    if (a.op >= 0) {
      const auto& o = run.ops[std::size_t(a.op)];
      args["op"] = o.name;
      args["layer"] = o.layer >= 0 ? run.layers[std::size_t(o.layer)].name : "";
    }
    const int pid = kDevicePidBase + a.device;
    w.slice(a.name, a.kind.c_str(), pid, uint64_t(a.stream), a.start_ns, a.end_ns, std::move(args));
    if (a.op >= 0)  // ...and ends in the kernel's ("bp":"e": bound to the enclosing slice)
      w.event({{"ph", "f"},
               {"bp", "e"},
               {"id", i + 1},
               {"name", "launch"},
               {"cat", "launch"},
               {"pid", pid},
               {"tid", a.stream},
               {"ts", w.ts(a.start_ns)}});
  }
  w.end();
}

void save_chrome_trace(const TraceRun& run, const std::string& path, const ChromeTraceOptions& options) {
  if (is_gzip_path(path)) {
    GzipFile f(path);
    write_chrome_trace(
        run, [&](std::string_view s) { f.write(s); }, options);
    f.close();
  } else {
    OutputFile f(path);
    write_chrome_trace(
        run, [&](std::string_view s) { f.write(s); }, options);
    f.close();
  }
}

}  // namespace opcost
