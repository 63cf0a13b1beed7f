#include "core/trace/perfetto_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace opcost {

namespace {

// Protobuf's wire format: what the packets below need of it.
class Message {
 public:
  void varint(int field, uint64_t v) {
    tag(field, 0);
    raw_varint(v);
  }
  void fixed64(int field, uint64_t v) {
    tag(field, 1);
    bytes_.append(reinterpret_cast<const char*>(&v), 8);  // little-endian hosts (x86-64, arm64)
  }
  void real(int field, double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    fixed64(field, bits);
  }
  void text(int field, std::string_view s) {
    tag(field, 2);
    raw_varint(s.size());
    bytes_.append(s);
  }
  void message(int field, const Message& m) { text(field, m.bytes_); }
  const std::string& bytes() const { return bytes_; }

 private:
  void tag(int field, int wire_type) { raw_varint(uint64_t(field) << 3 | uint64_t(wire_type)); }
  void raw_varint(uint64_t v) {
    while (v >= 0x80) {
      bytes_ += char(v | 0x80);
      v >>= 7;
    }
    bytes_ += char(v);
  }
  std::string bytes_;
};

// Field numbers (perfetto.protos).
namespace trace {
constexpr int kPacket = 1;
}
namespace packet {
constexpr int kTimestamp = 8, kSequenceId = 10, kTrackEvent = 11, kSequenceFlags = 13, kTrackDescriptor = 60;
constexpr uint64_t kIncrementalStateCleared = 1;
}  // namespace packet
namespace track {
constexpr int kUuid = 1, kName = 2, kProcess = 3, kParentUuid = 5, kCounter = 8;
}
namespace process {
constexpr int kPid = 1, kName = 6;
}
namespace event {
constexpr int kAnnotations = 4, kType = 9, kTrackUuid = 11, kName = 23, kDoubleCounterValue = 44, kFlowIds = 47,
              kTerminatingFlowIds = 48;
constexpr uint64_t kSliceBegin = 1, kSliceEnd = 2, kCounter = 4;
}  // namespace event
namespace annotation {
constexpr int kDoubleValue = 5, kStringValue = 6, kName = 10, kIntValue = 4;
}

constexpr uint32_t kSequence = 1;  // one writer: one packet sequence

// A slice's begin or end on a track, with what the begin carries.
struct Mark {
  int64_t ts = 0;
  bool begin = true;
  int64_t length = 0;  // the slice's: at equal times, longer slices open first and close last
  std::size_t order = 0;
  Message event;  // the TrackEvent, less its timestamp
};

class PacketWriter {
 public:
  PacketWriter(const std::function<void(std::string_view)>& write, int64_t origin) : write_(write), origin_(origin) {}
  void descriptor(const Message& track) {
    Message p;
    p.varint(packet::kSequenceId, kSequence);
    if (first_) p.varint(packet::kSequenceFlags, packet::kIncrementalStateCleared);
    first_ = false;
    p.message(packet::kTrackDescriptor, track);
    emit(p);
  }
  void event(int64_t ts_ns, const Message& e) {
    Message p;
    p.varint(packet::kTimestamp, uint64_t(std::max<int64_t>(0, ts_ns - origin_)));
    p.varint(packet::kSequenceId, kSequence);
    p.message(packet::kTrackEvent, e);
    emit(p);
  }

 private:
  void emit(const Message& p) {
    Message wrapper;
    wrapper.message(trace::kPacket, p);
    write_(wrapper.bytes());
  }
  const std::function<void(std::string_view)>& write_;
  int64_t origin_;
  bool first_ = true;
};

void annotate(Message& e, std::string_view name, std::string_view value) {
  Message a;
  a.text(annotation::kName, name);
  a.text(annotation::kStringValue, value);
  e.message(event::kAnnotations, a);
}
void annotate(Message& e, std::string_view name, double value) {
  Message a;
  a.text(annotation::kName, name);
  a.real(annotation::kDoubleValue, value);
  e.message(event::kAnnotations, a);
}
void annotate(Message& e, std::string_view name, int64_t value) {
  Message a;
  a.text(annotation::kName, name);
  a.varint(annotation::kIntValue, uint64_t(value));
  e.message(event::kAnnotations, a);
}

// The run's tracks, slices and counters as packets. Track descriptors are written as tracks
// are first used, so that a track is described before its events; slices are gathered per
// track first, since Perfetto needs each track's begins and ends in nesting order.
class PerfettoRunWriter {
 public:
  PerfettoRunWriter(const TraceRun& run, const TraceSelection& keep, const std::function<void(std::string_view)>& write)
      : run_(run), keep_(keep), w_(write, keep.origin_ns) {}

  void write() {
    // Tracks: a host process with a track per thread; a process per device with a track per
    // stream and one per counter.
    process_track(host_, 0, "host: " + run_.source);
    for (const auto& s : run_.steps) slice(thread(s.thread), s.start_ns, s.end_ns, s.name, Message{});
    add_layers();
    add_calls();
    add_device_activities();
    write_slices();
    write_counters();
  }

