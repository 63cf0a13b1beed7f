#include "core/trace/trace_bytes.h"

#include <fmt/format.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace opcost {

namespace {
constexpr std::size_t kBlockBytes = std::size_t(1) << 20;  // compressed bytes read at a time
}  // namespace

struct TraceBytes::State {
  std::string name;
  std::FILE* file = nullptr;  // a file, or...
  std::string_view memory;    // ...bytes in memory
  std::vector<unsigned char> block;
  std::size_t block_begin = 0, block_end = 0;  // the raw bytes not yet used
  bool raw_eof = false;
  bool gzip = false, gzip_ended = false, started = false;
  z_stream z{};
  bool z_open = false;

  ~State() {
    if (file) std::fclose(file);
    if (z_open) inflateEnd(&z);
  }

  [[noreturn]] void fail(const std::string& why) const {
    throw std::invalid_argument(
        fmt::format("{}: {}; give a Chrome trace, as torch.profiler's export_chrome_trace writes it", name, why));
  }

  // Refills the raw block when it is used up; false at the input's end.
  bool fill() {
    if (block_begin < block_end) return true;
    if (raw_eof) return false;
    block_begin = block_end = 0;
    if (file) {
      errno = 0;
      block_end = std::fread(block.data(), 1, block.size(), file);
      if (block_end < block.size()) {
        if (std::ferror(file)) fail(fmt::format("cannot read: {}", std::strerror(errno ? errno : EIO)));
        raw_eof = true;
      }
    } else {
      block_end = std::min(block.size(), memory.size());
      std::memcpy(block.data(), memory.data(), block_end);
      memory.remove_prefix(block_end);
      raw_eof = memory.empty();
    }
    return block_begin < block_end;
  }

  void start() {
    started = true;
    fill();
    // Two bytes may straddle a block only for a one-byte file: not gzip then.
    gzip = block_end - block_begin >= 2 && block[block_begin] == 0x1f && block[block_begin + 1] == 0x8b;
    if (!gzip) return;
    if (inflateInit2(&z, 15 + 16) != Z_OK) fail("cannot start gzip decompression (out of memory?)");
    z_open = true;
  }

  std::size_t inflate_into(char* out, std::size_t n) {
    z.next_out = reinterpret_cast<Bytef*>(out);
    z.avail_out = unsigned(std::min<std::size_t>(n, 1u << 30));
    while (z.avail_out > 0 && !gzip_ended) {
      if (!fill()) fail("the gzip stream is cut short (an incomplete file?)");
      z.next_in = block.data() + block_begin;
      z.avail_in = unsigned(block_end - block_begin);
      const int rc = inflate(&z, Z_NO_FLUSH);
      block_begin = block_end - z.avail_in;
      if (rc == Z_STREAM_END) {
        // Another gzip member may follow (as `cat a.gz b.gz`); anything else after the stream
        // is ignored, as gzip and zlib's gzread do.
        if (!fill() || block_end - block_begin < 2 || block[block_begin] != 0x1f || block[block_begin + 1] != 0x8b)
          gzip_ended = true;
        else
          inflateReset(&z);
        continue;
      }
      if (rc == Z_BUF_ERROR && z.avail_in == 0) continue;  // needs more input
      if (rc != Z_OK) fail(fmt::format("not a valid gzip stream ({})", z.msg ? z.msg : "corrupt data"));
    }
    return n - z.avail_out;
  }
};

TraceBytes::TraceBytes(std::unique_ptr<State> state) : s_(std::move(state)) {}
TraceBytes::TraceBytes(TraceBytes&&) noexcept = default;
TraceBytes& TraceBytes::operator=(TraceBytes&&) noexcept = default;
TraceBytes::~TraceBytes() = default;

TraceBytes TraceBytes::open_file(const std::string& path) {
  auto s = std::make_unique<State>();
  s->name = path;
  errno = 0;
  s->file = std::fopen(path.c_str(), "rb");
  if (!s->file)
    throw std::invalid_argument(fmt::format("{}: cannot read: {} (does it exist, and may you read it?)", path,
                                            std::strerror(errno ? errno : ENOENT)));
  s->block.resize(kBlockBytes);
  return TraceBytes(std::move(s));
}

TraceBytes TraceBytes::in_memory(std::string_view bytes, std::string name) {
  auto s = std::make_unique<State>();
  s->name = std::move(name);
  s->memory = bytes;
  s->block.resize(kBlockBytes);
  return TraceBytes(std::move(s));
}

std::size_t TraceBytes::read(char* out, std::size_t n) {
  State& s = *s_;
  if (!s.started) s.start();
  if (n == 0) return 0;
  if (s.gzip) return s.inflate_into(out, n);
  std::size_t got = 0;
  while (got < n && s.fill()) {
    const std::size_t k = std::min(n - got, s.block_end - s.block_begin);
    std::memcpy(out + got, s.block.data() + s.block_begin, k);
    s.block_begin += k;
    got += k;
  }
  return got;
}

const std::string& TraceBytes::name() const { return s_->name; }

std::string_view TraceBytes::head() {
  if (!s_->started) s_->start();
  if (s_->gzip && s_->z.total_in > 0) return {};  // already being decompressed
  return {reinterpret_cast<const char*>(s_->block.data() + s_->block_begin), s_->block_end - s_->block_begin};
}

}  // namespace opcost
