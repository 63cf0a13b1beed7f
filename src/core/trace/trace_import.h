#pragma once
// `opcost trace --import FILE`: a Chrome trace (torch.profiler's or opcost's) or an nsys
// SQLite export, told apart by the input's first bytes (read once: a pipe works too, for a
// Chrome trace). Both stream or page within TraceImportLimits. Torch-free, and LibTorch-free
// to link: the fuzz targets call these on a file or on bytes in memory.
#include <string>
#include <string_view>

#include "core/trace/activities.h"
#include "core/trace/event_chunks.h"

namespace opcost {

TraceRun import_trace(const std::string& path, const TraceImportLimits& limits = {});
// The same from bytes in memory (plain or gzip JSON, or an SQLite file's image), `name`
// naming them in messages.
TraceRun import_trace_bytes(std::string_view bytes, const std::string& name, const TraceImportLimits& limits = {});

}  // namespace opcost
