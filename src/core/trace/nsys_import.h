#pragma once
// An Nsight Systems SQLite export (`nsys export --type sqlite report.nsys-rep`) read back as a
// TraceRun, giving the same tables as opcost's own traces. Operator calls are the NVTX ranges
// torch.autograd.profiler.emit_nvtx() opens ("aten::conv2d, seq = 5, sizes = [[...]]"), steps
// the "ProfilerStep#N" ranges, and every other NVTX push/pop range is a layer (what
// `opcost trace --nvtx` opens, or the user's own). A kernel is tied to the CUDA runtime call
// with its correlation id, and that call to the outermost operator range around it on its
// thread. Tables and columns follow the export's documented schema (StringIds,
// CUPTI_ACTIVITY_KIND_KERNEL / _RUNTIME / _MEMCPY / _MEMSET, NVTX_EVENTS, TARGET_INFO_GPU).
// Torch-free.
#include <string>
#include <string_view>

#include "core/trace/activities.h"
#include "core/trace/event_chunks.h"

namespace opcost {

// Throws std::invalid_argument naming the file and what it lacks (not SQLite, no kernels, no
// operator ranges) or the limit it passes (a value over max_event_bytes, more than
// max_records), and how to record one that fits.
TraceRun import_nsys_sqlite(const std::string& path, const TraceImportLimits& limits = {});
// The same from an export's bytes in memory (read in place, read only; they must outlive the
// call), `name` naming them in messages: a fuzzer's entry point.
TraceRun import_nsys_sqlite_bytes(std::string_view bytes, const std::string& name,
                                  const TraceImportLimits& limits = {});

}  // namespace opcost
