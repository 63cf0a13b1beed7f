#include "core/trace/nvtx.h"

#ifdef OPCOST_HAS_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace opcost {

#ifdef OPCOST_HAS_NVTX
bool nvtx_built() { return true; }
void nvtx_push(const char* name) { nvtxRangePushA(name); }
void nvtx_pop() { nvtxRangePop(); }
#else
bool nvtx_built() { return false; }
void nvtx_push(const char*) {}
void nvtx_pop() {}
#endif

}  // namespace opcost
