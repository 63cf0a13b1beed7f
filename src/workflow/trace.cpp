#include "workflow/trace.h"

#include "torch/model_call.h"
#include "torch/observer.h"

namespace opcost {

TraceRun trace_model(const ModelOptions& o, const TraceRecordOptions& options, const MeasureConfig* step_config) {
  auto model = make_model(o.model, o.inputs, o.in);
  for (int i = 0; i < model->warmup_steps(); ++i) model->step();  // one-time set-up outside the trace
  model->synchronize();
  model->name_layers(true);
  // The model itself is the outermost layer, so that calls in its own forward (outside every
  // submodule) have a layer too, as Python's root module does.
  struct RootLayer {
    explicit RootLayer(const std::string& name) { open_layer_scope(name); }
    ~RootLayer() { close_layer_scope(); }
  };
  TraceRun run = record_trace(
      [&] {
        const RootLayer root(model->name());
        model->step();
      },
      model->device_kind(), model->device_index(), options);
  model->name_layers(false);
  if (step_config) {  // the step as the user runs it: no profiler, no layer naming
    Runner runner(model->device_kind(), model->device_index(), *step_config);
    ModelCall call(*model, o.in);
    run.measured_step = step_measurement_of(runner.measure(call));
  }
  return run;
}

}  // namespace opcost
