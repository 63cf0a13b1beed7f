#pragma once
// A traced run as a Chrome trace (JSON Trace Event Format), which Perfetto and chrome://tracing
// open: a host process with a track per thread (steps, nested layer ranges, operator calls),
// a device process with a track per stream (kernels, copies, sets), and a flow arrow from
// each operator call to every device activity it launched. Events stream out one by one, so a
// trace of any size needs no more memory than the run it describes. Files: trace_file.h.
// Torch-free.
#include <functional>
#include <string>
#include <string_view>

#include "core/trace/trace_file.h"

namespace opcost {

// Writes what `keep` selects of the run through `write` (called with consecutive pieces of the
// document).
void write_chrome_trace(const TraceRun& run, const TraceSelection& keep,
                        const std::function<void(std::string_view)>& write);

}  // namespace opcost
