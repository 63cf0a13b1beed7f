#pragma once
// A Chrome trace read back as a TraceRun, so that its kernels, operators and layers make the
// same tables as opcost's own traces: torch.profiler's (`prof.export_chrome_trace(...)`, plain
// or gzip), and the one `opcost trace -o` writes. Layers are the trace's module ranges
// (`with_modules`: "nn.Module: Conv2d_0"), record_function ranges and opcost's "layer" ranges;
// steps are its ProfilerStep#N ranges ("user_annotation", or opcost's "step"). Events stream
// (event_chunks.h) within TraceImportLimits, whatever the file. Torch-free.
#include <string>

#include "core/trace/activities.h"
#include "core/trace/event_chunks.h"
#include "core/trace/trace_bytes.h"

namespace opcost {

// Throws std::invalid_argument naming the input and what is wrong with it (not JSON, not a
// Chrome trace, a limit passed, no valid operator calls) and how to make one that fits. An
// event whose fields are of the wrong type or out of range (a ts that is not a number, a
// negative dur) is skipped and counted in the run (skipped_events, first_skipped).
TraceRun import_chrome_trace(TraceBytes& bytes, const TraceImportLimits& limits = {});
TraceRun import_chrome_trace(const std::string& path, const TraceImportLimits& limits = {});

}  // namespace opcost
