#include "core/trace/chrome_import.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
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

#include "core/trace/event_chunks.h"

namespace opcost {

namespace {

// One trace event's fields that the run needs. String views point into the parser's buffers,
// valid while the document is.
struct EventFields {
  std::string_view ph, cat, name;
  std::optional<uint64_t> thread;  // a number; some of torch.profiler's events name it by a string
  std::optional<double> ts_us, dur_us;
  uint64_t external_id = 0;
  int64_t sequence = -1, forward_thread = 0, stream = 0;
  int device = 0;
  std::string dims;  // "Input Dims" as text
  bool has_dims = false;
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

// A value of another type than expected leaves the field as it was: an odd event is skipped,
// not the trace refused.
template <typename T, typename Field>
void set_if(simdjson::simdjson_result<T> value, Field& field) {
  T v;
  if (std::move(value).get(v) == simdjson::SUCCESS) field = v;
}

EventFields read_event(simdjson::ondemand::object event) {
  EventFields e;
  for (auto field : event) {
    const std::string_view key = field.unescaped_key();
    auto value = field.value();
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
      if (value.get_uint64().get(t) == simdjson::SUCCESS) e.thread = t;
    } else if (key == "ts") {
      set_if(value.get_double(), e.ts_us);
    } else if (key == "dur") {
      set_if(value.get_double(), e.dur_us);
    } else if (key == "args") {
      simdjson::ondemand::object args;
      if (value.get_object().get(args) != simdjson::SUCCESS) continue;
      for (auto arg : args) {
        const std::string_view k = arg.unescaped_key();
        auto v = arg.value();
        if (k == "External id") {
          set_if(v.get_uint64(), e.external_id);
        } else if (k == "Sequence number") {
          set_if(v.get_int64(), e.sequence);
        } else if (k == "Fwd thread id") {
          set_if(v.get_int64(), e.forward_thread);
        } else if (k == "device") {
          int64_t d = 0;
          if (v.get_int64().get(d) == simdjson::SUCCESS) e.device = int(d);
        } else if (k == "stream") {
          set_if(v.get_int64(), e.stream);
        } else if (k == "Input Dims") {
          simdjson::ondemand::array dims;
          if (v.get_array().get(dims) == simdjson::SUCCESS) {
            e.dims = dims_text(dims);
            e.has_dims = true;
          }
        }
      }
    }
  }
  return e;
}

int64_t ns_of(double us) { return int64_t(std::llround(us * 1000.0)); }

const char* device_kind_of(std::string_view cat) {
  if (cat == "kernel") return "kernel";
  if (cat == "gpu_memcpy") return "memcpy";
  if (cat == "gpu_memset") return "memset";
  return nullptr;
}

}  // namespace

TraceRun import_chrome_trace(const std::string& path) {
  TraceRun run;
  run.source = "torch.profiler export";
  std::vector<OpActivity> calls;
  auto add_event = [&](const EventFields& e) {
    if (e.ph != "X" || !e.thread || !e.ts_us || !e.dur_us) return;
    const int64_t start = ns_of(*e.ts_us), end = start + ns_of(*e.dur_us);
    const uint64_t thread = *e.thread;
    const std::string_view name = e.name;
    if (e.cat == "cpu_op") {
      OpActivity op;
      op.name = name;
      op.shapes = e.dims;
      op.thread = thread;
      op.start_ns = start;
      op.end_ns = end;
      op.correlations.push_back(e.external_id);
      if (e.sequence >= 0) {
        if (e.forward_thread > 0)
          op.backward_of = e.sequence;
        else
          op.forward_sequence.push_back(e.sequence);
      }
      calls.push_back(std::move(op));
    } else if (const char* kind = device_kind_of(e.cat)) {
      run.device_activities.push_back(
          DeviceActivity{std::string(name), kind, e.device, e.stream, start, end, e.external_id});
    } else if (e.cat == "cuda_runtime" && name.find("Synchronize") != std::string_view::npos) {
      run.synchronizations.push_back(HostRange{std::string(name), thread, start, end});  // for activities without ids
    } else if (e.cat == "user_annotation" && name.rfind("ProfilerStep#", 0) == 0) {
      run.steps.push_back(HostRange{std::string(name), thread, start, end});
    } else if (e.cat == "user_annotation") {
      run.layers.push_back(HostRange{std::string(name), thread, start, end});
    } else if (e.cat == "python_function" && name.rfind("nn.Module: ", 0) == 0) {
      run.layers.push_back(HostRange{std::string(name.substr(11)), thread, start, end});
    }
  };
  // Events are parsed a chunk at a time (event_chunks.h), with one parser: memory holds a
  // chunk and its indexes, not the document.
  constexpr std::size_t kChunkBytes = std::size_t(8) << 20;
  simdjson::ondemand::parser parser;
  auto parse = [&](const std::string& json, auto&& body) {
    try {
      simdjson::ondemand::document doc =
          parser.iterate(simdjson::padded_string_view(json.data(), json.size(), json.capacity()));
      body(doc);
    } catch (const simdjson::simdjson_error& e) {
      throw std::invalid_argument(fmt::format(
          "{}: not JSON ({}); give a Chrome trace, as torch.profiler's export_chrome_trace writes it", path, e.what()));
    }
  };
  // The scan (this thread) and the parse (a worker) overlap: chunks pass through a queue two
  // deep, so memory holds at most three chunks.
  std::mutex mu;
  std::condition_variable changed;
  std::deque<std::string> queue;
  bool scanned = false;
  std::exception_ptr parse_failed;
  std::thread parser_thread([&] {
    for (;;) {
      std::string chunk;
      {
        std::unique_lock lock(mu);
        changed.wait(lock, [&] { return !queue.empty() || scanned; });
        if (queue.empty()) return;
        chunk = std::move(queue.front());
        queue.pop_front();
      }
      changed.notify_all();
      try {
        parse(chunk, [&](simdjson::ondemand::document& events) {
          for (auto event : events.get_array()) {
            simdjson::ondemand::object o;
            if (event.get_object().get(o) == simdjson::SUCCESS) add_event(read_event(o));
          }
        });
      } catch (...) {
        std::lock_guard lock(mu);
        parse_failed = std::current_exception();
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
    chunked = read_event_chunks(path, kChunkBytes, simdjson::SIMDJSON_PADDING, [&](std::string&& chunk) {
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
  const bool saw_events = chunked.has_events;
  std::string& rest = chunked.rest;  // the document without its events: deviceProperties, ...
  rest.reserve(rest.size() + simdjson::SIMDJSON_PADDING);
  if (saw_events && !rest.empty())
    parse(rest, [&](simdjson::ondemand::document& doc) {
      if (doc.type() != simdjson::ondemand::json_type::object) return;
      for (auto field : doc.get_object()) {
        if (field.unescaped_key().value() != "deviceProperties") continue;
        simdjson::ondemand::array devices;
        if (field.value().get_array().get(devices) != simdjson::SUCCESS) continue;
        for (auto d : devices) {
          std::string_view gpu;
          if (run.device.empty() && d["name"].get_string().get(gpu) == simdjson::SUCCESS) run.device = gpu;
        }
      }
    });
  if (!saw_events)
    throw std::invalid_argument(fmt::format(
        "{}: no traceEvents; give a Chrome trace, as torch.profiler's export_chrome_trace writes it", path));
  if (calls.empty())
    throw std::invalid_argument(fmt::format(
        "{}: no operator calls (cpu_op events); profile with activities=[ProfilerActivity.CPU, ...] and export with "
        "export_chrome_trace",
        path));
  run.ops = fold_nested_calls(std::move(calls));
  tie_activities(run);
  return run;
}

}  // namespace opcost
