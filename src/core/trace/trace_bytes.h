#pragma once
// A trace document's bytes, read a block at a time from a file (a pipe or /dev/stdin too) or
// from memory, and gzip-decompressed as they stream when they begin with gzip's magic bytes
// (whatever the name says). Nothing is held but one compressed block: a gzip bomb streams like
// any other file, and the scanner behind it (event_chunks.h) decides what is kept. Torch-free.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace opcost {

class TraceBytes {
 public:
  // Throws std::invalid_argument naming `path` when it cannot be opened.
  static TraceBytes open_file(const std::string& path);
  // `bytes` must outlive the reader; `name` is what messages call it ("<memory>").
  static TraceBytes in_memory(std::string_view bytes, std::string name);
  TraceBytes(TraceBytes&&) noexcept;
  TraceBytes& operator=(TraceBytes&&) noexcept;
  ~TraceBytes();

  // Up to `n` bytes of the (decompressed) document; 0 at its end. Throws std::invalid_argument
  // naming the input when it cannot be read or its gzip stream is corrupt or cut short.
  std::size_t read(char* out, std::size_t n);
  const std::string& name() const;
  // The input's first bytes as they are (up to a block, compressed or not), without using them
  // up: what tells an SQLite file from a trace on a pipe too.
  std::string_view head();

 private:
  struct State;
  explicit TraceBytes(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
};

}  // namespace opcost
