#pragma once
// A whole model step as something the measurement engine can loop on: each call runs one step
// and waits for the device, so a step's wall time includes every gap where the GPU waited for
// the CPU. Torch-free.
#include <string>

#include "torch/models.h"
#include "torch/replay.h"

namespace opcost {

class ModelCall : public PreparedCall {
 public:
  ModelCall(RunnableModel& model, const ModelInput& in)
      : model_(model),
        op_("model::" + model.name()),
        overload_(in.train ? "train" : "inference"),
        args_("input=" + model.input_signature()),
        dtype_(in.dtype),
        device_(model.device_kind()),
        autocast_(in.autocast) {}

  const std::string& op() const override { return op_; }
  const std::string& overload() const override { return overload_; }
  const std::string& canonical_args() const override { return args_; }
  const std::string& schema() const override { return empty_; }
  const std::string& dtype() const override { return dtype_; }
  const std::string& device_kind() const override { return device_; }
  const std::string& autocast() const override { return autocast_; }
  int device_index() const override { return 0; }
  std::size_t input_sets() const override { return 1; }
  std::size_t input_bytes() const override { return 0; }
  void call() override {
    model_.step();
    model_.synchronize();
  }

 private:
  RunnableModel& model_;
  std::string op_, overload_, args_, dtype_, device_, autocast_, empty_;
};

}  // namespace opcost
