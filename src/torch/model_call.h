#pragma once
// A whole model step as something the measurement engine can loop on: each call runs one step
// and waits for the device, so a step's wall time includes every gap where the GPU waited for
// the CPU. The step runs under its own grad and inference modes (RunnableModel::step()),
// whatever the measurement loop's. Torch-free.
#include <string>

#include "core/spec/arg_value.h"

#include "torch/models.h"
#include "torch/replay.h"

namespace opcost {

class ModelCall : public PreparedCall {
 public:
  ModelCall(RunnableModel& model, const ModelInput& in) : model_(model) {
    info_.op = "model::" + model.name();
    info_.overload = in.train ? "train" : "inference";
    info_.canonical_args = "input=" + model.input_signature();
    info_.dtype = in.dtype;
    info_.device_kind = model.device_kind();
    info_.device_index = model.device_index();
    info_.autocast = canonical_dtype(in.autocast).value_or(in.autocast);  // as measurements store it
  }
  void call() override {
    model_.step();
    model_.synchronize();
  }

 private:
  RunnableModel& model_;
};

}  // namespace opcost
