#include "core/trace/chrome_import.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <cmath>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>

namespace opcost {

namespace {

constexpr std::string_view kSuggestion = "give a Chrome trace, as torch.profiler's export_chrome_trace writes it";

// Times beyond this (microseconds, either sign) are refused: nanoseconds must fit an int64
// with room for a duration, and no clock of this century gives more (4e15 us is 2096 as
// microseconds since 1970).
constexpr double kMaxTimeUs = 4e15;

// One trace event's fields that the run needs. String views point into the parser's buffers,
// valid while the document is.
struct EventFields {
  std::string_view ph, cat, name;
  std::optional<uint64_t> thread;
  std::optional<double> ts_us, dur_us;
  // Present but not a number: what was there, for the message ("\"abc\"", "null").
  std::string bad_tid, bad_ts, bad_dur;
  uint64_t external_id = 0;
  std::vector<uint64_t> external_ids;  // opcost's calls: every correlation id folded into them
  int64_t sequence = -1, forward_thread = 0, stream = 0, backward_of = -1;
  std::vector<int64_t> forward_sequences;  // opcost's calls
  uint64_t flops = 0;
  int device = 0;
  std::string dims;  // "Input Dims" (or opcost's "input shapes") as text
};

std::string dims_text(simdjson::ondemand::array dims) {
  std::string out;
  for (auto d : dims) {
    if (!out.empty()) out += ", ";
    simdjson::ondemand::array shape;
    if (d.get_array().get(shape) != simdjson::SUCCESS) {
      out += "[]";
      continue;
    }
    out += '[';
    bool first = true;
    for (auto v : shape) {
      int64_t x = 0;
      if (v.get_int64().get(x) != simdjson::SUCCESS) continue;
      if (!first) out += ", ";
      out += std::to_string(x);
      first = false;
    }
    out += ']';
  }
  return out;
}

// A value of another type than expected leaves the field as it was (an unused argument of an
// odd type is no reason to lose the event).
template <typename T, typename Field>
void set_if(simdjson::simdjson_result<T> value, Field& field) {
  T v;
  if (std::move(value).get(v) == simdjson::SUCCESS) field = v;
}

template <typename T>
void append_all(simdjson::simdjson_result<simdjson::ondemand::value> value, std::vector<T>& out) {
  simdjson::ondemand::array a;
  if (value.get_array().get(a) != simdjson::SUCCESS) return;
  for (auto v : a) {
    T x;
    if constexpr (std::is_same_v<T, uint64_t>) {
      if (v.get_uint64().get(x) == simdjson::SUCCESS) out.push_back(x);
    } else {
      if (v.get_int64().get(x) == simdjson::SUCCESS) out.push_back(x);
    }
  }
}

// What a value that should have been a number is, short: a message never echoes a long string.
std::string describe(simdjson::ondemand::value value) {
  simdjson::ondemand::json_type type;
  if (value.type().get(type) != simdjson::SUCCESS) return "a malformed value";
  switch (type) {
    case simdjson::ondemand::json_type::string: {
      std::string_view s;
      if (value.get_string().get(s) != simdjson::SUCCESS) return "a malformed string";
      return s.size() <= 24 ? fmt::format("\"{}\"", s) : fmt::format("\"{}...\" ({} bytes)", s.substr(0, 20), s.size());
    }
    case simdjson::ondemand::json_type::null:
      return "null";
    case simdjson::ondemand::json_type::boolean:
      return "a boolean";
    case simdjson::ondemand::json_type::array:
      return "an array";
    case simdjson::ondemand::json_type::object:
      return "an object";
    default:
      return "a number out of a double's range";
  }
}

void read_number(simdjson::ondemand::value value, std::optional<double>& out, std::string& bad) {
  double x;
  if (value.get_double().get(x) == simdjson::SUCCESS)
    out = x;
  else
    bad = describe(value);
}

EventFields read_event(simdjson::ondemand::object event) {
  EventFields e;
  for (auto field : event) {
    const std::string_view key = field.unescaped_key();
    simdjson::ondemand::value value;
    if (field.value().get(value) != simdjson::SUCCESS) continue;
    if (key == "ph") {
      set_if(value.get_string(), e.ph);
    } else if (key == "cat") {
      set_if(value.get_string(), e.cat);
    } else if (key == "name") {
      set_if(value.get_string(), e.name);
      // Most of a trace with stacks is Python functions: only module ranges matter there, and
      // nothing after the name (ph and cat come first in torch.profiler's events).
      if (e.cat == "python_function" && e.name.rfind("nn.Module: ", 0) != 0) return e;
    } else if (key == "tid") {
      uint64_t t = 0;
      if (value.get_uint64().get(t) == simdjson::SUCCESS)
        e.thread = t;
      else
        e.bad_tid = describe(value);
    } else if (key == "ts") {
      read_number(value, e.ts_us, e.bad_ts);
    } else if (key == "dur") {
      read_number(value, e.dur_us, e.bad_dur);
    } else if (key == "args") {
      simdjson::ondemand::object args;
      if (value.get_object().get(args) != simdjson::SUCCESS) continue;
      for (auto arg : args) {
        const std::string_view k = arg.unescaped_key();
        auto v = arg.value();
        if (k == "External id") {
          set_if(v.get_uint64(), e.external_id);
        } else if (k == "External ids") {  // opcost's own calls
          append_all(v, e.external_ids);
        } else if (k == "Sequence number") {
          set_if(v.get_int64(), e.sequence);
        } else if (k == "Fwd thread id") {
          set_if(v.get_int64(), e.forward_thread);
        } else if (k == "forward sequence numbers") {  // opcost's
          append_all(v, e.forward_sequences);
        } else if (k == "backward of sequence number") {  // opcost's
          set_if(v.get_int64(), e.backward_of);
        } else if (k == "device") {
          int64_t d = 0;
          if (v.get_int64().get(d) == simdjson::SUCCESS && d >= 0 && d < (1 << 20)) e.device = int(d);
        } else if (k == "stream") {
          set_if(v.get_int64(), e.stream);
        } else if (k == "flops") {
          set_if(v.get_uint64(), e.flops);
        } else if (k == "Input Dims") {
          simdjson::ondemand::array dims;
          if (v.get_array().get(dims) == simdjson::SUCCESS) e.dims = dims_text(dims);
        } else if (k == "input shapes") {  // opcost's, already as text
          std::string_view s;
          if (v.get_string().get(s) == simdjson::SUCCESS) e.dims = s;
        }
      }
    }
  }
  return e;
}

int64_t ns_of(double us) { return int64_t(std::llround(us * 1000.0)); }

const char* device_kind_of(std::string_view cat) {
  if (cat == "kernel") return "kernel";
  if (cat == "gpu_memcpy" || cat == "memcpy") return "memcpy";  // torch.profiler's, opcost's
  if (cat == "gpu_memset" || cat == "memset") return "memset";
  return nullptr;
}

// The complete events ("X") the run is made of; every other event is left alone unchecked.
bool is_used(const EventFields& e) {
  if (e.ph != "X") return false;
  const std::string_view c = e.cat;
  return c == "cpu_op" || device_kind_of(c) || c == "user_annotation" || c == "step" || c == "layer" ||
         (c == "cuda_runtime" && e.name.find("Synchronize") != std::string_view::npos) ||
         (c == "python_function" && e.name.rfind("nn.Module: ", 0) == 0);
}

// Why a used event cannot be placed on the time line ("" when it can).
std::string fault_of(const EventFields& e) {
  if (!e.bad_tid.empty()) return fmt::format("tid {} is not a thread number", e.bad_tid);
  if (!e.thread) return "it has no tid";
  if (!e.bad_ts.empty()) return fmt::format("ts {} is not a number", e.bad_ts);
  if (!e.ts_us) return "it has no ts";
  if (!std::isfinite(*e.ts_us) || std::fabs(*e.ts_us) > kMaxTimeUs)
    return fmt::format("ts {} is out of range (at most {:g} us either side of 0)", *e.ts_us, kMaxTimeUs);
  if (!e.bad_dur.empty()) return fmt::format("dur {} is not a number", e.bad_dur);
  if (!e.dur_us) return "it has no dur";
  if (!std::isfinite(*e.dur_us) || *e.dur_us < 0 || *e.dur_us > kMaxTimeUs)
    return fmt::format("dur {} is out of range (0 to {:g} us)", *e.dur_us, kMaxTimeUs);
  return "";
}

// The run made of the used events, in the order the parser meets them: calls are folded and
// tied once every event is in (finish).
class RunFromEvents {
 public:
  RunFromEvents(const std::string& name, const TraceImportLimits& limits) : name_(name), limits_(limits) {
    run_.source = "torch.profiler export";
  }

