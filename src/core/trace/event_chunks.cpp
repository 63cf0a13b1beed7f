#include "core/trace/event_chunks.h"

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace opcost {

namespace {

// Each byte outside strings is skipped (whitespace, commas, the characters of numbers and of
// true, false and null), stops the scan (structural), or is one JSON never has there: a NUL
// from /dev/zero or a gzip of zeros is refused at its first byte instead of being read on.
enum ByteClass : unsigned char { kSkip, kStructural, kInvalid };
constexpr auto kClass = [] {
  std::array<ByteClass, 256> t{};
  t.fill(kInvalid);
  for (unsigned char c : std::string_view(" \t\n\r,+-.0123456789eEtruefalsn")) t[c] = kSkip;
  for (unsigned char c : std::string_view("\":{}[]")) t[c] = kStructural;
  return t;
}();

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string describe_byte(unsigned char c) {
  if (c == 0) return "a NUL byte (0x00)";
  if (c >= 0x20 && c < 0x7f) return fmt::format("'{}'", char(c));
  return fmt::format("byte value 0x{:02x}", c);
}

std::string mib(std::size_t bytes) {
  return bytes % (std::size_t(1) << 20) == 0 ? fmt::format("{} MiB", bytes >> 20) : fmt::format("{} bytes", bytes);
}

constexpr std::size_t kMaxKeyBytes = 64;  // top-level keys are compared with short names only
constexpr std::string_view kSuggestion = "give a Chrome trace, as torch.profiler's export_chrome_trace writes it";

// The scan's state across blocks: nesting, strings, where the events array is, what is kept.
class Scanner {
 public:
  Scanner(std::string name, const TraceImportLimits& limits, std::size_t padding,
          const std::function<void(EventChunk&&)>& on_chunk)
      : name_(std::move(name)), limits_(limits), padding_(padding), on_chunk_(on_chunk) {
    start_chunk();
  }

  // Scans the next block of the document. Bytes are handed to their sink (flush_to) in runs,
  // not one by one: the scan itself only looks at structure.
  void feed(const char* p, std::size_t n) {
    block_ = p;
    kept_from_ = 0;
    for (std::size_t i = 0; i < n;) {
      if (in_string_) {
        i = scan_string(i, n);
        continue;
      }
      const auto c = static_cast<unsigned char>(p[i]);
      if (kClass[c] == kSkip) {
        i = skip_run(i, n);
        continue;
      }
      on_structural(i, c);
      ++i;
    }
    flush_to(n);
    offset_ += n;
  }

  ChunkedTrace finish() {
    if (!root_is_object_ && !root_is_array_) refuse(offset_, "it is empty, or holds only whitespace");
    if (in_string_ || depth_ != 0) refuse(offset_, "it ends inside a string, object or array (a file cut short?)");
    flush_chunk();
    out_.bytes = offset_;
    out_.events = events_;
    return std::move(out_);
  }

 private:
  // Hands [kept_from_, to) of the block to where it belongs: the event being read, a kept
  // top-level value, or nowhere (everything else is skipped as it streams).
  void flush_to(std::size_t to) {
    if (to > kept_from_) {
      if (in_event_) {
        chunk_.json.append(block_ + kept_from_, to - kept_from_);
        if (chunk_.json.size() - event_begin_ > limits_.max_event_bytes) refuse_large_event();
      } else if (capturing_) {
        capture_.append(block_ + kept_from_, to - kept_from_);
        if (capture_.size() > limits_.max_kept_bytes) {  // skipped: only a device's name was wanted
          capturing_ = false;
          std::string().swap(capture_);
        }
      }
    }
    kept_from_ = to;
  }

  // Inside a string: on to the closing quote, past escaped ones; returns where the scan goes on.
  std::size_t scan_string(std::size_t i, std::size_t n) {
    const char* p = block_;
    const void* q = std::memchr(p + i, '"', n - i);
    const std::size_t end = q ? std::size_t(static_cast<const char*>(q) - p) : n;
    // The quote is escaped when an odd run of backslashes ends just before it; a run that
    // reaches back to the block's start continues the previous block's.
    std::size_t run = 0;
    while (end - run > i && p[end - run - 1] == '\\') ++run;
    const bool odd = (run + (end - run == i ? pending_backslashes_ : 0)) % 2 == 1;
    capture_key(p + i, end - i);
    if (end == n) {  // the string goes on in the next block
      pending_backslashes_ = run == end - i ? pending_backslashes_ + run : run;
      return n;
    }
    pending_backslashes_ = 0;
    if (odd)
      capture_key("\"", 1);
    else
      in_string_ = false;
    return end + 1;
  }

  // Digits, spaces, commas, literals: a tight loop. Outside the document only whitespace may be.
  std::size_t skip_run(std::size_t i, std::size_t n) const {
    const char* p = block_;
    const std::size_t from = i;
    ++i;
    while (i < n && kClass[static_cast<unsigned char>(p[i])] == kSkip) ++i;
    if (depth_ == 0)  // before or after the document: whitespace only
      for (std::size_t j = from; j < i; ++j)
        if (!is_space(p[j])) refuse_outside_document(j, static_cast<unsigned char>(p[j]));
    return i;
  }

  // A byte that is not skipped: a quote, a colon, a bracket, or one JSON never has there.
  void on_structural(std::size_t i, unsigned char c) {
    if (kClass[c] == kInvalid)
      refuse(offset_ + i, fmt::format("{} is there, which JSON never has outside a string", describe_byte(c)));
    if (depth_ == 0 && c != '{' && c != '[') refuse_outside_document(i, c);
    switch (c) {
      case '"':
        in_string_ = true;
        pending_backslashes_ = 0;
        key_capture_ = depth_ == 1 && root_is_object_;  // a top-level key, perhaps "traceEvents"
        key_.clear();
        key_too_long_ = false;
        break;
      case ':':
        if (depth_ == 1) last_key_ = key_too_long_ ? std::string() : key_;
        break;
      case '{':
      case '[':
        open(i, c);
        break;
      case '}':
      case ']':
        close(i);
        break;
      default:
        break;
    }
  }

  // An array or object opens: the document, a top-level value, or an event.
  void open(std::size_t i, unsigned char c) {
    if (depth_ >= limits_.max_depth)
      refuse(offset_ + i, fmt::format("nested deeper than {} arrays and objects", limits_.max_depth));
    if (depth_ == 0) {
      open_document(i, c);
    } else if (depth_ == 1 && root_is_object_ && !last_key_.empty()) {  // a top-level value
      open_top_level_value(i, c);
    } else if (depth_ == events_depth_ && !in_event_) {  // an event begins
      flush_to(i);
      in_event_ = true;
      if (chunk_events_++) chunk_.json += ',';
      chunk_.event_offsets.push_back(offset_ + i);
      event_begin_ = chunk_.json.size();
    }
    ++depth_;
  }

  void open_document(std::size_t i, unsigned char c) {
    if (root_is_object_ || root_is_array_) refuse_outside_document(i, c);
    if (c == '[') {  // a bare array of events
      root_is_array_ = true;
      events_depth_ = 1;
      out_.has_events = true;
    } else {
      root_is_object_ = true;
    }
  }

  // The first traceEvents array holds the events; deviceProperties and otherData are kept.
  void open_top_level_value(std::size_t i, unsigned char c) {
    if (c == '[' && last_key_ == "traceEvents" && !events_seen_) {
      events_depth_ = 2;
      events_seen_ = out_.has_events = true;
    } else if (last_key_ == "deviceProperties" || last_key_ == "otherData") {
      flush_to(i);
      capturing_ = true;
      capture_ = fmt::format("\"{}\":", last_key_);
    }
    last_key_.clear();
  }

  // An array or object closes: an event, the events array, or a kept top-level value may end.
  void close(std::size_t i) {
    --depth_;
    if (in_event_ && depth_ == events_depth_) {  // the event ends here
      flush_to(i + 1);
      in_event_ = false;
      ++events_;
      if (chunk_.json.size() >= limits_.chunk_bytes) flush_chunk();
    } else if (events_depth_ > 0 && depth_ == events_depth_ - 1) {  // the events array ends
      events_depth_ = -1;
    } else if (capturing_ && depth_ == 1) {  // a kept top-level value ends
      flush_to(i + 1);
      capturing_ = false;
      out_.kept.insert(out_.kept.size() - 1, (out_.kept.size() > 2 ? "," : "") + capture_);
      std::string().swap(capture_);
    }
  }

  [[noreturn]] void refuse(uint64_t at, const std::string& why) const {
    throw std::invalid_argument(fmt::format("{}: not a Chrome trace: byte {}: {}; {}", name_, at, why, kSuggestion));
  }
  [[noreturn]] void refuse_outside_document(std::size_t i, unsigned char c) const {
    refuse(offset_ + i, root_is_object_ || root_is_array_
                            ? fmt::format("{} after the document's end", describe_byte(c))
                            : fmt::format("{} where a trace begins with '{{' (or a '[' of events)", describe_byte(c)));
  }
  [[noreturn]] void refuse_large_event() const {
    throw std::invalid_argument(fmt::format(
        "{}: event {} (at byte {}) is over the limit of {} for one event; the events of a torch.profiler trace are "
        "a few hundred bytes: is this the file the profiler wrote?",
        name_, events_ + 1, chunk_.event_offsets.back(), mib(limits_.max_event_bytes)));
  }
  void capture_key(const char* p, std::size_t n) {
    if (!key_capture_ || key_too_long_) return;
    if (key_.size() + n > kMaxKeyBytes)
      key_too_long_ = true;
    else
      key_.append(p, n);
  }
  void start_chunk() {
    chunk_ = EventChunk();
    chunk_.json.reserve(limits_.chunk_bytes + (std::size_t(1) << 16) + padding_);
    chunk_.json += '[';
    chunk_.first_event = events_;
    chunk_events_ = 0;
  }
  void flush_chunk() {
    if (chunk_events_ == 0) return;
    chunk_.json += ']';
    if (chunk_.json.capacity() < chunk_.json.size() + padding_) chunk_.json.reserve(chunk_.json.size() + padding_);
    on_chunk_(std::move(chunk_));
    start_chunk();
  }

  std::string name_;
  const TraceImportLimits& limits_;
  std::size_t padding_;
  const std::function<void(EventChunk&&)>& on_chunk_;
  ChunkedTrace out_;
  EventChunk chunk_;
  std::string key_, last_key_, capture_;
  std::size_t chunk_events_ = 0, event_begin_ = 0;
  uint64_t events_ = 0, offset_ = 0;  // offset_: where the block being fed begins in the document
  const char* block_ = nullptr;       // the block being fed
  std::size_t kept_from_ = 0;         // its first byte not yet handed to its sink
  int depth_ = 0, events_depth_ = -1;
  std::size_t pending_backslashes_ = 0;  // a run of backslashes at the end of the last block, in a string
  bool in_string_ = false, key_capture_ = false, key_too_long_ = false, in_event_ = false, capturing_ = false;
  bool root_is_array_ = false, root_is_object_ = false, events_seen_ = false;
};

}  // namespace

ChunkedTrace read_event_chunks(TraceBytes& bytes, const TraceImportLimits& limits, std::size_t padding,
                               const std::function<void(EventChunk&& chunk)>& on_chunk) {
  Scanner scan(bytes.name(), limits, padding, on_chunk);
  std::vector<char> block(std::size_t(1) << 20);
  for (std::size_t n; (n = bytes.read(block.data(), block.size())) > 0;) scan.feed(block.data(), n);
  return scan.finish();
}

}  // namespace opcost
