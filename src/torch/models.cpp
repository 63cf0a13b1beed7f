// The built-in model zoo: torchvision's ResNets, a distilled GPT-2 and the MNIST CNN, in
// LibTorch's C++ modules with random weights. Each forward is wrapped in a USER_SCOPE record
// carrying the module path, which is how an inventory attributes ops to layers.
#include "torch/models.h"

#include <ATen/DeviceAccelerator.h>
#include <ATen/record_function.h>
#include <c10/core/InferenceMode.h>
#include <fmt/format.h>
#include <torch/torch.h>

#include <sys/stat.h>
#include <stdexcept>

#include "torch/autocast.h"
#include "torch/canonical_form.h"
#include "torch/device.h"
#include "torch/model_support.h"
#include "torch/replay.h"

namespace opcost {

namespace {

namespace nn = torch::nn;

#define SCOPE(path) RECORD_USER_SCOPE(path)

std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

// ---------------------------------------------------------------- ResNet (torchvision v1.5)
nn::Conv2d conv(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, k).stride(stride).padding(pad).bias(false));
}

// Runs a named leaf module inside its scope.
template <typename M>
torch::Tensor run(const std::string& path, M& m, const torch::Tensor& x) {
  SCOPE(path);
  return m->forward(x);
}

// LibTorch's nn::Linear calls addmm or matmul directly; Python's nn.Linear, which users
// profile, calls aten::linear. Keep the Python op so inventories match what users see.
torch::Tensor run(const std::string& path, nn::Linear& m, const torch::Tensor& x) {
  SCOPE(path);
  return at::linear(x, m->weight, m->bias);
}

struct BlockImpl : nn::Module {
  BlockImpl(std::string path, int64_t inplanes, int64_t planes, int64_t stride, bool bottleneck)
      : path_(std::move(path)), bottleneck_(bottleneck) {
    const int64_t expansion = bottleneck ? 4 : 1;
    if (bottleneck) {
      conv1 = register_module("conv1", conv(inplanes, planes, 1, 1, 0));
      conv2 = register_module("conv2", conv(planes, planes, 3, stride, 1));
      conv3 = register_module("conv3", conv(planes, planes * 4, 1, 1, 0));
      bn3 = register_module("bn3", nn::BatchNorm2d(planes * 4));
    } else {
      conv1 = register_module("conv1", conv(inplanes, planes, 3, stride, 1));
      conv2 = register_module("conv2", conv(planes, planes, 3, 1, 1));
    }
    bn1 = register_module("bn1", nn::BatchNorm2d(planes));
    bn2 = register_module("bn2", nn::BatchNorm2d(planes));
    if (stride != 1 || inplanes != planes * expansion) {
      down_conv = register_module("downsample_0", conv(inplanes, planes * expansion, 1, stride, 0));
      down_bn = register_module("downsample_1", nn::BatchNorm2d(planes * expansion));
    }
  }
  torch::Tensor forward(torch::Tensor x) {
    SCOPE(path_);
    torch::Tensor identity = x;
    auto relu = [&](const torch::Tensor& t) {
      SCOPE(join(path_, "relu"));
      return torch::relu(t);
    };
    torch::Tensor out = relu(run(join(path_, "bn1"), bn1, run(join(path_, "conv1"), conv1, x)));
    out = run(join(path_, "bn2"), bn2, run(join(path_, "conv2"), conv2, out));
    if (bottleneck_) out = run(join(path_, "bn3"), bn3, run(join(path_, "conv3"), conv3, relu(out)));
    if (down_conv) identity = run(join(path_, "downsample.1"), down_bn, run(join(path_, "downsample.0"), down_conv, x));
    out = out + identity;  // issued in the block's own forward: attributed to the block
    return relu(out);
  }
  std::string path_;
  bool bottleneck_;
  nn::Conv2d conv1{nullptr}, conv2{nullptr}, conv3{nullptr}, down_conv{nullptr};
  nn::BatchNorm2d bn1{nullptr}, bn2{nullptr}, bn3{nullptr}, down_bn{nullptr};
};
TORCH_MODULE(Block);

