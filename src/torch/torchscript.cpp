// TorchScript models: load a torch.jit.save file, build its inputs from tensor specs, run it,
// and name the layer of each op from the interpreter's module hierarchy.
#include <ATen/DeviceAccelerator.h>
#include <ATen/record_function.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/csrc/jit/passes/tensorexpr_fuser.h>
#include <torch/csrc/jit/runtime/interpreter.h>
#include <torch/script.h>

#include <sys/stat.h>
#include <stdexcept>

#include "core/spec/arg_value.h"
#include "torch/canonical_form.h"
#include "torch/device.h"
#include "torch/dtype_codes.h"
#include "torch/model_support.h"

namespace opcost {

namespace {

// "TOP(Net)::forward", "blocks(Sequential)::forward", "0(Block)::forward", "SELF(Block)::_impl",
// "::relu" -> "blocks.0": the instance names, without the root, calls on self and free functions.
std::string layer_of_hierarchy(const std::vector<std::string>& frames) {
  std::string layer;
  for (std::size_t i = 1; i < frames.size(); ++i) {
    const std::string& f = frames[i];
    const std::string instance = f.substr(0, f.find('('));
    if (instance.empty() || instance == "SELF" || f.rfind("::", 0) == 0) continue;
    layer += (layer.empty() ? "" : ".") + instance;
  }
  return layer;
}

// TorchScript errors carry a script traceback; the line that says what failed is the one
// starting "RuntimeError:" (or the first line, for other errors).
std::string first_line(const std::string& s) {
  const auto at = s.rfind("RuntimeError: ");
  if (at != std::string::npos) {
    const std::string rest = s.substr(at + 14);
    return rest.substr(0, rest.find('\n'));
  }
  return s.substr(0, s.find('\n'));
}

class ScriptedModel : public RunnableModel {
 public:
  ScriptedModel(std::string path, torch::jit::Module m, std::vector<c10::IValue> inputs, c10::Device dev,
                const ModelInput& in, std::optional<at::ScalarType> autocast, std::string input_signature)
      : path_(std::move(path)),
        m_(std::move(m)),
        inputs_(std::move(inputs)),
        dev_(dev),
        in_(in),
        autocast_(autocast),
        signature_(std::move(input_signature)) {
    for (const auto& p : m_.parameters()) parameters_.push_back(p);
  }

  const std::string& name() const override { return path_; }
  int64_t parameter_count() const override {
    int64_t n = 0;
    for (const auto& p : parameters_) n += p.numel();
    return n;
  }
  std::string input_signature() const override { return signature_; }
  std::string device_kind() const override { return dev_.is_cuda() ? "cuda" : "cpu"; }
  int device_index() const override { return dev_.has_index() ? dev_.index() : 0; }
  int warmup_steps() const override { return 2; }
  std::function<std::string()> layer_source() const override {
    return [] { return layer_of_hierarchy(torch::jit::currentModuleHierarchy()); };
  }
  void synchronize() override {
    if (dev_.is_cuda()) at::accelerator::synchronizeDevice(dev_.index());
  }
  bool trains() const override { return in_.train; }

 protected:
  void run_step() override {
    run_model_step(in_, autocast_, dev_.type(), parameters_, [&] {
      const c10::IValue out = m_.forward(inputs_);
      if (out.isTensor()) return out.toTensor();
      if (out.isTuple())
        for (const auto& e : out.toTupleRef().elements())
          if (e.isTensor()) return e.toTensor();
      return at::Tensor();
    });
  }