  // Event `index` (1-based) at byte `offset`: a used event that cannot be placed on the time
  // line is skipped and counted, not the trace refused (one odd event should not lose a run).
  void add(const EventFields& e, uint64_t index, uint64_t offset) {
    if (!is_used(e)) return;
    if (std::string fault = fault_of(e); !fault.empty()) {
      if (run_.skipped_events++ == 0) run_.first_skipped = fmt::format("event {} at byte {}: {}", index, offset, fault);
      return;
    }
    count_record(index, offset);
    const int64_t start = ns_of(*e.ts_us), end = start + ns_of(*e.dur_us);
    if (e.cat == "cpu_op")
      add_call(e, start, end);
    else
      add_range_or_activity(e, start, end);
  }

  // The top-level values (otherData's source and device) are written here as they are read.
  TraceRun& run() { return run_; }

  // Refuses a trace with no call to tie anything to, saying whether its calls were all malformed.
  TraceRun finish() && {
    if (calls_.empty() && run_.skipped_events > 0)
      throw std::invalid_argument(fmt::format(
          "{}: no valid operator calls: {} events skipped as malformed, the first {}; give a trace whose events have "
          "numeric tid, ts and a non-negative dur",
          name_, run_.skipped_events, run_.first_skipped));
    if (calls_.empty())
      throw std::invalid_argument(fmt::format(
          "{}: no operator calls (cpu_op events); profile with activities=[ProfilerActivity.CPU, ...] and export with "
          "export_chrome_trace",
          name_));
    run_.ops = fold_nested_calls(std::move(calls_));
    tie_activities(run_);
    return std::move(run_);
  }

