#pragma once
// Which inputs of a model's calls come from the GPU's L2 cache and which from memory, by
// reuse distance. An operator replayed alone in a warm loop finds all its inputs in L2 (if
// they fit), but inside the model a weight was last read a whole step ago, with the step's
// other data in between; an activation its producer has just written is still there. So each
// input is classed by the bytes of distinct data the step touched since that data was last
// touched (an LRU stack distance, the step repeating): more than the cache holds, and the
// replay rotates copies of that input (cold), else it reuses one (warm). Torch-free.
#include <cstdint>
#include <vector>

namespace opcost {

// One tensor a call reads (`arg` >= 0: its schema argument index) or writes (`arg` < 0).
// `address` identifies the data (its first byte); `bytes` is how much of it the call spans.
struct TensorTouch {
  std::uintptr_t address = 0;
  std::uint64_t bytes = 0;
  int arg = -1;
};

// A call's touches, inputs before outputs.
using CallTouches = std::vector<TensorTouch>;

// For each call, the schema argument indices (ascending, each once) of the inputs whose data
// the step touched more than `cache_bytes` of other data ago. An argument with several tensors
// (a list) is cold when most of its bytes are. The step is taken to repeat, so a weight read
// once per step has the whole step's other data between its reads.
std::vector<std::vector<int>> cold_inputs(const std::vector<CallTouches>& calls, std::uint64_t cache_bytes);

}  // namespace opcost