struct ResNetImpl : nn::Module {
  ResNetImpl(std::vector<int64_t> layers, bool bottleneck) {
    conv1 = register_module("conv1", conv(3, 64, 7, 2, 3));
    bn1 = register_module("bn1", nn::BatchNorm2d(64));
    int64_t inplanes = 64;
    const int64_t expansion = bottleneck ? 4 : 1;
    for (std::size_t l = 0; l < layers.size(); ++l) {
      const int64_t planes = 64 << l;
      for (int64_t b = 0; b < layers[l]; ++b) {
        const std::string path = fmt::format("layer{}.{}", l + 1, b);
        blocks.push_back(register_module(fmt::format("layer{}_{}", l + 1, b),
                                         Block(path, inplanes, planes, (b == 0 && l > 0) ? 2 : 1, bottleneck)));
        inplanes = planes * expansion;
      }
    }
    fc = register_module("fc", nn::Linear(512 * expansion, 1000));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = run("bn1", bn1, run("conv1", conv1, x));
    {
      SCOPE("relu");
      x = torch::relu(x);
    }
    {
      SCOPE("maxpool");
      x = torch::max_pool2d(x, 3, 2, 1);
    }
    for (auto& b : blocks) x = b->forward(x);
    {
      SCOPE("avgpool");
      x = torch::adaptive_avg_pool2d(x, {1, 1});
    }
    x = torch::flatten(x, 1);
    return run("fc", fc, x);
  }
  nn::Conv2d conv1{nullptr};
  nn::BatchNorm2d bn1{nullptr};
  std::vector<Block> blocks;
  nn::Linear fc{nullptr};
};
TORCH_MODULE(ResNet);

// ---------------------------------------------------------------- distilled GPT-2
struct GptBlockImpl : nn::Module {
  GptBlockImpl(std::string path, int64_t d, int64_t heads) : path_(std::move(path)), heads_(heads) {
    ln_1 = register_module("ln_1", nn::LayerNorm(nn::LayerNormOptions({d}).eps(1e-5)));
    c_attn = register_module("c_attn", nn::Linear(d, 3 * d));
    attn_proj = register_module("attn_c_proj", nn::Linear(d, d));
    ln_2 = register_module("ln_2", nn::LayerNorm(nn::LayerNormOptions({d}).eps(1e-5)));
    c_fc = register_module("c_fc", nn::Linear(d, 4 * d));
    mlp_proj = register_module("mlp_c_proj", nn::Linear(4 * d, d));
  }
  torch::Tensor forward(torch::Tensor x) {
    SCOPE(path_);
    const auto B = x.size(0), T = x.size(1), C = x.size(2);
    torch::Tensor a;
    {
      const std::string attn = join(path_, "attn");
      SCOPE(attn);  // attention math sits in attn's own forward, outside any leaf
      auto qkv = run(join(attn, "c_attn"), c_attn, run(join(path_, "ln_1"), ln_1, x));
      auto parts = qkv.split(C, 2);
      auto heads = [&](const torch::Tensor& t) { return t.view({B, T, heads_, C / heads_}).transpose(1, 2); };
      auto y = at::scaled_dot_product_attention(heads(parts[0]), heads(parts[1]), heads(parts[2]), {}, 0.0, true);
      y = y.transpose(1, 2).contiguous().view({B, T, C});
      a = run(join(attn, "c_proj"), attn_proj, y);
    }
    x = x + a;
    torch::Tensor m;
    {
      const std::string mlp = join(path_, "mlp");
      SCOPE(mlp);
      auto h = run(join(mlp, "c_fc"), c_fc, run(join(path_, "ln_2"), ln_2, x));
      {
        SCOPE(join(mlp, "act"));
        h = torch::gelu(h, "tanh");
      }
      m = run(join(mlp, "c_proj"), mlp_proj, h);
    }
    return x + m;
  }
  std::string path_;
  int64_t heads_;
  nn::LayerNorm ln_1{nullptr}, ln_2{nullptr};
  nn::Linear c_attn{nullptr}, attn_proj{nullptr}, c_fc{nullptr}, mlp_proj{nullptr};
};
TORCH_MODULE(GptBlock);

struct Gpt2Impl : nn::Module {
  Gpt2Impl(int64_t layers, int64_t d, int64_t heads, int64_t positions, int64_t vocab) {
    wte = register_module("wte", nn::Embedding(vocab, d));
    wpe = register_module("wpe", nn::Embedding(positions, d));
    for (int64_t i = 0; i < layers; ++i)
      h.push_back(register_module(fmt::format("h_{}", i), GptBlock(fmt::format("transformer.h.{}", i), d, heads)));
    ln_f = register_module("ln_f", nn::LayerNorm(nn::LayerNormOptions({d}).eps(1e-5)));
  }
  torch::Tensor forward(torch::Tensor ids) {
    torch::Tensor x;
    {
      SCOPE("transformer");
      auto pos = torch::arange(ids.size(1), ids.options());
      x = run("transformer.wte", wte, ids) + run("transformer.wpe", wpe, pos);
      for (auto& b : h) x = b->forward(x);
      x = run("transformer.ln_f", ln_f, x);
    }
    SCOPE("lm_head");  // tied to the token embedding: no parameters of its own
    return torch::linear(x, wte->weight);
  }
  nn::Embedding wte{nullptr}, wpe{nullptr};
  std::vector<GptBlock> h;
  nn::LayerNorm ln_f{nullptr};
};
TORCH_MODULE(Gpt2);

