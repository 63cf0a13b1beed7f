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
  // One end of a flow arrow from a call to a device activity it launched: its start ("s") in
  // the call's slice, its end ("f", bound to the enclosing slice) in the activity's.
  void launch_arrow(const char* ph, std::size_t id, int pid, nlohmann::json tid, int64_t at_ns) {
    nlohmann::json e = {{"ph", ph},   {"id", id},   {"name", "launch"}, {"cat", "launch"},
                        {"pid", pid}, {"tid", tid}, {"ts", ts(at_ns)}};
    if (std::string_view(ph) == "f") e["bp"] = "e";
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

// The run's events in the file's order: track names and counters, then steps, layers, calls
// (each with its flow arrows' starts) and device activities (with their ends).
class ChromeRunWriter {
 public:
  ChromeRunWriter(const TraceRun& run, const TraceSelection& keep, const std::function<void(std::string_view)>& write)
      : run_(run), keep_(keep), w_(write, keep.origin_ns) {}

  void write() {
    w_.begin(run_);
    write_tracks_and_counters();
    for (const auto& s : run_.steps) w_.slice(s.name, "step", kHostPid, s.thread, s.start_ns, s.end_ns);
    for (std::size_t i = 0; i < run_.layers.size(); ++i) {
      const auto& l = run_.layers[i];
      if (keep_.layers[i])
        w_.slice(l.name, "layer", kHostPid, l.thread, l.start_ns, l.end_ns, {{"layer", l.name}, {"depth", l.depth}});
    }
    for (std::size_t i = 0; i < run_.ops.size(); ++i)
      if (keep_.ops[i]) write_call(i);
    for (std::size_t i = 0; i < run_.device_activities.size(); ++i)
      if (keep_.activities[i]) write_device_activity(i);
    w_.end();
  }

 private:
  std::string layer_name(int layer) const { return layer >= 0 ? run_.layers[std::size_t(layer)].name : ""; }

  // Tracks: the host's threads, and each device's streams; a device's counters on its process.
  void write_tracks_and_counters() {
    std::set<uint64_t> threads;
    for (const auto& s : run_.steps) threads.insert(s.thread);
    for (const auto& l : run_.layers) threads.insert(l.thread);
    for (const auto& o : run_.ops) threads.insert(o.thread);
    std::set<std::pair<int, int64_t>> streams;
    for (const auto& a : run_.device_activities) streams.insert({a.device, a.stream});
    w_.name("process_name", kHostPid, 0, "host: " + run_.source);
    for (uint64_t t : threads) w_.name("thread_name", kHostPid, t, fmt::format("thread {}", t));
    std::set<int> devices;
    for (const auto& [d, s] : streams) {
      if (devices.insert(d).second)
        w_.name("process_name", kDevicePidBase + d, 0, fmt::format("{} (device {})", run_.device, d));
      w_.name("thread_name", kDevicePidBase + d, uint64_t(s), fmt::format("stream {}", s));
    }
    for (const auto& c : run_.counters) {
      if (devices.insert(c.device).second)
        w_.name("process_name", kDevicePidBase + c.device, 0, fmt::format("{} (device {})", run_.device, c.device));
      for (const auto& [t, v] : c.samples)
        w_.event({{"ph", "C"},
                  {"name", c.name},
                  {"pid", kDevicePidBase + c.device},
                  {"ts", w_.ts(t)},
                  {"args", {{"value", v}}}});
    }
  }

  void write_call(std::size_t i) {
    const auto& o = run_.ops[i];
    nlohmann::json args = {{"layer", layer_name(o.layer)}};
    if (!o.shapes.empty()) args["input shapes"] = o.shapes;
    if (o.flops) args["flops"] = o.flops;
    if (o.step >= 0) args["step"] = run_.steps[std::size_t(o.step)].name;
    // What ties the call to its kernels and its backward calls to their forward layer, so
    // that `opcost trace --import` of this file gives the same tables (chrome_import.h).
    if (!o.correlations.empty()) args["External ids"] = o.correlations;
    if (!o.forward_sequence.empty()) args["forward sequence numbers"] = o.forward_sequence;
    if (o.backward_of >= 0) args["backward of sequence number"] = o.backward_of;
    if (run_.energy) {  // attributed (opcost trace --energy): its kernels and the idle time before them
      const CallEnergy& e = run_.energy->calls[i];
      args["energy uJ"] = e.mJ() * 1e3;
      args["energy ci95 uJ"] = e.ci_mJ(run_.energy->gap_power_ci_W) * 1e3;
      args["GPU idle before its kernels us"] = e.gap_us;
    }
    w_.slice(o.name, "cpu_op", kHostPid, o.thread, o.start_ns, o.end_ns, std::move(args));
    for (std::size_t k : keep_.launched[i])  // the arrow starts in the call's slice
      w_.launch_arrow("s", k + 1, kHostPid, o.thread, o.start_ns);
  }

  void write_device_activity(std::size_t i) {
    const auto& a = run_.device_activities[i];
    nlohmann::json args = {{"correlation", a.linked_correlation},
                           {"External id", a.linked_correlation},  // as torch.profiler names it
                           {"device", a.device},
                           {"stream", a.stream}};
    if (a.op >= 0) {
      const auto& o = run_.ops[std::size_t(a.op)];
      args["op"] = o.name;
      args["layer"] = layer_name(o.layer);
    }
    const int pid = kDevicePidBase + a.device;
    w_.slice(a.name, a.kind.c_str(), pid, uint64_t(a.stream), a.start_ns, a.end_ns, std::move(args));
    // ...and the arrow ends in the kernel's ("bp":"e": bound to the enclosing slice)
    if (a.op >= 0 && keep_.ops[std::size_t(a.op)]) w_.launch_arrow("f", i + 1, pid, a.stream, a.start_ns);
  }

  const TraceRun& run_;
  const TraceSelection& keep_;
  EventWriter w_;
};

}  // namespace

void write_chrome_trace(const TraceRun& run, const TraceSelection& keep,
                        const std::function<void(std::string_view)>& write) {
  ChromeRunWriter(run, keep, write).write();
}

}  // namespace opcost
