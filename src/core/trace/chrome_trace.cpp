#include "core/trace/chrome_trace.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <set>

namespace opcost {

namespace {

constexpr int kHostPid = 0;
constexpr int kDevicePidBase = 1;  // device d is process 1 + d

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

}  // namespace

void write_chrome_trace(const TraceRun& run, const TraceSelection& keep,
                        const std::function<void(std::string_view)>& write) {
  EventWriter w(write, keep.origin_ns);
  w.begin(run);
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
    if (keep.layers[i])
      w.slice(l.name, "layer", kHostPid, l.thread, l.start_ns, l.end_ns, {{"layer", l.name}, {"depth", l.depth}});
  }
  for (std::size_t i = 0; i < run.ops.size(); ++i) {
    const auto& o = run.ops[i];
    if (!keep.ops[i]) continue;
    nlohmann::json args = {{"layer", o.layer >= 0 ? run.layers[std::size_t(o.layer)].name : ""}};
    if (!o.shapes.empty()) args["input shapes"] = o.shapes;
    if (o.flops) args["flops"] = o.flops;
    if (o.step >= 0) args["step"] = run.steps[std::size_t(o.step)].name;
    // What ties the call to its kernels and its backward calls to their forward layer, so
    // that `opcost trace --import` of this file gives the same tables (chrome_import.h).
    if (!o.correlations.empty()) args["External ids"] = o.correlations;
    if (!o.forward_sequence.empty()) args["forward sequence numbers"] = o.forward_sequence;
    if (o.backward_of >= 0) args["backward of sequence number"] = o.backward_of;
    if (run.energy) {  // attributed (opcost trace --energy): its kernels and the idle time before them
      const CallEnergy& e = run.energy->calls[i];
      args["energy uJ"] = e.mJ() * 1e3;
      args["energy ci95 uJ"] = e.ci_mJ(run.energy->gap_power_ci_W) * 1e3;
      args["GPU idle before its kernels us"] = e.gap_us;
    }
    w.slice(o.name, "cpu_op", kHostPid, o.thread, o.start_ns, o.end_ns, std::move(args));
    for (std::size_t k : keep.launched[i])  // the arrow starts in the call's slice
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
    if (!keep.activities[i]) continue;
    nlohmann::json args = {{"correlation", a.linked_correlation},
                           {"External id", a.linked_correlation},  // as torch.profiler names it
                           {"device", a.device},
                           {"stream", a.stream}};
    if (a.op >= 0) {
      const auto& o = run.ops[std::size_t(a.op)];
      args["op"] = o.name;
      args["layer"] = o.layer >= 0 ? run.layers[std::size_t(o.layer)].name : "";
    }
    const int pid = kDevicePidBase + a.device;
    w.slice(a.name, a.kind.c_str(), pid, uint64_t(a.stream), a.start_ns, a.end_ns, std::move(args));
    if (a.op >= 0 &&
        keep.ops[std::size_t(a.op)])  // ...and ends in the kernel's ("bp":"e": bound to the enclosing slice)
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

}  // namespace opcost