// ---------------------------------------------------------------- MNIST CNN
struct MnistImpl : nn::Module {
  MnistImpl() {
    conv1 = register_module("conv1", nn::Conv2d(nn::Conv2dOptions(1, 20, 5)));
    conv2 = register_module("conv2", nn::Conv2d(nn::Conv2dOptions(20, 50, 5)));
    fc1 = register_module("fc1", nn::Linear(800, 500));
    fc2 = register_module("fc2", nn::Linear(500, 10));
  }
  torch::Tensor forward(torch::Tensor x) {
    auto block = [&](const char* name, nn::Conv2d& c, const torch::Tensor& in) {
      auto y = run(name, c, in);
      SCOPE(std::string(name) + "_pool");
      return torch::max_pool2d(torch::relu(y), 2);
    };
    x = block("conv2", conv2, block("conv1", conv1, x)).flatten(1);
    {
      SCOPE("fc1_relu");
      x = torch::relu(run("fc1", fc1, x));
    }
    return run("fc2", fc2, x);
  }
  nn::Conv2d conv1{nullptr}, conv2{nullptr};
  nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(Mnist);

template <typename M>
class Runnable : public RunnableModel {
 public:
  Runnable(std::string name, M m, torch::Tensor input, c10::Device dev, const ModelInput& in,
           std::optional<at::ScalarType> autocast)
      : name_(std::move(name)),
        m_(std::move(m)),
        input_(std::move(input)),
        dev_(dev),
        in_(in),
        autocast_(autocast),
        parameters_(m_->parameters()) {
    if (in_.train)
      m_->train();
    else
      m_->eval();
  }
  const std::string& name() const override { return name_; }
  int64_t parameter_count() const override {
    int64_t n = 0;
    for (const auto& p : parameters_) n += p.numel();
    return n;
  }
  std::string input_signature() const override { return format_tensor(tensor_spec_of(input_)); }
  std::string device_kind() const override { return dev_.is_cuda() ? "cuda" : "cpu"; }
  int device_index() const override { return dev_.has_index() ? dev_.index() : 0; }
  bool trains() const override { return in_.train; }
  void synchronize() override {
    if (dev_.is_cuda()) at::accelerator::synchronizeDevice(dev_.index());
  }

 protected:
  void run_step() override {
    run_model_step(in_, autocast_, dev_.type(), parameters_, [&] { return m_->forward(input_); });
  }

 private:
  std::string name_;
  M m_;
  torch::Tensor input_;
  c10::Device dev_;
  ModelInput in_;
  std::optional<at::ScalarType> autocast_;
  std::vector<torch::Tensor> parameters_;
};

}  // namespace

at::ScalarType model_dtype(const std::string& d) {
  if (d == "fp32" || d == "f32" || d == "float32") return at::kFloat;
  if (d == "bf16" || d == "bfloat16") return at::kBFloat16;
  if (d == "fp16" || d == "f16" || d == "float16") return at::kHalf;
  throw std::invalid_argument(fmt::format("unknown dtype '{}' (use fp32, bf16 or fp16)", d));
}

std::optional<at::ScalarType> resolve_autocast(const ModelInput& in, at::ScalarType dtype) {
  if (in.autocast.empty()) return std::nullopt;
  if (dtype != at::kFloat)
    throw std::invalid_argument(fmt::format(
        "--autocast runs an fp32 model with {} math; drop --dtype {} or drop --autocast", in.autocast, in.dtype));
  try {
    return autocast_dtype(in.autocast);
  } catch (const ReplayError& e) {
    throw std::invalid_argument(std::string("--autocast: ") + e.what());
  }
}

void RunnableModel::step() {
  // InferenceMode(false) is what leaves a caller's inference mode: it turns grad mode on and
  // puts the autograd dispatch keys back. Grad mode alone (torch.enable_grad(), AutoGradMode)
  // leaves those keys excluded, so under inference mode a forward records no graph and its
  // backward fails with "element 0 of tensors does not require grad".
  const c10::InferenceMode modes(!trains());
  run_step();
}

void run_model_step(const ModelInput& in, std::optional<at::ScalarType> autocast, c10::DeviceType device,
                    const std::vector<at::Tensor>& parameters, const std::function<at::Tensor()>& forward) {
  AutocastScope scope(autocast, device);
  if (!in.train) {
    forward();
    return;
  }
  for (auto p : parameters) p.mutable_grad() = at::Tensor();  // zero_grad(set_to_none=True)
  const at::Tensor out = forward();
  if (!out.defined())
    throw std::invalid_argument("--train needs the model's forward to return a tensor (or a tuple holding one)");
  SCOPE("loss");
  // The output's sum: every sample's gradient is the same, and the backward's energy reads below
  // a real loss's (docs/energy-method.md, "The values an operator works on"). A loss without
  // labels that does better was not found: half the sum of the output's squares read the same.
  out.sum().backward();
}

