// The streaming scan of a Chrome trace (core/trace/event_chunks.h) on its own: the same input
// read in chunks of one event and in chunks of megabytes must give the same events, the same
// kept values and the same counts, or the same refusal (std::invalid_argument naming the
// input, in one line). Each chunk is a JSON array with the parser's padding after it.
#include <fmt/format.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/trace/event_chunks.h"
#include "core/trace/trace_bytes.h"
#include "fuzz_support.h"

namespace {

constexpr const char* kName = "fuzz-events.json";
constexpr std::size_t kPadding = 64;

struct Scan {
  opcost::ChunkedTrace trace;
  std::string events;  // every chunk's events, comma-separated
  std::vector<uint64_t> offsets;
};

std::optional<Scan> scan(std::string_view input, std::size_t chunk_bytes, std::string& refusal) {
  opcost::TraceImportLimits limits;
  limits.chunk_bytes = chunk_bytes;
  Scan s;
  try {
    opcost::TraceBytes bytes = opcost::TraceBytes::in_memory(input, kName);
    s.trace = opcost::read_event_chunks(bytes, limits, kPadding, [&](opcost::EventChunk&& chunk) {
      const std::string& json = chunk.json;
      if (json.size() < 2 || json.front() != '[' || json.back() != ']')
        opcost::fuzz::fail(fmt::format("a chunk is not a JSON array: {}", json.substr(0, 200)));
      if (json.capacity() < json.size() + kPadding) opcost::fuzz::fail("a chunk lacks the parser's padding");
      if (!s.events.empty()) s.events += ',';
      s.events.append(json, 1, json.size() - 2);
      s.offsets.insert(s.offsets.end(), chunk.event_offsets.begin(), chunk.event_offsets.end());
    });
  } catch (const std::invalid_argument& e) {
    opcost::fuzz::check_refusal(e.what(), kName);
    refusal = e.what();
    return std::nullopt;
  }
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string small_refusal, large_refusal;
  const auto small = scan(input, 1, small_refusal);
  const auto large = scan(input, std::size_t(8) << 20, large_refusal);
  if (small.has_value() != large.has_value())
    opcost::fuzz::fail(fmt::format("read in small chunks the input {}, in large ones {}",
                                   small ? "passes" : "is refused (" + small_refusal + ")",
                                   large ? "passes" : "is refused (" + large_refusal + ")"));
  if (!small) return 0;
  opcost::fuzz::note_accepted();
  if (small->events != large->events) opcost::fuzz::fail("small and large chunks hold different events");
  if (small->offsets != large->offsets) opcost::fuzz::fail("small and large chunks give different event offsets");
  if (small->trace.kept != large->trace.kept || small->trace.has_events != large->trace.has_events ||
      small->trace.bytes != large->trace.bytes || small->trace.events != large->trace.events)
    opcost::fuzz::fail("small and large chunks give different kept values or counts");
  return 0;
}
