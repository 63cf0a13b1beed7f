#pragma once
// A whole text file read at once, bounded, or std::invalid_argument naming it and `what` it is
// ("the spec file"). Torch-free.
#include <cstddef>
#include <string>

namespace opcost {

// Input files are hostile: one larger than this is refused without reading it all.
inline constexpr std::size_t kMaxInputFileBytes = std::size_t{64} << 20;

// `path` "-" reads standard input. A file (or input) over `max_bytes` is refused in one line
// naming it and the bound, with `too_large_fix` (what to do instead) when given.
std::string read_text_file(const std::string& path, const std::string& what, std::size_t max_bytes = kMaxInputFileBytes,
                           const std::string& too_large_fix = "");

}  // namespace opcost
