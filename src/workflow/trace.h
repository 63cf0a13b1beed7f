#pragma once
// Tracing a model's steps (opcost trace, Python's opcost.trace): the run with every kernel tied
// to its operator call and layer, written as a Chrome trace and read as tables. Torch-free.
#include <string>

#include "core/trace/activities.h"
#include "torch/runner.h"
#include "torch/trace_recorder.h"
#include "workflow/model_inventory.h"

namespace opcost {

// Builds the model (built-in or TorchScript) and traces its steps on the schedule. A
// TorchScript model's layers are not USER_SCOPE records, so its calls have no layer yet.
// With `step_config`, untraced steps are then measured with it (TraceRun::measured_step).
TraceRun trace_model(const ModelOptions& model, const TraceRecordOptions& options,
                     const MeasureConfig* step_config = nullptr);

}  // namespace opcost
