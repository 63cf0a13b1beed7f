#include "core/inventory/cache_reuse.h"

#include <map>
#include <unordered_set>

namespace opcost {

namespace {

// Whether the data at `address` was touched more than `cache_bytes` of other data ago, looking
// back from just before call `from` of the step laid out twice (so that a call's previous
// touch may lie in the step before). A call's touches count as one moment: the data it reads
// and writes besides `address` come after that touch as much as before. Stops as soon as the
// answer is known: a large model's walks end after a few calls.
bool beyond_cache(const std::vector<CallTouches>& calls, std::size_t from, std::uintptr_t address,
                  std::uint64_t cache_bytes) {
  const std::size_t n = calls.size();
  std::unordered_set<std::uintptr_t> seen;
  std::uint64_t between = 0;
  for (std::size_t k = from; k-- > 0;) {
    const CallTouches& call = calls[k % n];
    for (const TensorTouch& t : call)
      if (t.address == address) return false;
    for (const TensorTouch& t : call)
      if (seen.insert(t.address).second && (between += t.bytes) > cache_bytes) return true;
  }
  return false;  // never touched before: nothing to have evicted it
}

}  // namespace

std::vector<std::vector<int>> cold_inputs(const std::vector<CallTouches>& calls, std::uint64_t cache_bytes) {
  std::vector<std::vector<int>> cold(calls.size());
  const std::size_t n = calls.size();
  // A step whose distinct data fits the cache has nothing cold; this also spares a small model
  // the walks back over a whole step for every input.
  std::unordered_set<std::uintptr_t> step_data;
  std::uint64_t step_bytes = 0;
  for (const CallTouches& call : calls)
    for (const TensorTouch& t : call)
      if (step_data.insert(t.address).second) step_bytes += t.bytes;
  if (step_bytes <= cache_bytes) return cold;
  for (std::size_t c = 0; c < n; ++c) {
    std::map<int, std::pair<std::uint64_t, std::uint64_t>> bytes;  // arg -> (cold, all)
    for (const TensorTouch& t : calls[c]) {
      if (t.arg < 0 || t.bytes == 0) continue;
      auto& [cold_bytes, all] = bytes[t.arg];
      all += t.bytes;
      if (beyond_cache(calls, n + c, t.address, cache_bytes)) cold_bytes += t.bytes;
    }
    for (const auto& [arg, b] : bytes)
      if (2 * b.first > b.second) cold[c].push_back(arg);
  }
  return cold;
}

}  // namespace opcost
