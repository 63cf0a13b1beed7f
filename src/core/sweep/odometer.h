#pragma once
// The cartesian product's counter, shared by grids and model lists: positions into each list,
// the last moving fastest. Torch-free.
#include <cstddef>
#include <vector>

namespace opcost {

// Moves `pos` to the next combination of lists of `sizes`; false once every one was visited.
inline bool next_combination(std::vector<std::size_t>& pos, const std::vector<std::size_t>& sizes) {
  for (std::size_t a = pos.size(); a-- > 0;) {
    if (++pos[a] < sizes[a]) return true;
    pos[a] = 0;
  }
  return false;
}

}  // namespace opcost
