#pragma once
// A Chrome trace's events read a block at a time: the document (trace_bytes.h: a file or
// memory, gzip or plain) is scanned for its traceEvents array, whose events are handed on in
// chunks of whole events, each a small JSON array of its own. Memory holds one chunk being
// filled, never the document: everything outside traceEvents is skipped as it streams, but for
// the two top-level values an import reads (deviceProperties, otherData), each kept up to a
// bound. One event larger than its bound, nesting deeper than its bound, and bytes that cannot
// be JSON outside strings (a NUL, as /dev/zero or a gzip of zeros gives) are refused at once
// with their position. Torch-free.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/trace/trace_bytes.h"

namespace opcost {

// What one import holds at most, whatever the file (docs/trace.md, "Limits").
struct TraceImportLimits {
  std::size_t chunk_bytes = std::size_t(8) << 20;      // events are parsed about this many bytes at a time
  std::size_t max_event_bytes = std::size_t(8) << 20;  // one event's JSON; a larger one is refused
  std::size_t max_kept_bytes = std::size_t(1) << 20;   // deviceProperties, otherData: larger ones are skipped
  int max_depth = 1024;                                // nesting of arrays and objects (simdjson's own bound)
  // Steps, layers, calls, device activities and synchronisations kept in the run: the run is
  // the one thing that grows with the file (about 0.3 KB a record), so a gzip of a billion
  // valid events is refused rather than filling the memory.
  std::size_t max_records = 5'000'000;
};

struct EventChunk {
  std::string json;                     // "[{...},{...}]", with spare capacity for a parser's padding
  std::vector<uint64_t> event_offsets;  // where each of its events begins in the document (byte, uncompressed)
  uint64_t first_event = 0;             // how many events came before it in the traceEvents array
};

struct ChunkedTrace {
  // {"deviceProperties": [...], "otherData": {...}}: those of the document's top-level values
  // that are there and fit max_kept_bytes; "{}" when none.
  std::string kept = "{}";
  bool has_events = false;  // a traceEvents array (or a bare array of events) was found
  uint64_t bytes = 0;       // the document's size, uncompressed
  uint64_t events = 0;      // elements of its events array
};

// Calls `on_chunk` with each chunk, its to keep: at least limits.chunk_bytes long except the
// last, with `padding` bytes of spare capacity past its end. The document's own syntax is
// checked only as far as finding events and bounding memory needs (strings, nesting, the
// bytes allowed outside strings); the parser of each chunk checks the rest. Throws
// std::invalid_argument naming the input, the byte and the fix when it cannot be read, is not
// JSON there, ends inside a string, object or array, or passes a limit.
ChunkedTrace read_event_chunks(TraceBytes& bytes, const TraceImportLimits& limits, std::size_t padding,
                               const std::function<void(EventChunk&& chunk)>& on_chunk);

}  // namespace opcost