 private:
  void process_track(uint64_t uuid, int pid, const std::string& name) {
    Message p, t;
    p.varint(process::kPid, uint64_t(pid));
    p.text(process::kName, name);
    t.varint(track::kUuid, uuid);
    t.message(track::kProcess, p);
    w_.descriptor(t);
  }
  uint64_t child_track(uint64_t parent, const std::string& name, bool counter) {
    const uint64_t uuid = next_uuid_++;
    Message t;
    t.varint(track::kUuid, uuid);
    t.varint(track::kParentUuid, parent);
    t.text(track::kName, name);
    if (counter) t.message(track::kCounter, Message{});
    w_.descriptor(t);
    return uuid;
  }
  uint64_t device(int d) {
    auto [it, fresh] = device_track_.try_emplace(d, 0);
    if (fresh) {
      it->second = next_uuid_++;
      process_track(it->second, 1 + d, fmt::format("{} (device {})", run_.device, d));
    }
    return it->second;
  }
  uint64_t thread(uint64_t tid) {
    auto [it, fresh] = thread_track_.try_emplace(tid, 0);
    if (fresh) it->second = child_track(host_, fmt::format("thread {}", tid), false);
    return it->second;
  }
  uint64_t stream(int d, int64_t s) {
    auto [it, fresh] = stream_track_.try_emplace({d, s}, 0);
    if (fresh) it->second = child_track(device(d), fmt::format("stream {}", s), false);
    return it->second;
  }

  // A slice as its begin and end marks on its track, the begin carrying `begin`'s annotations.
  void slice(uint64_t track, int64_t start, int64_t end, const std::string& name, Message begin) {
    begin.varint(event::kType, event::kSliceBegin);
    begin.varint(event::kTrackUuid, track);
    begin.text(event::kName, name);
    Message finish;
    finish.varint(event::kType, event::kSliceEnd);
    finish.varint(event::kTrackUuid, track);
    auto& m = marks_[track];
    m.push_back(Mark{start, true, end - start, order_, std::move(begin)});
    m.push_back(Mark{end, false, end - start, order_++, std::move(finish)});
  }

  const std::string& layer_name(int layer) const {
    static const std::string none;
    return layer >= 0 ? run_.layers[std::size_t(layer)].name : none;
  }

  void add_layers() {
    for (std::size_t i = 0; i < run_.layers.size(); ++i) {
      if (!keep_.layers[i]) continue;
      const auto& l = run_.layers[i];
      Message e;
      annotate(e, "layer", l.name);
      annotate(e, "depth", int64_t(l.depth));
      slice(thread(l.thread), l.start_ns, l.end_ns, l.name, std::move(e));
    }
  }

  void add_calls() {
    for (std::size_t i = 0; i < run_.ops.size(); ++i) {
      if (!keep_.ops[i]) continue;
      const auto& o = run_.ops[i];
      Message e;
      annotate(e, "layer", layer_name(o.layer));
      if (!o.shapes.empty()) annotate(e, "input shapes", o.shapes);
      if (o.flops) annotate(e, "flops", int64_t(o.flops));
      if (o.step >= 0) annotate(e, "step", run_.steps[std::size_t(o.step)].name);
      if (run_.energy) {
        annotate(e, "energy uJ", run_.energy->calls[i].mJ() * 1e3);
        annotate(e, "energy ci95 uJ", run_.energy->calls[i].ci_mJ(run_.energy->gap_power_ci_W) * 1e3);
        annotate(e, "GPU idle before its kernels us", run_.energy->calls[i].gap_us);
      }
      for (std::size_t k : keep_.launched[i]) e.fixed64(event::kFlowIds, k + 1);  // an arrow to each kernel
      slice(thread(o.thread), o.start_ns, o.end_ns, o.name, std::move(e));
    }
  }

  void add_device_activities() {
    for (std::size_t i = 0; i < run_.device_activities.size(); ++i) {
      if (!keep_.activities[i]) continue;
      const auto& a = run_.device_activities[i];
      Message e;
      annotate(e, "kind", a.kind);
      annotate(e, "correlation", int64_t(a.linked_correlation));
      if (a.op >= 0) {
        const auto& o = run_.ops[std::size_t(a.op)];
        annotate(e, "op", o.name);
        annotate(e, "layer", layer_name(o.layer));
        if (keep_.ops[std::size_t(a.op)]) e.fixed64(event::kTerminatingFlowIds, i + 1);
      }
      slice(stream(a.device, a.stream), a.start_ns, a.end_ns, a.name, std::move(e));
    }
  }

  // Each track's marks sorted so that its slices nest.
  void write_slices() {
    for (auto& [track, m] : marks_) {
      std::sort(m.begin(), m.end(), [](const Mark& x, const Mark& y) {
        if (x.ts != y.ts) return x.ts < y.ts;
        if (x.begin != y.begin) return !x.begin;  // one slice ends before the next begins
        if (x.begin) return x.length != y.length ? x.length > y.length : x.order < y.order;  // outer opens first
        return x.length != y.length ? x.length < y.length : x.order > y.order;               // inner closes first
      });
      for (const Mark& k : m) w_.event(k.ts, k.event);
    }
  }

  void write_counters() {
    for (const auto& c : run_.counters) {
      const uint64_t track = child_track(device(c.device), c.name, true);
      for (const auto& [t, v] : c.samples) {
        Message e;
        e.varint(event::kType, event::kCounter);
        e.varint(event::kTrackUuid, track);
        e.real(event::kDoubleCounterValue, v);
        w_.event(t, e);
      }
    }
  }

  const TraceRun& run_;
  const TraceSelection& keep_;
  PacketWriter w_;
  uint64_t next_uuid_ = 2;  // 1 is the host's
  const uint64_t host_ = 1;
  std::map<uint64_t, uint64_t> thread_track_;
  std::map<int, uint64_t> device_track_;
  std::map<std::pair<int, int64_t>, uint64_t> stream_track_;
  std::map<uint64_t, std::vector<Mark>> marks_;  // per track
  std::size_t order_ = 0;                        // slices in the order they were added
};

}  // namespace

void write_perfetto_trace(const TraceRun& run, const TraceSelection& keep,
                          const std::function<void(std::string_view)>& write) {
  PerfettoRunWriter(run, keep, write).write();
}

}  // namespace opcost
