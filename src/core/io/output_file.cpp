#include "core/io/output_file.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

namespace opcost {

OutputFile::OutputFile(const std::string& path, const std::string& name) {
  if (path.empty() || path == "-") {
    f_ = stdout;
    is_stdout_ = true;
    name_ = "standard output";
    return;
  }
  name_ = name.empty() ? path : name;
  f_ = std::fopen(path.c_str(), "wb");
  if (!f_) fail("cannot create the file", errno);
}

OutputFile::~OutputFile() {
  if (f_ && !is_stdout_) std::fclose(f_);
}

void OutputFile::fail(const char* what, int err) const {
  throw WriteError(fmt::format("{}: {}: {}", name_, what, err ? std::strerror(err) : "unknown error"));
}

void OutputFile::write(std::string_view text) {
  if (!f_) throw WriteError(fmt::format("{}: written after it was closed", name_));
  errno = 0;
  if (std::fwrite(text.data(), 1, text.size(), f_) != text.size()) fail("cannot write", errno);
}

void OutputFile::close() {
  if (!f_) return;
  std::FILE* f = f_;
  f_ = nullptr;
  errno = 0;
  const bool flushed = std::fflush(f) == 0 && !std::ferror(f);
  const int flush_errno = errno;
  if (is_stdout_) {
    if (!flushed) fail("cannot write", flush_errno);
    return;
  }
  errno = 0;
  const bool closed = std::fclose(f) == 0;
  if (!flushed) fail("cannot write", flush_errno);
  if (!closed) fail("cannot close (the data may not have reached the disk)", errno);
}

void write_file(const std::string& path, std::string_view text) {
  OutputFile out(path);
  out.write(text);
  out.close();
}

void check_stdout() {
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    const int err = errno;
    std::clearerr(stdout);
    throw WriteError(
        fmt::format("standard output: cannot write: {}", err ? std::strerror(err) : "an earlier write failed"));
  }
}

}  // namespace opcost
