#include "core/io/gzip_file.h"

#include <fmt/format.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>

namespace opcost {

namespace {

std::string zlib_error(void* gz) {
  int code = 0;
  const char* text = gzerror(static_cast<gzFile>(gz), &code);
  if (code == Z_ERRNO) return std::strerror(errno);
  return text && *text ? text : "unknown zlib error";
}

}  // namespace

GzipFile::GzipFile(const std::string& path, int level) : path_(path) {
  gz_ = gzopen(path.c_str(), fmt::format("wb{}", level).c_str());
  if (!gz_) throw WriteError(fmt::format("{}: cannot write: {}", path, std::strerror(errno ? errno : ENOMEM)));
  gzbuffer(static_cast<gzFile>(gz_), 1 << 20);
}

GzipFile::~GzipFile() {
  if (gz_) gzclose(static_cast<gzFile>(gz_));
}

void GzipFile::write(std::string_view text) {
  if (text.empty()) return;
  if (gzwrite(static_cast<gzFile>(gz_), text.data(), unsigned(text.size())) != int(text.size()))
    throw WriteError(fmt::format("{}: write failed: {}", path_, zlib_error(gz_)));
}

void GzipFile::close() {
  if (!gz_) return;
  const int rc = gzclose(static_cast<gzFile>(gz_));
  gz_ = nullptr;
  if (rc != Z_OK)
    throw WriteError(fmt::format("{}: write failed on close: {}", path_,
                                 rc == Z_ERRNO ? std::strerror(errno) : "zlib could not finish the stream"));
}

bool is_gzip_path(const std::string& path) { return path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0; }

}  // namespace opcost
