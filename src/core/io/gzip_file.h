#pragma once
// A gzip-compressed file, written through zlib, with every write and the close checked (as
// OutputFile): a trace of hundreds of megabytes is written compressed as it streams out.
// Torch-free.
#include <string>
#include <string_view>

#include "core/io/output_file.h"

namespace opcost {

class GzipFile {
 public:
  explicit GzipFile(const std::string& path, int level = 6);
  ~GzipFile();  // closes without throwing when close() was not called (an error path)
  GzipFile(const GzipFile&) = delete;
  GzipFile& operator=(const GzipFile&) = delete;

  void write(std::string_view text);  // throws WriteError naming the file
  void close();

 private:
  void* gz_ = nullptr;  // gzFile
  std::string path_;
};

// True when `path` names a gzip file by its extension (.gz).
bool is_gzip_path(const std::string& path);

}  // namespace opcost