 private:
  // The run is the one thing that grows with the file: bounded, whatever the file holds.
  void count_record(uint64_t index, uint64_t offset) {
    if (++records_ > limits_.max_records)
      throw std::invalid_argument(fmt::format(
          "{}: more than {} calls, ranges and device activities (event {} at byte {}), over the import's bound; "
          "trace fewer steps (torch.profiler.schedule's active=)",
          name_, limits_.max_records, index, offset));
  }

  void add_call(const EventFields& e, int64_t start, int64_t end) {
    OpActivity op;
    op.name = e.name;
    op.shapes = e.dims;
    op.thread = *e.thread;
    op.start_ns = start;
    op.end_ns = end;
    op.flops = e.flops;
    if (e.external_id) op.correlations.push_back(e.external_id);
    op.correlations.insert(op.correlations.end(), e.external_ids.begin(), e.external_ids.end());
    op.forward_sequence = e.forward_sequences;
    op.backward_of = e.backward_of;
    // torch.profiler marks a backward call by the forward thread it answers; its sequence
    // number is then the forward node's, not one the call made.
    if (e.sequence >= 0) {
      if (e.forward_thread > 0)
        op.backward_of = e.sequence;
      else
        op.forward_sequence.push_back(e.sequence);
    }
    calls_.push_back(std::move(op));
  }

  void add_range_or_activity(const EventFields& e, int64_t start, int64_t end) {
    const uint64_t thread = *e.thread;
    const std::string_view name = e.name;
    if (const char* kind = device_kind_of(e.cat)) {
      run_.device_activities.push_back(
          DeviceActivity{std::string(name), kind, e.device, e.stream, start, end, e.external_id});
    } else if (e.cat == "cuda_runtime") {  // a synchronisation: for activities without ids
      run_.synchronizations.push_back(HostRange{std::string(name), thread, start, end});
    } else if (e.cat == "step" || (e.cat == "user_annotation" && name.rfind("ProfilerStep#", 0) == 0)) {
      run_.steps.push_back(HostRange{std::string(name), thread, start, end});
    } else if (e.cat == "user_annotation" || e.cat == "layer") {
      run_.layers.push_back(HostRange{std::string(name), thread, start, end});
    } else {  // a module's range: "nn.Module: Conv2d_0" is layer "Conv2d_0"
      run_.layers.push_back(HostRange{std::string(name.substr(11)), thread, start, end});
    }
  }

  const std::string& name_;
  const TraceImportLimits& limits_;
  TraceRun run_;
  std::vector<OpActivity> calls_;
  std::size_t records_ = 0;
};

// Events are parsed a chunk at a time (event_chunks.h), with one parser: memory holds a few
// chunks and their indexes, not the document. The scan (the calling thread) and the parse (a
// worker) overlap: chunks pass through a queue two deep, so memory holds at most four chunks
// (one filling, two queued, one parsed). The first failure on either side ends both, and the
// parser's own failure is the one reported (the scanner only stops for it).
class OverlappedParse {
 public:
  OverlappedParse(simdjson::ondemand::parser& parser, const std::string& name, RunFromEvents& events)
      : parser_(parser), name_(name), events_(events) {}

  ChunkedTrace scan_and_parse(TraceBytes& bytes, const TraceImportLimits& limits) {
    std::thread worker([this] { parse_queued(); });
    ChunkedTrace chunked;
    try {
      chunked = read_event_chunks(bytes, limits, simdjson::SIMDJSON_PADDING,
                                  [this](EventChunk&& chunk) { hand_over(std::move(chunk)); });
    } catch (...) {
      finish(worker);
      if (parse_failed_) std::rethrow_exception(parse_failed_);
      throw;
    }
    finish(worker);
    if (parse_failed_) std::rethrow_exception(parse_failed_);
    return chunked;
  }

