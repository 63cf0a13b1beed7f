#pragma once
// A traced run as a Chrome trace (JSON Trace Event Format), which Perfetto and chrome://tracing
// open: a host process with a track per thread (steps, nested layer ranges, operator calls),
// a device process with a track per stream (kernels, copies, sets), and a flow arrow from
// each operator call to every device activity it launched. Events stream out one by one, so a
// trace of any size needs no more memory than the run it describes. Torch-free.
#include <functional>
#include <string>
#include <string_view>

#include "core/trace/activities.h"

namespace opcost {

struct ChromeTraceOptions {
  double min_duration_us = 0;  // leave out operator calls and device activities shorter than this
  // Only layers whose name matches this regular expression (ECMAScript, anywhere in the name),
  // their sublayers, and the calls and device activities inside them; "" keeps everything.
  std::string layers;
};

// Writes the run through `write` (called with consecutive pieces of the document). Throws
// std::invalid_argument for a `layers` pattern that is not a regular expression.
void write_chrome_trace(const TraceRun& run, const std::function<void(std::string_view)>& write,
                        const ChromeTraceOptions& options = {});

// Throws std::invalid_argument naming `pattern` when it is not a regular expression.
void check_layer_pattern(const std::string& pattern);

// Writes the run to `path`: gzip-compressed when it ends in .gz. Throws WriteError.
void save_chrome_trace(const TraceRun& run, const std::string& path, const ChromeTraceOptions& options = {});

}  // namespace opcost
