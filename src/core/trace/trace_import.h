#pragma once
// `opcost trace --import FILE`: a torch.profiler Chrome trace or an nsys SQLite export, told
// apart by the file's first bytes. Torch-free.
#include <string>

#include "core/trace/activities.h"

namespace opcost {

TraceRun import_trace(const std::string& path);

}  // namespace opcost
