#pragma once
// Writing a traced run to a file: which parts a file keeps (the filters), and the format its
// name asks for, Chrome trace JSON (chrome_trace.h) or Perfetto's protobuf (perfetto_trace.h),
// each gzip-compressed when the name ends in .gz. Torch-free.
#include <cstdint>
#include <string>
#include <vector>

#include "core/trace/activities.h"

namespace opcost {

struct TraceFileOptions {
  double min_duration_us = 0;  // leave out operator calls and device activities shorter than this
  // Only layers whose name matches this regular expression (ECMAScript, anywhere in the name),
  // their sublayers, and the calls and device activities inside them; "" keeps everything.
  std::string layers;
};

// What a file keeps of a run, by index; both writers follow it.
struct TraceSelection {
  std::vector<bool> layers, ops, activities;
  // Per call, the kept device activities it launched: a flow arrow to each.
  std::vector<std::vector<std::size_t>> launched;
  int64_t origin_ns = 0;  // the run's earliest time: the file's zero
};
// Throws std::invalid_argument for a `layers` pattern that is not a regular expression.
TraceSelection select_for_file(const TraceRun& run, const TraceFileOptions& options);

// Throws std::invalid_argument naming `pattern` when it is not a regular expression.
void check_layer_pattern(const std::string& pattern);

// True when `path` asks for Perfetto's protobuf format (.pftrace or .perfetto-trace, perhaps .gz).
bool is_perfetto_path(const std::string& path);

// Writes the run to `path` in the format its name asks for. Throws WriteError.
void save_trace(const TraceRun& run, const std::string& path, const TraceFileOptions& options = {});

}  // namespace opcost
