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

namespace opcost {

struct ModelInput {
  int64_t batch = 1;
  int64_t seq = 128;        // token models
  std::string dtype = "fp32";  // fp32 | bf16 | fp16
  std::string device = "auto";
};

struct ModelInfo {
  std::string name, description, default_input;  // default_input as "f32[1,3,224,224]"
  int64_t batch_default = 1;
  bool tokens = false;      // input is token ids (uses --seq)
};

const std::vector<ModelInfo>& builtin_models();

// A model instantiated on a device with its example input, ready to run forward.
class RunnableModel {
 public:
  virtual ~RunnableModel() = default;
  virtual const std::string& name() const = 0;
  virtual int64_t parameter_count() const = 0;
  virtual std::string input_signature() const = 0;  // "i64[8,512]"
  virtual std::string device_kind() const = 0;
  virtual void forward() = 0;                      // one forward on the example input
  virtual void synchronize() = 0;
};

// Throws std::invalid_argument naming what is wrong and what would fit.
std::unique_ptr<RunnableModel> make_builtin_model(const std::string& name, const ModelInput& in);

}  // namespace opcost
