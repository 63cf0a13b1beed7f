#pragma once
// Built-in models (random weights, nothing downloaded), written with LibTorch's C++ modules.
// Every module's forward runs inside a USER_SCOPE record named by its module path
// ("layer3.2.conv1", "transformer.h.4.attn"), so an observer knows each op's layer.
// Torch-free interface.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/sweep/model_list.h"  // ModelConfig: a model's defaults as a sweep's model list gives them

namespace opcost {

struct ModelInput {
  int64_t batch = 1;
  int64_t seq = ModelConfig{}.seq;  // token models
  std::string dtype = "fp32";       // fp32 | bf16 | fp16
  std::string device = "auto";
  bool train = false;    // forward + backward of sum(output), grads set to none first
  std::string autocast;  // "", "bf16" or "fp16": autocast an fp32 model
  // Built-in image models: weights and input in channels-last memory order (NHWC), as
  // model.to(memory_format=torch.channels_last) and its input's likewise.
  bool channels_last = false;
};

struct ModelInfo {
  std::string name, description, default_input;  // default_input as "f32[1,3,224,224]"
  bool tokens = false;                           // input is token ids (uses --seq)
};

const std::vector<ModelInfo>& builtin_models();

// What the record of a generated kernel's launch carries while a step is observed: its arguments
// as text (the step whose signatures make the inventory), or its name alone (the timing rounds:
// written out, a launch's arguments cost the host 22–27 µs more per generated launch (H100 host),
// which the prediction's one observer scale then took off every call alike:
// bench/results/2026-11-27-compiled-names-only/).
enum class KernelRecords { kWithArguments, kNamesOnly };

// A model instantiated on a device with its example input, ready to run forward.
class RunnableModel {
 public:
  virtual ~RunnableModel() = default;
  virtual const std::string& name() const = 0;
  virtual int64_t parameter_count() const = 0;
  virtual std::string input_signature() const = 0;  // "i64[8,512]"
  virtual std::string device_kind() const = 0;
  virtual int device_index() const = 0;  // cuda:N's N; 0 on the CPU
  // One step on the example input: a forward, or with `train` a forward and backward; under
  // autocast when asked. It runs on the calling thread under the step's own modes, whatever the
  // caller's: a training step with autograd on (out of inference mode, grad mode on), an
  // inference step in inference mode. Grad and inference modes are thread-local, and callers
  // differ (the measurement loop runs in inference mode for its replayed operators; Python may
  // call from under torch.no_grad()): non-virtual, so that no face can let a caller's mode in.
  void step();
  // Whether step() is a training step.
  virtual bool trains() const = 0;
  virtual void synchronize() = 0;
  // Steps to run before observing (TorchScript's profiling executor optimises on the second).
  virtual int warmup_steps() const { return 1; }
  // For models whose layers are not USER_SCOPE records (TorchScript): names the layer of the
  // op running now on this thread. Empty for built-in models.
  virtual std::function<std::string()> layer_source() const { return {}; }
  // Turns the naming of layers on for the one step whose calls are recorded with their layers,
  // and off again, for faces whose naming costs the model host time in every step (Python's
  // module hooks): every other step (timed, measured) then runs as the user's own does.
  // Built-in models name their layers in their own code: nothing to do.
  virtual void name_layers(bool /*on*/) {}
  // Turns on (and off) the records of the kernels torch.compile generated, for the steps the
  // observer records (torch/compiled_kernel_record.h): every observed step, so that their calls
  // are the same, and no other, as each record costs the step host time. Nothing to do for a
  // model that runs no generated code (built-in, TorchScript). `records` says what each record
  // carries (KernelRecords).
  virtual void watch_compiled_kernels(bool /*on*/, KernelRecords /*records*/) {}

 protected:
  // The face's own step, which step() runs under the step's modes.
  virtual void run_step() = 0;
};

// Keeps the records of generated kernels on while it lives (and off after, also on a throw).
class CompiledKernelWatch {
 public:
  explicit CompiledKernelWatch(RunnableModel& model, KernelRecords records = KernelRecords::kWithArguments)
      : model_(model), records_(records) {
    model_.watch_compiled_kernels(true, records_);
  }
  ~CompiledKernelWatch() {
    try {
      model_.watch_compiled_kernels(false, records_);
    } catch (...) {  // a destructor must not throw; the face's next step turns it off again
    }
  }
  CompiledKernelWatch(const CompiledKernelWatch&) = delete;
  CompiledKernelWatch& operator=(const CompiledKernelWatch&) = delete;

 private:
  RunnableModel& model_;
  KernelRecords records_;
};

// Throws std::invalid_argument naming what is wrong and what would fit.
std::unique_ptr<RunnableModel> make_builtin_model(const std::string& name, const ModelInput& in);

// A TorchScript file (torch.jit.save output) run on `inputs`, one tensor spec per forward
// argument ("f32[1,3,224,224]", "i64[1,128]:range[0,50257]"). Layers are the module
// hierarchy's instance names ("blocks.0.fc"). Throws std::invalid_argument naming the file,
// what was wrong and what would fit.
std::unique_ptr<RunnableModel> load_torchscript_model(const std::string& path, const std::vector<std::string>& inputs,
                                                      const ModelInput& in);

// A built-in model's name, or a path to a TorchScript file.
std::unique_ptr<RunnableModel> make_model(const std::string& name_or_path, const std::vector<std::string>& inputs,
                                          const ModelInput& in);

}  // namespace opcost
