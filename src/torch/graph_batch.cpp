// A batch of calls captured into a CUDA graph (at::cuda::CUDAGraph) for the energy loop to
// replay. The capture and its clean-up when it fails are here, apart from the loop (runner.cpp),
// so that the loop's translation unit stays free of CUDA headers. This one includes them but
// calls LibTorch's functions only, never the CUDA runtime's, so it links as the rest does
// (LibTorch's libraries; the runtime is theirs to load).
#include "torch/graph_batch.h"

#include <c10/util/Exception.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>

#include "core/text/text.h"
// Without the CUDA runtime's headers (src/CMakeLists.txt looks for them) a CUDA build has no graphs.
#if defined(OPCOST_TORCH_HAS_CUDA) && !defined(OPCOST_NO_CUDA_HEADERS)
#define OPCOST_GRAPHS 1
#include <ATen/core/CachingHostAllocator.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/core/StreamGuard.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace opcost {

bool energy_loop_replays_graph(std::string_view mode, double gpu_us_per_call, double issue_us_per_call) {
  if (mode != kEnergyGraphsAuto) return false;
  if (!std::isfinite(gpu_us_per_call) || !std::isfinite(issue_us_per_call)) return false;
  return gpu_us_per_call >= kMinGraphGpuUs && issue_us_per_call > gpu_us_per_call;
}

std::size_t graph_batch_calls(double gpu_us_per_call) {
  if (!(gpu_us_per_call > 0) || !std::isfinite(gpu_us_per_call)) return 1;
  const double calls = std::clamp(std::round(kGraphBatchGpuS * 1e6 / gpu_us_per_call), 1.0, double(kMaxGraphCalls));
  return std::size_t(calls);
}

#if defined(OPCOST_GRAPHS)

namespace {

// A library's exception as one short line (LibTorch's carry a backtrace and several lines).
std::string one_line(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  const std::string what = c10_error ? c10_error->what_without_backtrace() : e.what();
  return printable_one_line(user_message(what.substr(0, what.find('\n'))), 160);
}

}  // namespace

struct GraphBatch::Impl {
  // CUDAGraph's destructor releases the graph's memory pool only once capture_end() got that
  // far (capture_ended_, protected): a failed capture's clean-up must know which it was.
  struct Graph : at::cuda::CUDAGraph {
    bool owns_pool() const { return capture_ended_; }
  };
  Graph graph;
  c10::DeviceIndex device = 0;
  // A pool of its own (graph_pool_handle gives a fresh id): the clean-up of a failed capture
  // names it, and nothing else is ever allocated from it.
  c10::MempoolId_t pool = at::cuda::graph_pool_handle();

  // After a failed capture: the side stream out of capture, the allocators no longer routing
  // allocations to the pool, and the pool released (unless the graph's destructor will). Each
  // step may find its work done already (the failure came after it): its refusal then is
  // expected, and ignored. CUDA's error state is clean: LibTorch's checks clear the last error
  // when they throw, and a capture violation is not a sticky error.
  void abandon_capture(const c10::Stream& side, bool capture_end_tried) {
    if (!capture_end_tried) {
      try {
        const c10::StreamGuard on_side(side);
        graph.capture_end();  // ends the stream's capture; throws for an invalidated one
      } catch (...) {}
    }
    try {
      c10::cuda::CUDACachingAllocator::endAllocateToPool(device, pool);
    } catch (...) {}
    try {
      at::getHostAllocator(at::kCUDA)->end_allocate_to_pool(pool);
    } catch (...) {}
    if (!graph.owns_pool()) {
      try {
        c10::cuda::CUDACachingAllocator::releasePool(device, pool);
      } catch (...) {}
      try {
        at::getHostAllocator(at::kCUDA)->release_pool(pool);
      } catch (...) {}
    }
  }
};

std::unique_ptr<GraphBatch> GraphBatch::capture(PreparedCall& call, std::size_t calls, std::string& why) {
  auto impl = std::make_unique<Impl>();
  impl->device = c10::cuda::current_device();
  const c10::Stream side = c10::cuda::getStreamFromPool(false, impl->device).unwrap();
  bool began = false, ending = false;
  try {
    // Capture needs a stream other than the default; the calls' libraries (cuBLAS's workspace,
    // cuDNN's handles) set up their state for that stream on its first calls, which must not
    // fall inside the capture. The inputs are ready: everything queued before is done.
    c10::cuda::device_synchronize();
    {
      const c10::StreamGuard on_side(side);
      for (int i = 0; i < 3; ++i) call.call();
    }
    c10::cuda::device_synchronize();
    const c10::StreamGuard on_side(side);
    began = true;
    // Thread-local: another thread's CUDA calls (a Python thread's) neither break this capture
    // nor are refused during it.
    impl->graph.capture_begin(impl->pool, cudaStreamCaptureModeThreadLocal);
    for (std::size_t i = 0; i < calls; ++i) call.call();
    ending = true;
    impl->graph.capture_end();
  } catch (const std::exception& e) {
    why = one_line(e);
    if (began) impl->abandon_capture(side, ending);
    return nullptr;
  }
  return std::unique_ptr<GraphBatch>(new GraphBatch(std::move(impl), call, calls));
}

GraphBatch::~GraphBatch() {
  // A loop that ended in an exception may leave replays queued: the graph outlives them.
  try {
    c10::cuda::device_synchronize();
  } catch (...) {}
}

void GraphBatch::replay() { impl_->graph.replay(); }

void GraphBatch::release() {
  c10::cuda::device_synchronize();
  impl_->graph.reset();  // the executable graph destroyed, its pool released to the allocator
  // The call still holds the last captured call's output, a block of that pool: an eager call
  // replaces it, and the pool, empty, is freed whenever the allocator next needs memory.
  call_->call();
}

#else  // a LibTorch build without CUDA (or without its runtime's headers): nothing to capture

struct GraphBatch::Impl {};

std::unique_ptr<GraphBatch> GraphBatch::capture(PreparedCall&, std::size_t, std::string& why) {
#if defined(OPCOST_TORCH_HAS_CUDA)
  why = "opcost was built without the CUDA runtime's headers (cuda_runtime_api.h)";
#else
  why = "this LibTorch build has no CUDA";
#endif
  return nullptr;
}

GraphBatch::~GraphBatch() = default;
void GraphBatch::replay() {}
void GraphBatch::release() {}

#endif

GraphBatch::GraphBatch(std::unique_ptr<Impl> impl, PreparedCall& call, std::size_t calls)
    : impl_(std::move(impl)), call_(&call), calls_(calls) {}

}  // namespace opcost