 private:
  std::string path_;
  mutable torch::jit::Module m_;
  std::vector<c10::IValue> inputs_;
  c10::Device dev_;
  ModelInput in_;
  std::optional<at::ScalarType> autocast_;
  std::string signature_;
  std::vector<at::Tensor> parameters_;
};

at::Tensor make_input(const TensorSpec& spec, at::ScalarType float_dtype, c10::Device dev, at::Generator& gen) {
  const at::ScalarType st = scalar_type_of(spec.dtype);
  const auto cpu = at::TensorOptions().device(at::kCPU);
  at::Tensor t;
  if (at::isFloatingType(st)) {
    t = spec.range ? at::rand(spec.shape, gen, cpu) * (spec.range->second - spec.range->first) + spec.range->first
                   : at::randn(spec.shape, gen, cpu);
    t = t.to(st == at::kFloat ? float_dtype : st);  // --dtype applies to fp32 inputs
  } else if (st == at::kBool) {
    t = at::randint(0, 2, spec.shape, gen, cpu.dtype(at::kLong)).to(st);
  } else {
    const auto [lo, hi] = spec.range.value_or(std::pair<double, double>{0, 16});
    t = at::randint(int64_t(lo), int64_t(hi), spec.shape, gen, cpu.dtype(at::kLong)).to(st);
  }
  return t.to(dev);
}

}  // namespace

std::unique_ptr<RunnableModel> load_torchscript_model(const std::string& path, const std::vector<std::string>& inputs,
                                                      const ModelInput& in) {
  struct stat st {};  // POSIX: see make_model on libtorch's std::filesystem
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    throw std::invalid_argument(fmt::format("{}: no such file (give a built-in model or a torch.jit.save file)", path));
  const c10::Device dev = resolve_device_option(in.device);
  const at::ScalarType dtype = model_dtype(in.dtype);
  const auto autocast = resolve_autocast(in, dtype);
  // Fused groups are not dispatcher ops: keep every op visible and replayable.
  torch::jit::setTensorExprFuserEnabled(false);
  torch::jit::Module m;
  try {
    m = torch::jit::load(path, dev);
  } catch (const c10::Error& e) {
    throw std::invalid_argument(fmt::format(
        "{}: not a TorchScript file opcost can load ({}); save one with torch.jit.save(torch.jit.script(model), "
        "path) or torch.jit.trace",
        path, first_line(e.what_without_backtrace())));
  }
  if (dtype != at::kFloat) m.to(dtype);
  if (in.train)
    m.train();
  else
    m.eval();

  const c10::FunctionSchema& schema = m.get_method("forward").function().getSchema();
  std::vector<std::string> expected;
  std::size_t required = 0;
  for (std::size_t i = 1; i < schema.arguments().size(); ++i) {  // 0 is self
    const auto& a = schema.arguments()[i];
    expected.push_back(fmt::format("{}: {}", a.name(), a.type()->str()));
    if (!a.default_value()) ++required;
  }
  const std::string wants = fmt::format("forward({})", fmt::join(expected, ", "));
  if (inputs.size() < required || inputs.size() > expected.size())
    throw std::invalid_argument(fmt::format(
        "{}: {} input{} given, but the model's {} takes {}{}; give one --input per argument, e.g. --input "
        "f32[1,3,224,224]",
        path, inputs.size(), inputs.size() == 1 ? "" : "s", wants,
        required == expected.size() ? fmt::format("{}", required) : fmt::format("{} to {}", required, expected.size()),
        inputs.empty() ? " (--input is required for a TorchScript file)" : ""));

  at::Generator gen = at::detail::createCPUGenerator(0);
  std::vector<c10::IValue> values;
  std::vector<std::string> specs;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    ArgValue v;
    try {
      v = parse_value(inputs[i]);
    } catch (const ParseError& e) {
      throw std::invalid_argument(fmt::format("--input '{}': {} at column {}", inputs[i], e.what(), e.column() + 1));
    }
    const auto* spec = std::get_if<TensorSpec>(&v.v);
    if (!spec)
      throw std::invalid_argument(fmt::format("--input '{}': expected a tensor such as f32[1,3,224,224]", inputs[i]));
    values.push_back(make_input(*spec, dtype, dev, gen));
    specs.push_back(format_tensor(tensor_spec_of(values.back().toTensor())));
  }
  auto model = std::make_unique<ScriptedModel>(path, std::move(m), std::move(values), dev, in, autocast,
                                               fmt::format("{}", fmt::join(specs, " ")));
  try {
    model->step();  // the inputs fit, or the user learns why now
    model->synchronize();
  } catch (const std::invalid_argument& e) {  // ours: e.g. --train on a model without a tensor output
    throw std::invalid_argument(fmt::format("{}: {}", path, e.what()));
  } catch (const std::exception& e) {  // an op's error, or the interpreter's rethrow with a script traceback
    const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
    throw std::invalid_argument(fmt::format("{}: the inputs {} do not fit the model's {}:\n  {}", path,
                                            model->input_signature(), wants,
                                            first_line(c10_error ? c10_error->what_without_backtrace() : e.what())));
  }
  return model;
}

}  // namespace opcost
