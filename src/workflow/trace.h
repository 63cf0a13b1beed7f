#pragma once
// Tracing a model's steps (opcost trace, Python's opcost.trace): the run with every kernel tied
// to its operator call and layer, written as a Chrome trace and read as tables, and with
// energy per call and per layer on a GPU. Torch-free.
#include <string>

#include "core/trace/activities.h"
#include "torch/runner.h"
#include "torch/trace_recorder.h"
#include "workflow/model_inventory.h"
#include "workflow/notes.h"
#include "workflow/predict.h"

namespace opcost {

// Builds the model (built-in or TorchScript) and traces its steps on the schedule. A
// TorchScript model's layers are not USER_SCOPE records, so its calls have no layer yet.
//
// With `energy` (validate's options and database), the model is first validated as
// `opcost validate` does (every operator the database lacks measured, the GPU's power between
// kernels, the untraced step's time and energy), without the profiler; the trace then gets
// each call's energy (TraceRun::energy, core/trace/energy_attribution.h). On the CPU, with
// no kernels to charge, only the untraced step is measured, and TraceRun::energy_why says so.
TraceRun trace_model(const ModelOptions& model, const TraceRecordOptions& options, const PredictOptions* energy,
                     const Notes& notes);
// The same for a model made elsewhere (a Python model); `o` then only describes it.
TraceRun trace_model(RunnableModel& model, const ModelOptions& o, const TraceRecordOptions& options,
                     const PredictOptions* energy, const Notes& notes);

}  // namespace opcost
