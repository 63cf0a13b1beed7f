#pragma once
// A whole text file read at once, or std::invalid_argument naming it and `what` it is
// ("the spec file"). Torch-free.
#include <string>

namespace opcost {

std::string read_text_file(const std::string& path, const std::string& what);

}  // namespace opcost
