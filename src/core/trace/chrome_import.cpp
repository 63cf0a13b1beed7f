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

}  // namespace

TraceRun import_chrome_trace(const std::string& path, const TraceImportLimits& limits) {
  TraceBytes bytes = TraceBytes::open_file(path);
  return import_chrome_trace(bytes, limits);
}

TraceRun import_chrome_trace(TraceBytes& bytes, const TraceImportLimits& limits) {
  const std::string& name = bytes.name();
  TraceRun run;
  run.source = "torch.profiler export";
  std::vector<OpActivity> calls;
  std::size_t records = 0;
  auto add_event = [&](const EventFields& e, uint64_t index, uint64_t offset) {
    if (!is_used(e)) return;
    if (std::string fault = fault_of(e); !fault.empty()) {
      if (run.skipped_events++ == 0) run.first_skipped = fmt::format("event {} at byte {}: {}", index, offset, fault);
      return;
    }
    if (++records > limits.max_records)
      throw std::invalid_argument(fmt::format(
          "{}: more than {} calls, ranges and device activities (event {} at byte {}), over the import's bound; "
          "trace fewer steps (torch.profiler.schedule's active=)",
          name, limits.max_records, index, offset));
    const int64_t start = ns_of(*e.ts_us), end = start + ns_of(*e.dur_us);
    const uint64_t thread = *e.thread;
    const std::string_view event_name = e.name;
    if (e.cat == "cpu_op") {
      OpActivity op;
      op.name = event_name;
      op.shapes = e.dims;
      op.thread = thread;
      op.start_ns = start;
      op.end_ns = end;
      op.flops = e.flops;
      if (e.external_id) op.correlations.push_back(e.external_id);
      op.correlations.insert(op.correlations.end(), e.external_ids.begin(), e.external_ids.end());
      op.forward_sequence = e.forward_sequences;
      op.backward_of = e.backward_of;
      if (e.sequence >= 0) {
        if (e.forward_thread > 0)
          op.backward_of = e.sequence;
        else
          op.forward_sequence.push_back(e.sequence);
      }
      calls.push_back(std::move(op));
    } else if (const char* kind = device_kind_of(e.cat)) {
      run.device_activities.push_back(
          DeviceActivity{std::string(event_name), kind, e.device, e.stream, start, end, e.external_id});
    } else if (e.cat == "cuda_runtime") {  // a synchronisation: for activities without ids
      run.synchronizations.push_back(HostRange{std::string(event_name), thread, start, end});
    } else if (e.cat == "step" || (e.cat == "user_annotation" && event_name.rfind("ProfilerStep#", 0) == 0)) {
      run.steps.push_back(HostRange{std::string(event_name), thread, start, end});
    } else if (e.cat == "user_annotation" || e.cat == "layer") {
      run.layers.push_back(HostRange{std::string(event_name), thread, start, end});
    } else {  // a module's range
      run.layers.push_back(HostRange{std::string(event_name.substr(11)), thread, start, end});
    }
  };
  // Events are parsed a chunk at a time (event_chunks.h), with one parser: memory holds a
  // few chunks and their indexes, not the document.
  simdjson::ondemand::parser parser;
  // The scan (this thread) and the parse (a worker) overlap: chunks pass through a queue two
  // deep, so memory holds at most four chunks (one filling, two queued, one parsed).
  std::mutex mu;
  std::condition_variable changed;
  std::deque<EventChunk> queue;
  bool scanned = false;
  std::exception_ptr parse_failed;
  std::thread parser_thread([&] {
    for (;;) {
      EventChunk chunk;
      {
        std::unique_lock lock(mu);
        changed.wait(lock, [&] { return !queue.empty() || scanned; });
        if (queue.empty()) return;
        chunk = std::move(queue.front());
        queue.pop_front();
      }
      changed.notify_all();
      std::size_t k = 0;  // the event being read
      try {
        simdjson::ondemand::document events =
            parser.iterate(simdjson::padded_string_view(chunk.json.data(), chunk.json.size(), chunk.json.capacity()));
        for (auto event : events.get_array()) {
          simdjson::ondemand::object o;
          if (event.get_object().get(o) == simdjson::SUCCESS)
            add_event(read_event(o), chunk.first_event + k + 1, chunk.event_offsets[k]);
          ++k;
        }
      } catch (const simdjson::simdjson_error& e) {
        std::lock_guard lock(mu);
        const std::size_t at = std::min(k, chunk.event_offsets.size() - 1);
        parse_failed = std::make_exception_ptr(std::invalid_argument(
            fmt::format("{}: not JSON in event {} (at byte {}): {}; {}", name, chunk.first_event + at + 1,
                        chunk.event_offsets[at], e.what(), kSuggestion)));
      } catch (...) {
        std::lock_guard lock(mu);
        parse_failed = std::current_exception();
      }
      if (parse_failed) {
        std::lock_guard lock(mu);
        queue.clear();
        changed.notify_all();
        return;
      }
    }
  });
  auto finish_parsing = [&] {
    {
      std::lock_guard lock(mu);
      scanned = true;
    }
    changed.notify_all();
    parser_thread.join();
  };
  ChunkedTrace chunked;
  try {
    chunked = read_event_chunks(bytes, limits, simdjson::SIMDJSON_PADDING, [&](EventChunk&& chunk) {
      std::unique_lock lock(mu);
      changed.wait(lock, [&] { return queue.size() < 2 || parse_failed; });
      if (parse_failed) throw std::invalid_argument("");  // the parser's own error is rethrown below
      queue.push_back(std::move(chunk));
      changed.notify_all();
    });
  } catch (...) {
    finish_parsing();
    if (parse_failed) std::rethrow_exception(parse_failed);
    throw;
  }
  finish_parsing();
  if (parse_failed) std::rethrow_exception(parse_failed);
  if (!chunked.has_events) throw std::invalid_argument(fmt::format("{}: no traceEvents; {}", name, kSuggestion));
  // The top-level values kept (bounded): the GPU's name, and opcost's own source and device.
  std::string& kept = chunked.kept;
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
  if (calls.empty() && run.skipped_events > 0)
    throw std::invalid_argument(fmt::format(
        "{}: no valid operator calls: {} events skipped as malformed, the first {}; give a trace whose events have "
        "numeric tid, ts and a non-negative dur",
        name, run.skipped_events, run.first_skipped));
  if (calls.empty())
    throw std::invalid_argument(fmt::format(
        "{}: no operator calls (cpu_op events); profile with activities=[ProfilerActivity.CPU, ...] and export with "
        "export_chrome_trace",
        name));
  run.ops = fold_nested_calls(std::move(calls));
  tie_activities(run);
  return run;
}

}  // namespace opcost
