#pragma once
// A Chrome trace's events read a block at a time: the file (gzip or plain) is scanned for its
// traceEvents array, whose events are handed on in chunks of whole events, each a small JSON
// array of its own. Memory then holds one chunk and its parse, not the whole document: a trace
// of hundreds of megabytes imports in a few tens of megabytes. Torch-free.
#include <cstddef>
#include <functional>
#include <string>

namespace opcost {

struct ChunkedTrace {
  std::string rest;         // the document outside its traceEvents array (left empty): deviceProperties, ...
  bool has_events = false;  // a traceEvents array (or a bare array of events) was found
  std::size_t bytes = 0;    // the document's size, uncompressed
};

// Calls `on_chunk` with each chunk, its to keep: "[{...},{...}]", at least `chunk_bytes` long
// except the last, with spare capacity for a parser's padding (`padding` bytes past its end). The
// document's own syntax is checked only as far as finding events needs (strings, nesting);
// the parser of each chunk checks the rest. Throws std::invalid_argument naming the file when
// it cannot be read, or ends inside a string, object or array.
ChunkedTrace read_event_chunks(const std::string& path, std::size_t chunk_bytes, std::size_t padding,
                               const std::function<void(std::string&& chunk)>& on_chunk);

}  // namespace opcost
