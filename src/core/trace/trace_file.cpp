#include "core/trace/trace_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <regex>
#include <stdexcept>

#include "core/io/atomic_output_file.h"
#include "core/io/gzip_file.h"
#include "core/io/output_file.h"
#include "core/trace/chrome_trace.h"
#include "core/trace/perfetto_trace.h"

namespace opcost {

namespace {

std::regex layer_regex(const std::string& pattern) {
  try {
    return std::regex(pattern);
  } catch (const std::regex_error& e) {
    throw std::invalid_argument(fmt::format("--layers '{}': not a regular expression ({})", pattern, e.what()));
  }
}

bool ends_with(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

void check_layer_pattern(const std::string& pattern) { layer_regex(pattern); }

TraceSelection select_for_file(const TraceRun& run, const TraceFileOptions& options) {
  TraceSelection s;
  s.origin_ns = earliest_ns(run);
  // A --layers pattern keeps the layers it matches and everything under them.
  s.layers.assign(run.layers.size(), options.layers.empty());
  if (!options.layers.empty()) {
    const std::regex re = layer_regex(options.layers);
    for (std::size_t i = 0; i < run.layers.size(); ++i)
      for (int l = int(i); l >= 0 && !s.layers[i]; l = run.layers[std::size_t(l)].parent)
        s.layers[i] = std::regex_search(run.layers[std::size_t(l)].name, re);
  }
  auto in_kept_layer = [&](int op) {
    if (options.layers.empty()) return true;
    const int l = run.ops[std::size_t(op)].layer;
    return l >= 0 && s.layers[std::size_t(l)];
  };
  const auto min_ns = int64_t(options.min_duration_us * 1000.0);
  s.activities.assign(run.device_activities.size(), false);
  s.launched.resize(run.ops.size());
  for (std::size_t i = 0; i < run.device_activities.size(); ++i) {
    const auto& a = run.device_activities[i];
    if (a.duration_ns() < min_ns) continue;
    if (a.op >= 0 ? !in_kept_layer(a.op) : !options.layers.empty()) continue;
    s.activities[i] = true;
    if (a.op >= 0) s.launched[std::size_t(a.op)].push_back(i);
  }
  // A call shorter than the minimum stays when one of its kernels does.
  s.ops.assign(run.ops.size(), false);
  for (std::size_t i = 0; i < run.ops.size(); ++i)
    s.ops[i] = in_kept_layer(int(i)) && (run.ops[i].duration_ns() >= min_ns || !s.launched[i].empty());
  return s;
}

bool is_perfetto_path(const std::string& path) {
  const std::string p = ends_with(path, ".gz") ? path.substr(0, path.size() - 3) : path;
  return ends_with(p, ".pftrace") || ends_with(p, ".perfetto-trace");
}

void save_trace(const TraceRun& run, const std::string& path, const TraceFileOptions& options) {
  const TraceSelection selection = select_for_file(run, options);
  auto write_to = [&](auto& file) {
    const std::function<void(std::string_view)> write = [&](std::string_view s) { file.write(s); };
    if (is_perfetto_path(path))
      write_perfetto_trace(run, selection, write);
    else
      write_chrome_trace(run, selection, write);
    file.close();
  };
  // Written under a temporary name and renamed when complete: a failed or interrupted write
  // leaves the file that was there (perhaps the trace just imported) as it was.
  AtomicOutputFile out(path);
  if (is_gzip_path(path)) {
    try {
      GzipFile f(out.temp_path());
      write_to(f);
    } catch (const WriteError& e) {  // named by the file the user asked for, not the temporary one
      std::string why = e.what();
      if (const auto at = why.find(out.temp_path()); at != std::string::npos)
        why.replace(at, out.temp_path().size(), path);
      throw WriteError(why);
    }
  } else {
    write_to(out.file());
  }
  out.commit();
}

}  // namespace opcost
