#include "core/io/input_file.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>

namespace opcost {

std::string read_text_file(const std::string& path, const std::string& what, std::size_t max_bytes,
                           const std::string& too_large_fix) {
  struct Closer {
    void operator()(std::FILE* f) const {
      if (f != stdin) std::fclose(f);  // read only: nothing to check on closing
    }
  };
  const auto too_large = [&] {
    return std::invalid_argument(fmt::format("{}: {} is larger than {} MiB{}{}", path, what, max_bytes >> 20,
                                             too_large_fix.empty() ? "" : ": ", too_large_fix));
  };
  std::error_code ec;  // a regular file's size says it at once; a pipe is counted as it is read
  if (path != "-" && std::filesystem::is_regular_file(path, ec) && std::filesystem::file_size(path, ec) > max_bytes &&
      !ec)
    throw too_large();
  std::unique_ptr<std::FILE, Closer> f(path == "-" ? stdin : std::fopen(path.c_str(), "rb"));
  if (!f)
    throw std::invalid_argument(fmt::format("{}: cannot open {} (does it exist, and may you read it?)", path, what));
  std::string text;
  char buffer[1 << 16];
  while (true) {
    const std::size_t n = std::fread(buffer, 1, sizeof buffer, f.get());
    if (n > 0) {
      if (text.size() + n > max_bytes) throw too_large();
      text.append(buffer, n);
    }
    if (n < sizeof buffer) break;
  }
  if (std::ferror(f.get())) throw std::invalid_argument(fmt::format("{}: reading {} failed", path, what));
  return text;
}

}  // namespace opcost
