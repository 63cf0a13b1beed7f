#include "core/trace/chrome_import.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <zlib.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace opcost {

namespace {

// The file's text; zlib reads a plain file through as it is, and a .gz one decompressed.
std::string read_text(const std::string& path) {
  gzFile gz = gzopen(path.c_str(), "rb");
  if (!gz) throw std::invalid_argument(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
  std::string text;
  char buf[1 << 16];
  int n;
  while ((n = gzread(gz, buf, sizeof buf)) > 0) text.append(buf, std::size_t(n));
  int code = 0;
  const std::string why = n < 0 ? gzerror(gz, &code) : "";
  gzclose(gz);
  if (n < 0) throw std::invalid_argument(fmt::format("{}: cannot read: {}", path, why));
  return text;
}

int64_t ns_of(const nlohmann::json& us) { return int64_t(std::llround(us.get<double>() * 1000.0)); }

// Chrome traces name threads and processes by numbers or, in a few of torch.profiler's
// events, by strings ("Spans"): those are not the run's.
bool numeric(const nlohmann::json& e, const char* key) { return e.contains(key) && e[key].is_number_integer(); }

std::string dims_text(const nlohmann::json& dims) {
  std::string out;
  for (const auto& d : dims) {
    if (!out.empty()) out += ", ";
    out += d.is_array() ? fmt::format("[{}]", fmt::join(d.get<std::vector<int64_t>>(), ", ")) : "[]";
  }
  return out;
}

const char* device_kind_of(const std::string& cat) {
  if (cat == "kernel") return "kernel";
  if (cat == "gpu_memcpy") return "memcpy";
  if (cat == "gpu_memset") return "memset";
  return nullptr;
}

}  // namespace

TraceRun import_chrome_trace(const std::string& path) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(read_text(path));
  } catch (const nlohmann::json::parse_error& e) {
    throw std::invalid_argument(fmt::format(
        "{}: not JSON ({}); give a Chrome trace, as torch.profiler's export_chrome_trace writes it", path, e.what()));
  }
  const nlohmann::json* events = doc.is_object() && doc.contains("traceEvents") ? &doc["traceEvents"]
                                 : doc.is_array()                               ? &doc
                                                                                : nullptr;
  if (!events || !events->is_array())
    throw std::invalid_argument(fmt::format(
        "{}: no traceEvents; give a Chrome trace, as torch.profiler's export_chrome_trace writes it", path));
  TraceRun run;
  run.source = "torch.profiler export";
  if (doc.is_object() && doc.contains("deviceProperties") && doc["deviceProperties"].is_array() &&
      !doc["deviceProperties"].empty())
    run.device = doc["deviceProperties"][0].value("name", "");
  std::vector<OpActivity> calls;
  for (const auto& e : *events) {
    if (!e.is_object() || e.value("ph", "") != "X" || !numeric(e, "tid") || !e.contains("ts") || !e.contains("dur"))
      continue;
    const std::string cat = e.value("cat", ""), name = e.value("name", "");
    const nlohmann::json args = e.value("args", nlohmann::json::object());
    const int64_t start = ns_of(e["ts"]), end = start + ns_of(e["dur"]);
    const auto thread = e["tid"].get<uint64_t>();
    if (cat == "cpu_op") {
      OpActivity op;
      op.name = name;
      op.shapes = args.contains("Input Dims") ? dims_text(args["Input Dims"]) : "";
      op.thread = thread;
      op.start_ns = start;
      op.end_ns = end;
      op.correlations.push_back(args.value("External id", uint64_t(0)));
      const int64_t seq = args.value("Sequence number", int64_t(-1));
      if (seq >= 0) {
        if (args.value("Fwd thread id", int64_t(0)) > 0)
          op.backward_of = seq;
        else
          op.forward_sequence.push_back(seq);
      }
      calls.push_back(std::move(op));
    } else if (const char* kind = device_kind_of(cat)) {
      run.device_activities.push_back(DeviceActivity{name, kind, args.value("device", 0),
                                                     args.value("stream", int64_t(0)), start, end,
                                                     args.value("External id", uint64_t(0))});
    } else if (cat == "cuda_runtime" && name.find("Synchronize") != std::string::npos) {
      run.synchronizations.push_back(HostRange{name, thread, start, end});  // for activities without ids
    } else if (cat == "user_annotation" && name.rfind("ProfilerStep#", 0) == 0) {
      run.steps.push_back(HostRange{name, thread, start, end});
    } else if (cat == "user_annotation") {
      run.layers.push_back(HostRange{name, thread, start, end});
    } else if (cat == "python_function" && name.rfind("nn.Module: ", 0) == 0) {
      run.layers.push_back(HostRange{name.substr(11), thread, start, end});
    }
  }
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