const std::vector<ModelInfo>& builtin_models() {
  static const std::vector<ModelInfo> m = {
      {"resnet18", "torchvision ResNet-18", "f32[1,3,224,224]", false},
      {"resnet34", "torchvision ResNet-34", "f32[1,3,224,224]", false},
      {"resnet50", "torchvision ResNet-50 (v1.5)", "f32[1,3,224,224]", false},
      {"distilgpt2", "GPT-2, 6 layers, 768 hidden, 12 heads, tied output embedding", "i64[1,128]", true},
      {"mnist-cnn", "two 5x5 convolutions (20, 50 filters), max-pools, fc 800-500-10", "f32[1,1,28,28]", false},
  };
  return m;
}

std::unique_ptr<RunnableModel> make_builtin_model(const std::string& name, const ModelInput& in) {
  if (in.batch < 1) throw std::invalid_argument(fmt::format("--batch must be at least 1 (got {})", in.batch));
  const c10::Device dev = resolve_device_option(in.device);
  const at::ScalarType dtype = model_dtype(in.dtype);
  const auto autocast = resolve_autocast(in, dtype);
  torch::manual_seed(0);
  const auto fopts = torch::TensorOptions().device(dev).dtype(dtype);
  auto finish = [&](auto m, torch::Tensor input) -> std::unique_ptr<RunnableModel> {
    m->to(dev, dtype);
    if (in.channels_last) {
      if (input.dim() != 4)
        throw std::invalid_argument(
            fmt::format("channels_last orders image models' 4-D tensors; {} takes {}-D input", name, input.dim()));
      // What model.to(memory_format=torch.channels_last) does: every 4-D parameter and buffer.
      for (auto& t : m->parameters())
        if (t.dim() == 4) t.set_data(t.contiguous(at::MemoryFormat::ChannelsLast));
      for (auto& t : m->buffers())
        if (t.dim() == 4) t.set_data(t.contiguous(at::MemoryFormat::ChannelsLast));
      input = input.contiguous(at::MemoryFormat::ChannelsLast);
    }
    return std::make_unique<Runnable<decltype(m)>>(name, m, input, dev, in, autocast);
  };
  if (name == "resnet18" || name == "resnet34" || name == "resnet50") {
    const bool deep = name == "resnet50";
    std::vector<int64_t> layers =
        name == "resnet18" ? std::vector<int64_t>{2, 2, 2, 2} : std::vector<int64_t>{3, 4, 6, 3};
    return finish(ResNet(layers, deep), torch::randn({in.batch, 3, 224, 224}, fopts));
  }
  if (name == "distilgpt2") {
    if (in.seq < 1 || in.seq > 1024)
      throw std::invalid_argument(fmt::format("distilgpt2 takes 1 to 1024 tokens (--seq), got {}", in.seq));
    auto ids = torch::randint(0, 50257, {in.batch, in.seq}, torch::TensorOptions().device(dev).dtype(at::kLong));
    return finish(Gpt2(6, 768, 12, 1024, 50257), ids);
  }
  if (name == "mnist-cnn") return finish(Mnist(), torch::randn({in.batch, 1, 28, 28}, fopts));
  std::string names;
  for (const auto& m : builtin_models()) names += (names.empty() ? "" : ", ") + m.name;
  throw std::invalid_argument(fmt::format(
      "unknown model '{}': not a built-in model ({}) and no such file (a TorchScript file from torch.jit.save)", name,
      names));
}

std::unique_ptr<RunnableModel> make_model(const std::string& name_or_path, const std::vector<std::string>& inputs,
                                          const ModelInput& in) {
  for (const auto& m : builtin_models())
    if (m.name == name_or_path) {
      if (!inputs.empty())
        throw std::invalid_argument(
            fmt::format("{} is a built-in model: size its input with --batch{} instead of --input", name_or_path,
                        m.tokens ? " and --seq" : ""));
      return make_builtin_model(name_or_path, in);
    }
  // POSIX, not std::filesystem: libtorch.so exports its own std::filesystem symbols, some of
  // which crash when called from our code (seen with remove_all on torch 2.11).
  struct stat st {};
  if (::stat(name_or_path.c_str(), &st) == 0) {
    if (in.channels_last)
      throw std::invalid_argument(fmt::format(
          "{}: channels_last reorders built-in models only; save the TorchScript model in channels-last order "
          "instead (model.to(memory_format=torch.channels_last) before torch.jit.trace)",
          name_or_path));
    return load_torchscript_model(name_or_path, inputs, in);
  }
  return make_builtin_model(name_or_path, in);  // names the built-in models
}

}  // namespace opcost
