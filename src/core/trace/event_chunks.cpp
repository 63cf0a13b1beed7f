#include "core/trace/event_chunks.h"

#include <fmt/format.h>
#include <zlib.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace opcost {

namespace {

// The bytes the scan stops at outside strings; everything else (numbers, spaces, commas,
// literals) it skips in a tight loop.
constexpr auto kStructural = [] {
  std::array<bool, 256> t{};
  for (unsigned char c : {'"', ':', '{', '}', '[', ']'}) t[c] = true;
  return t;
}();

// The scan's state across blocks: nesting, strings, and where the events array is.
class Scanner {
 public:
  Scanner(std::size_t chunk_bytes, std::size_t padding, const std::function<void(std::string&&)>& on_chunk)
      : chunk_bytes_(chunk_bytes), padding_(padding), on_chunk_(on_chunk) {
    start_chunk();
  }

  void feed(const char* p, std::size_t n) {
    std::size_t i = 0, kept_from = 0;  // kept_from: where the bytes not yet copied begin
    auto keep = [&](std::size_t to) {  // copies [kept_from, to) where it belongs
      if (to <= kept_from) return;
      if (in_event_)
        chunk_.append(p + kept_from, to - kept_from);
      else if (!inside_events())
        out_.rest.append(p + kept_from, to - kept_from);
      kept_from = to;
    };
    while (i < n) {
      if (in_string_) {  // to the closing quote, past escaped ones
        const void* q = std::memchr(p + i, '"', n - i);
        const std::size_t end = q ? std::size_t(static_cast<const char*>(q) - p) : n;
        // The quote is escaped when an odd run of backslashes ends just before it; a run that
        // reaches back to the block's start continues the previous block's.
        std::size_t run = 0;
        while (end - run > i && p[end - run - 1] == '\\') ++run;
        const bool odd = (run + (end - run == i ? pending_backslashes_ : 0)) % 2 == 1;
        if (key_capture_) key_.append(p + i, end - i);
        if (end == n) {  // the string goes on in the next block
          pending_backslashes_ = run == end - i ? pending_backslashes_ + run : run;
          i = n;
          break;
        }
        pending_backslashes_ = 0;
        i = end + 1;
        if (odd) {
          if (key_capture_) key_ += '"';
          continue;
        }
        in_string_ = false;
        continue;
      }
      if (!kStructural[static_cast<unsigned char>(p[i])]) {  // digits, spaces, commas, letters
        ++i;
        while (i < n && !kStructural[static_cast<unsigned char>(p[i])]) ++i;
        if (inside_events() && !in_event_) kept_from = i;
        continue;
      }
      const char c = p[i];
      switch (c) {
        case '"':
          in_string_ = true;
          pending_backslashes_ = 0;
          key_capture_ = depth_ == 1 && !root_is_array_;  // a top-level key, perhaps "traceEvents"
          if (key_capture_) key_.clear();
          break;
        case ':':
          if (depth_ == 1) last_key_ = key_;
          break;
        case '{':
        case '[':
          if (depth_ == 0 && c == '[') {  // a bare array of events
            root_is_array_ = true;
            events_depth_ = 1;
            out_.has_events = true;
            keep(i);
            out_.rest += "[]";
            kept_from = i + 1;
          } else if (depth_ == 1 && c == '[' && !root_is_array_ && last_key_ == "traceEvents" && events_depth_ < 0) {
            events_depth_ = 2;
            out_.has_events = true;
            keep(i);
            out_.rest += "[]";
            kept_from = i + 1;
          } else if (depth_ == events_depth_ && !in_event_) {  // an event begins
            keep(i);
            in_event_ = true;
            if (events_in_chunk_++) chunk_ += ',';
          }
          ++depth_;
          break;
        case '}':
        case ']':
          if (--depth_ < 0) throw std::invalid_argument("unbalanced brackets");
          if (in_event_ && depth_ == events_depth_) {  // the event ends here
            keep(i + 1);
            in_event_ = false;
            if (chunk_.size() >= chunk_bytes_) flush();
          } else if (events_depth_ > 0 && depth_ == events_depth_ - 1) {  // the events array ends
            kept_from = i + 1;
            events_depth_ = -1;
          }
          break;
        default:
          break;
      }
      ++i;
      if (inside_events() && !in_event_) kept_from = i;  // commas and spaces between events
    }
    keep(n);
  }

  ChunkedTrace finish() {
    if (in_string_ || depth_ != 0) throw std::invalid_argument("it ends inside a string, object or array");
    flush();
    return std::move(out_);
  }
  ChunkedTrace& out() { return out_; }

 private:
  bool inside_events() const { return events_depth_ > 0 && depth_ >= events_depth_; }
  void start_chunk() {
    chunk_.clear();
    chunk_.reserve(chunk_bytes_ + (std::size_t(1) << 16) + padding_);
    chunk_ += '[';
    events_in_chunk_ = 0;
  }
  void flush() {
    if (events_in_chunk_ == 0) return;
    chunk_ += ']';
    if (chunk_.capacity() < chunk_.size() + padding_) chunk_.reserve(chunk_.size() + padding_);
    on_chunk_(std::move(chunk_));
    chunk_ = std::string();
    start_chunk();
  }

  std::size_t chunk_bytes_, padding_;
  const std::function<void(std::string&&)>& on_chunk_;
  ChunkedTrace out_;
  std::string chunk_, key_, last_key_;
  std::size_t events_in_chunk_ = 0;
  int depth_ = 0, events_depth_ = -1;
  std::size_t pending_backslashes_ = 0;  // a run of backslashes at the end of the last block, in a string
  bool in_string_ = false, key_capture_ = false, in_event_ = false, root_is_array_ = false;
};

}  // namespace

ChunkedTrace read_event_chunks(const std::string& path, std::size_t chunk_bytes, std::size_t padding,
                               const std::function<void(std::string&& chunk)>& on_chunk) {
  gzFile gz = gzopen(path.c_str(), "rb");
  if (!gz) throw std::invalid_argument(fmt::format("{}: cannot read: {}", path, std::strerror(errno ? errno : ENOMEM)));
  gzbuffer(gz, 1 << 20);
  struct Closer {
    gzFile gz;
    ~Closer() { gzclose(gz); }
  } closer{gz};
  Scanner scan(chunk_bytes, padding, on_chunk);
  std::vector<char> block(std::size_t(1) << 20);
  std::size_t total = 0;
  int n;
  try {
    while ((n = gzread(gz, block.data(), unsigned(block.size()))) > 0) {
      scan.feed(block.data(), std::size_t(n));
      total += std::size_t(n);
    }
    if (n < 0) {
      int code = 0;
      throw std::invalid_argument(fmt::format("cannot read: {}", gzerror(gz, &code)));
    }
    ChunkedTrace out = scan.finish();
    out.bytes = total;
    return out;
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(
        fmt::format("{}: not a whole JSON document ({}, near byte {}); give a Chrome trace, as "
                    "torch.profiler's export_chrome_trace writes it",
                    path, e.what(), total));
  }
}

}  // namespace opcost
