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

#include "core/trace/activities.h"

namespace opcost {

// Throws std::invalid_argument naming the file and what it lacks (not SQLite, no kernels, no
// operator ranges), and how to record one that fits.
TraceRun import_nsys_sqlite(const std::string& path);

}  // namespace opcost
