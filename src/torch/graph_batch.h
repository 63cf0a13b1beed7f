#pragma once
// The energy loop's batch captured once into a CUDA graph and replayed. A call whose host issue
// time exceeds its GPU time leaves the GPU idle between kernels when issued one by one: the
// energy per call then follows the host's pace (3-6% from window to window in the H100 conv2d
// sweep) and is mostly gap power. Replayed from a graph, the batch runs at the GPU's own pace.
// Torch-free header: the CUDA parts live in graph_batch.cpp (a build without CUDA has none).
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "torch/replay.h"

namespace opcost {

// MeasureConfig::energy_graphs's values (the options registry checks them): "auto" (graphs for
// host-bound calls on CUDA) or "off".
inline constexpr std::string_view kEnergyGraphsAuto = "auto";
inline constexpr std::string_view kEnergyGraphsOff = "off";

// Whether the energy loop replays a graph of its batch: graphs on ("auto"), a call the GPU
// waits for (issue time per call above its GPU time: two batches in flight cannot keep the GPU
// busy then), and one that does GPU work (at least kMinGraphGpuUs per call: below a kernel
// launch's GPU time a call may launch nothing, and an empty graph measures nothing).
inline constexpr double kMinGraphGpuUs = 0.5;
bool energy_loop_replays_graph(std::string_view mode, double gpu_us_per_call, double issue_us_per_call);

// The calls one graph holds: about kGraphBatchGpuS of GPU time (the eager loop's batch length,
// so the counter's windows see as many completions), at least 1, at most kMaxGraphCalls (its
// capture issues them all once, and a graph's instantiation grows with its nodes).
inline constexpr double kGraphBatchGpuS = 0.002;
inline constexpr std::size_t kMaxGraphCalls = 2000;
std::size_t graph_batch_calls(double gpu_us_per_call);

// `calls` calls of one PreparedCall captured into a CUDA graph (cold-cache rotation captured as
// it runs: the graph replays the same sequence of input sets).
class GraphBatch {
 public:
  // Captures on a side stream of the current CUDA device, after three calls there (libraries
  // set up their per-stream state before capture, as PyTorch requires), in a memory pool of its
  // own. nullptr with `why` set (one line) when the build has no CUDA or the call cannot be
  // captured (it synchronises, copies to the host, is not capturable): the capture is ended,
  // its pool released and CUDA's error state cleared, so the caller goes on eagerly.
  static std::unique_ptr<GraphBatch> capture(PreparedCall& call, std::size_t calls, std::string& why);
  // Waits for the device, destroys the graph and releases its memory pool. Call release() first
  // to free the pool's last block too.
  ~GraphBatch();
  GraphBatch(const GraphBatch&) = delete;
  GraphBatch& operator=(const GraphBatch&) = delete;

  // Enqueues the batch on the current stream (the energy loop's events bracket it).
  void replay();
  std::size_t calls() const { return calls_; }
  // After the loop: the graph destroyed and the call run once eagerly, so that the output it
  // still holds (allocated in the graph's pool) is freed and the pool's memory can return to the
  // device (the caching allocator frees a released pool's blocks when it needs the memory).
  void release();

 private:
  struct Impl;
  GraphBatch(std::unique_ptr<Impl> impl, PreparedCall& call, std::size_t calls);
  std::unique_ptr<Impl> impl_;
  PreparedCall* call_;
  std::size_t calls_;
};

}  // namespace opcost
