#pragma once
// A traced run in Perfetto's own protobuf trace format (perfetto.protos.Trace of TracePackets
// with TrackDescriptors and TrackEvents), for runs whose JSON is too big for a browser: the
// same tracks, slices, flow arrows and counters as the Chrome trace, in two thirds of the
// bytes, and Perfetto's UI loads it without parsing JSON. Encoded by hand with the field
// numbers of perfetto/protos/perfetto/trace/{trace,trace_packet}.proto and track_event/*.proto.
// Files: trace_file.h. Torch-free.
#include <functional>
#include <string_view>

#include "core/trace/trace_file.h"

namespace opcost {

// Writes what `keep` selects of the run through `write`, one packet at a time.
void write_perfetto_trace(const TraceRun& run, const TraceSelection& keep,
                          const std::function<void(std::string_view)>& write);

}  // namespace opcost
