#pragma once
// `--only-steps A[-B]`: a run cut down to some of its steps, for a big trace whose file or
// tables need only a few. Torch-free.
#include <cstddef>
#include <string>

#include "core/trace/activities.h"

namespace opcost {

struct StepRange {
  std::size_t first = 1, last = 1;  // 1-based, among the run's steps, inclusive
};
// "3" or "2-4"; throws std::invalid_argument naming the text and the form that fits.
StepRange parse_step_range(const std::string& text);

// The run with only the steps in `range`, and what ran in them: their calls, the device
// activities those launched (or, tied to no call, that started in them), the layers,
// backward ranges, synchronisations and counter samples inside them. Tied again. Throws
// std::invalid_argument when the run has fewer steps than the range names.
TraceRun only_steps(const TraceRun& run, StepRange range);

}  // namespace opcost