 private:
  // The scanner's side: waits for room in the queue.
  void hand_over(EventChunk&& chunk) {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return queue_.size() < 2 || parse_failed_; });
    if (parse_failed_) throw std::invalid_argument("");  // the parser's own error is rethrown instead
    queue_.push_back(std::move(chunk));
    changed_.notify_all();
  }

  // The worker: parses chunks until the scan is done and the queue empty, or a chunk fails.
  void parse_queued() {
    for (;;) {
      EventChunk chunk;  // freed before waiting for the next: the four-chunk bound holds
      if (!next_chunk(chunk)) return;
      try {
        parse(chunk);
      } catch (...) {
        std::lock_guard lock(mu_);
        parse_failed_ = std::current_exception();
        queue_.clear();
        changed_.notify_all();
        return;
      }
    }
  }

  bool next_chunk(EventChunk& chunk) {
    {
      std::unique_lock lock(mu_);
      changed_.wait(lock, [&] { return !queue_.empty() || scanned_; });
      if (queue_.empty()) return false;
      chunk = std::move(queue_.front());
      queue_.pop_front();
    }
    changed_.notify_all();
    return true;
  }

  // A chunk that is not JSON is refused naming the event the parser was in and its byte.
  void parse(const EventChunk& chunk) {
    std::size_t k = 0;  // the event being read
    try {
      simdjson::ondemand::document events =
          parser_.iterate(simdjson::padded_string_view(chunk.json.data(), chunk.json.size(), chunk.json.capacity()));
      for (auto event : events.get_array()) {
        simdjson::ondemand::object o;
        if (event.get_object().get(o) == simdjson::SUCCESS)
          events_.add(read_event(o), chunk.first_event + k + 1, chunk.event_offsets[k]);
        ++k;
      }
    } catch (const simdjson::simdjson_error& e) {
      const std::size_t at = std::min(k, chunk.event_offsets.size() - 1);
      throw std::invalid_argument(fmt::format("{}: not JSON in event {} (at byte {}): {}; {}", name_,
                                              chunk.first_event + at + 1, chunk.event_offsets[at], e.what(),
                                              kSuggestion));
    }
  }

  void finish(std::thread& worker) {
    {
      std::lock_guard lock(mu_);
      scanned_ = true;
    }
    changed_.notify_all();
    worker.join();
  }

  simdjson::ondemand::parser& parser_;
  const std::string& name_;
  RunFromEvents& events_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<EventChunk> queue_;
  bool scanned_ = false;
  std::exception_ptr parse_failed_;
};

// The top-level values kept (bounded, event_chunks.h): the GPU's name, and opcost's own
// source and device.
void read_kept_values(simdjson::ondemand::parser& parser, std::string& kept, const std::string& name, TraceRun& run) {
  kept.reserve(kept.size() + simdjson::SIMDJSON_PADDING);
  try {
    simdjson::ondemand::document doc =
        parser.iterate(simdjson::padded_string_view(kept.data(), kept.size(), kept.capacity()));
    for (auto field : doc.get_object()) {
      const std::string_view key = field.unescaped_key().value();
      std::string_view text;
      if (key == "deviceProperties") {
        simdjson::ondemand::array devices;
        if (field.value().get_array().get(devices) != simdjson::SUCCESS) continue;
        for (auto d : devices)
          if (run.device.empty() && d["name"].get_string().get(text) == simdjson::SUCCESS) run.device = text;
      } else if (key == "otherData") {
        simdjson::ondemand::object other;
        if (field.value().get_object().get(other) != simdjson::SUCCESS) continue;
        for (auto f : other) {
          const std::string_view k = f.unescaped_key().value();
          if (k == "source" && f.value().get_string().get(text) == simdjson::SUCCESS) run.source = text;
          if (k == "device" && f.value().get_string().get(text) == simdjson::SUCCESS && run.device.empty())
            run.device = text;
        }
      }
    }
  } catch (const simdjson::simdjson_error& e) {
    throw std::invalid_argument(
        fmt::format("{}: not JSON in its deviceProperties or otherData ({}); {}", name, e.what(), kSuggestion));
  }
}

}  // namespace

TraceRun import_chrome_trace(const std::string& path, const TraceImportLimits& limits) {
  TraceBytes bytes = TraceBytes::open_file(path);
  return import_chrome_trace(bytes, limits);
}

TraceRun import_chrome_trace(TraceBytes& bytes, const TraceImportLimits& limits) {
  const std::string& name = bytes.name();
  RunFromEvents events(name, limits);
  simdjson::ondemand::parser parser;  // the chunks' first, then the kept values'
  ChunkedTrace chunked = OverlappedParse(parser, name, events).scan_and_parse(bytes, limits);
  if (!chunked.has_events) throw std::invalid_argument(fmt::format("{}: no traceEvents; {}", name, kSuggestion));
  read_kept_values(parser, chunked.kept, name, events.run());
  return std::move(events).finish();
}

}  // namespace opcost
