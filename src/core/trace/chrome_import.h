#pragma once
// A torch.profiler Chrome trace (`prof.export_chrome_trace(...)`, plain or gzip) read back as
// a TraceRun, so that its kernels, operators and layers make the same tables as opcost's own
// traces. Layers are the trace's module ranges (`with_modules`: "nn.Module: Conv2d_0") and
// record_function ranges; steps are its ProfilerStep#N ranges. Torch-free.
#include <string>

#include "core/trace/activities.h"

namespace opcost {

// Throws std::invalid_argument naming the file and what is wrong with it (not JSON, not a
// Chrome trace, no operator calls) and how to make one that fits.
TraceRun import_chrome_trace(const std::string& path);

}  // namespace opcost
