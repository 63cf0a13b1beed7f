#include "core/io/input_file.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace opcost {

std::string read_text_file(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in)
    throw std::invalid_argument(fmt::format("{}: cannot open {} (does it exist, and may you read it?)", path, what));
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) throw std::invalid_argument(fmt::format("{}: reading {} failed", path, what));
  return text.str();
}

}  // namespace opcost
