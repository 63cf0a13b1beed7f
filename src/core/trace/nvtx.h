#pragma once
// NVTX push/pop ranges, so that an nsys capture of the same program shows opcost's steps and
// layers (opcost trace --nvtx). NVTX v3 is header-only: each call is a no-op until a tool
// (nsys, Nsight Compute) has injected itself into the process. Torch-free.

namespace opcost {

// Whether opcost was built with the NVTX headers (nvtx3/nvToolsExt.h, from the CUDA toolkit or
// torch's nvidia packages); without them the calls below do nothing.
bool nvtx_built();
void nvtx_push(const char* name);
void nvtx_pop();

}  // namespace opcost
