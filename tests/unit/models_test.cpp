// Built-in models and their inventories, checked on CPU tensors: parameter counts against
// the reference architectures, the observer against torch.profiler (Kineto) on the same run,
// every signature replayable, training and autocast attribution, TorchScript files.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/scalar_tensor.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include "core/inventory/inventory.h"
#include "core/predict/prediction.h"
#include "core/spec/op_call.h"
#include "core/spec/spec_file.h"
#include "core/trace/energy_attribution.h"
#include "torch/model_call.h"
#include "torch/models.h"
#include "torch/observer.h"
#include "torch/replay.h"
#include "torch/runner.h"
#include "workflow/model_inventory.h"
#include "workflow/trace.h"

namespace opcost {
namespace {

// CPU in CI; tests/gpu/run sets OPCOST_TEST_DEVICE=cuda to run the same checks on the GPU
// (where backward ops run on autograd's device threads).
std::string test_device() {
  const char* d = std::getenv("OPCOST_TEST_DEVICE");
  return d && *d ? d : "cpu";
}

ModelInput small(int64_t batch = 2, int64_t seq = 16) {
  ModelInput in;
  in.batch = batch;
  in.seq = seq;
  in.device = test_device();
  return in;
}

Inventory inventory_of(RunnableModel& m, bool backward = false) {
  for (int i = 0; i < m.warmup_steps(); ++i) m.step();
  ObserveOptions o;
  o.backward = backward;
  o.layer_source = m.layer_source();
  return observe([&] { m.step(); }, o);
}

const InventoryEntry* find(const Inventory& inv, const std::string& op, const std::string& phase = "forward") {
  for (const auto& e : inv.entries)
    if (e.op == op && e.phase == phase) return &e;
  return nullptr;
}

std::size_t count_of(const Inventory& inv, const std::string& op, const std::string& phase = "forward") {
  std::size_t n = 0;
  for (const auto& e : inv.entries)
    if (e.op == op && e.phase == phase) n += e.count;
  return n;
}

TEST(Models, ParameterCountsMatchTheReferenceArchitectures) {
  // torchvision resnet18/34/50 and HF distilgpt2 (tied lm_head) parameter counts.
  const std::map<std::string, int64_t> expected = {{"resnet18", 11689512},
                                                   {"resnet34", 21797672},
                                                   {"resnet50", 25557032},
                                                   {"distilgpt2", 81912576},
                                                   {"mnist-cnn", 431080}};
  ASSERT_EQ(builtin_models().size(), expected.size());
  for (const auto& info : builtin_models()) {
    auto m = make_builtin_model(info.name, small(1, 8));
    EXPECT_EQ(m->parameter_count(), expected.at(info.name)) << info.name;
  }
}

TEST(Models, BadInputsAreNamed) {
  ModelInput in = small();
  EXPECT_THROW(
      {
        try {
          make_model("resnet51", {}, in);
        } catch (const std::invalid_argument& e) {
          EXPECT_NE(std::string(e.what()).find("resnet50"), std::string::npos) << e.what();
          throw;
        }
      },
      std::invalid_argument);
  in.dtype = "fp8";
  EXPECT_THROW(make_builtin_model("mnist-cnn", in), std::invalid_argument);
  in = small(1, 2000);
  EXPECT_THROW(make_builtin_model("distilgpt2", in), std::invalid_argument);
  EXPECT_THROW(make_model("mnist-cnn", {"f32[1,1,28,28]"}, small()), std::invalid_argument);
  in = small();
  in.dtype = "bf16";
  in.autocast = "bf16";
  EXPECT_THROW(make_builtin_model("mnist-cnn", in), std::invalid_argument);
}

TEST(Inventory, MnistLayersAndCompositeOpsAreTheUnit) {
  auto m = make_builtin_model("mnist-cnn", small());
  Inventory inv = inventory_of(*m);
  // Python's nn.Linear calls aten::linear: that is the unit, with addmm nested inside.
  const InventoryEntry* linear = find(inv, "aten::linear");
  ASSERT_NE(linear, nullptr);
  EXPECT_EQ(count_of(inv, "aten::linear"), 2u);
  EXPECT_EQ(count_of(inv, "aten::addmm"), 0u);
  EXPECT_EQ(linear->layers, std::vector<std::string>{"fc1"});
  EXPECT_EQ(linear->nested.count("aten::addmm"), 1u);
  EXPECT_EQ(linear->args, "input=f32[2,800] weight=f32[500,800] bias=f32[500]");
  EXPECT_EQ(count_of(inv, "aten::conv2d"), 2u);
  EXPECT_EQ(inv.sequence.size(), 10u);  // conv,relu,pool ×2, flatten, linear, relu, linear
  EXPECT_EQ(find(inv, "aten::flatten")->layers, std::vector<std::string>{""});  // the model's own forward
}

TEST(Inventory, InputsAreClassedAsTheModelReadsThemAgainstACacheSize) {
  auto m = make_builtin_model("mnist-cnn", small());
  for (int i = 0; i < m->warmup_steps(); ++i) m->step();
  ObserveOptions o;
  o.cache_bytes = 64 << 10;  // fc1's weight alone is 1.6 MB
  const Inventory inv = observe([&] { m->step(); }, o);
  EXPECT_EQ(inv.cache_bytes, 64u << 10);
  const InventoryEntry* fc1 = nullptr;
  for (const auto& e : inv.entries)
    if (e.op == "aten::linear" && e.layers == std::vector<std::string>{"fc1"}) fc1 = &e;
  ASSERT_NE(fc1, nullptr);
  // Its weight was last read a step ago; its input is the flatten of the pool just written.
  EXPECT_NE(std::find(fc1->cold_args.begin(), fc1->cold_args.end(), "weight"), fc1->cold_args.end());
  EXPECT_EQ(std::find(fc1->cold_args.begin(), fc1->cold_args.end(), "input"), fc1->cold_args.end());
  for (const auto& e : inv.entries)
    if (e.op == "aten::relu") EXPECT_TRUE(e.cold_args.empty()) << e.signature() << " " << e.cache_mode();
  // Every cold entry replays in its cache mode.
  for (const auto& e : inv.entries) {
    ReplayOptions ro;
    ro.device = test_device();
    ro.cache_mode = e.cache_mode();
    ro.cold_footprint_bytes = 1 << 20;
    EXPECT_NO_THROW(PreparedCall::prepare(parse_call_line(e.signature(), "inventory"), ro)) << e.signature();
  }
  // A cache that holds the whole step: every input warm, and the same entries as unclassed.
  o.cache_bytes = 1ull << 30;
  const Inventory roomy = observe([&] { m->step(); }, o);
  for (const auto& e : roomy.entries) EXPECT_TRUE(e.cold_args.empty()) << e.signature();
  EXPECT_EQ(roomy.entries.size(), observe([&] { m->step(); }).entries.size());
}

TEST(Inventory, ViewsAreToldFromTheirSchemaAndReadNothingCold) {
  // Each call's input was last touched with 256 KiB of other data between (the step repeats):
  // all of them are read from memory by distance, against a cache of 1 KiB.
  const at::Tensor a = at::ones({64, 1024}), big = at::ones({64, 1024});
  ObserveOptions o;
  o.cache_bytes = 1 << 10;
  const Inventory inv = observe(
      [&] {
        at::Tensor r = a.mul(2);
        r.add_(1);
        at::Tensor n = big.narrow(1, 0, 64);
        at::Tensor d = big.detach();
        // Schemas that MAY alias: a view where the input allows it, else a copy.
        at::Tensor viewed = big.reshape({1024, 64});
        at::Tensor copied = big.t().reshape({-1});  // transposed, flattened: a copy
        at::Tensor packed = big.t().contiguous();   // a copy
        at::Tensor half = big.to(at::kHalf);        // another dtype: a copy
      },
      o);
  std::map<std::string, const InventoryEntry*> by_op;
  for (const auto& e : inv.entries) by_op[e.display_name()] = &e;
  ASSERT_TRUE(by_op.count("aten::narrow") && by_op.count("aten::detach") && by_op.count("aten::mul.Scalar") &&
              by_op.count("aten::add_.Scalar"))
      << [&] {
           std::string names;
           for (const auto& e : inv.entries) names += e.display_name() + " ";
           return names;
         }();
  EXPECT_TRUE(by_op["aten::narrow"]->returns_views);
  EXPECT_TRUE(by_op["aten::detach"]->returns_views);
  EXPECT_FALSE(by_op["aten::mul.Scalar"]->returns_views);
  EXPECT_FALSE(by_op["aten::add_.Scalar"]->returns_views);  // returns its self, but writes it
  std::vector<bool> reshapes;                               // of the contiguous tensor, then of the transposed one
  for (const auto& e : inv.entries)
    if (e.op == "aten::reshape") reshapes.push_back(e.returns_views);
  EXPECT_EQ(reshapes, (std::vector<bool>{true, false}));
  ASSERT_TRUE(by_op.count("aten::contiguous") && by_op.count("aten::to.dtype"));
  EXPECT_FALSE(by_op["aten::contiguous"]->returns_views);
  EXPECT_FALSE(by_op["aten::to.dtype"]->returns_views);
  // The view's input is as far back as mul's, yet a view reads none of it.
  EXPECT_TRUE(by_op["aten::narrow"]->cold_args.empty());
  EXPECT_EQ(by_op["aten::mul.Scalar"]->cold_args, std::vector<std::string>{"self"});
}

TEST(Inventory, HostTimingStepsSeeTheSignatureStepsCallsAndAccountForTheWholeStep) {
  // Timing steps switch RecordFunction off inside each outermost call: they must still see
  // every outermost call (and its end), in the same order, forward and backward.
  for (const bool train : {false, true}) {
    ModelInput in = small();
    in.train = train;
    auto m = make_builtin_model("resnet18", in);
    const Inventory full = inventory_of(*m, train);
    ObserveOptions o;
    o.inputs = false;
    o.host_times_only = true;
    const Inventory timed = observe([&] { m->step(); }, o);
    EXPECT_TRUE(same_calls(full, timed)) << (train ? "train" : "inference");
    double sum = timed.host_after_last_call_us;
    for (const auto& c : timed.sequence) {
      EXPECT_GT(c.host_us, 0);
      EXPECT_GE(c.host_gap_us, 0);
      sum += c.host_us + c.host_gap_us;
    }
    // Calls, the gaps before them and the code after the last make up the step (on the CPU
    // every call runs on this thread, one after another).
    EXPECT_NEAR(sum, timed.host_step_us, 0.01 * timed.host_step_us);
  }
}

TEST(Inventory, TakeInventoryCalibratesHostTimesAgainstPlainSteps) {
  auto m = make_builtin_model("mnist-cnn", small());
  ModelOptions mo;
  mo.model = "mnist-cnn";
  mo.in = small();
  const Inventory inv = take_inventory(*m, mo, 4);
  EXPECT_EQ(inv.host_calibration.rounds, 4);
  EXPECT_GT(inv.host_calibration.plain_step_us, 0);
  EXPECT_GT(inv.host_calibration.observed_step_us, 0);
  EXPECT_GT(inv.host_step_us, 0);
  const ModelHostTimes host = model_host_times(inv);
  ASSERT_EQ(host.in_call_us.size(), inv.sequence.size());
  for (std::size_t i = 0; i < inv.sequence.size(); ++i)
    EXPECT_DOUBLE_EQ(host.in_call_us[i], inv.sequence[i].host_us * inv.host_calibration.scale());
}

TEST(Inventory, ResNetBlocksOwnTheirResidualAdds) {
  auto m = make_builtin_model("resnet18", small(1));
  Inventory inv = inventory_of(*m);
  EXPECT_EQ(count_of(inv, "aten::conv2d"), 20u);
  EXPECT_EQ(count_of(inv, "aten::batch_norm"), 20u);
  EXPECT_EQ(count_of(inv, "aten::add"), 8u);
  const InventoryEntry* add = find(inv, "aten::add");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->layers.front(), "layer1.0");
  std::set<std::string> layers;
  for (const auto& c : inv.sequence) layers.insert(c.layer);
  EXPECT_TRUE(layers.count("layer3.1.conv2"));
  EXPECT_TRUE(layers.count("layer2.0.downsample.0"));
  EXPECT_TRUE(layers.count("fc"));
}

TEST(Inventory, Gpt2AttentionMathIsCountedInItsBlock) {
  auto m = make_builtin_model("distilgpt2", small(1, 8));
  Inventory inv = inventory_of(*m);
  EXPECT_EQ(count_of(inv, "aten::scaled_dot_product_attention"), 6u);
  EXPECT_EQ(count_of(inv, "aten::linear"), 6u * 4 + 1);  // 4 per block + tied lm_head
  EXPECT_EQ(count_of(inv, "aten::layer_norm"), 6u * 2 + 1);
  EXPECT_EQ(count_of(inv, "aten::gelu"), 6u);
  EXPECT_EQ(find(inv, "aten::scaled_dot_product_attention")->layers.front(), "transformer.h.0.attn");
  EXPECT_EQ(find(inv, "aten::gelu")->args, "self=f32[1,8,3072] approximate=tanh");
}

// ---------------------------------------------------------------- against torch.profiler

struct ProfiledOp {
  std::string name;
  std::vector<std::vector<int64_t>> shapes;  // non-empty input shapes, in schema order
  bool outermost = false;
};

// The same step under the Kineto profiler (what torch.profiler runs) with record_shapes.
std::vector<ProfiledOp> profile(RunnableModel& m) {
  using namespace torch::autograd::profiler;
  namespace impl = torch::profiler::impl;
  const impl::ProfilerConfig cfg(impl::ProfilerState::KINETO, /*report_input_shapes=*/true);
  const std::set<impl::ActivityType> acts = {impl::ActivityType::CPU};
  prepareProfiler(cfg, acts);
  enableProfiler(cfg, acts);
  m.step();
  auto result = disableProfiler();
  // Dispatcher ops only (not the profiler's own ranges), on the thread that ran the model.
  struct Ev {
    uint64_t start, end, id;
    ProfiledOp op;
  };
  std::vector<Ev> evs;
  std::map<uint64_t, std::size_t> per_thread;
  std::set<std::string> op_names;  // Kineto events carry no overload name
  for (const auto& n : c10::Dispatcher::singleton().getAllOpNames()) op_names.insert(n.name);
  for (const auto& e : result->events()) {
    if (e.deviceType() != c10::DeviceType::CPU) continue;
    if (!op_names.count(e.name())) continue;
    ProfiledOp op{e.name(), {}};
    for (const auto& s : e.shapes())
      if (!s.empty()) op.shapes.push_back(s);
    evs.push_back({e.startNs(), e.endNs(), e.correlationId(), op});
    ++per_thread[e.startThreadId()];
  }
  // Parents first: earlier start, then later end, then the record opened first (an op and
  // its only nested call can share both timestamps at the clock's resolution).
  std::sort(evs.begin(), evs.end(), [](const Ev& a, const Ev& b) {
    if (a.start != b.start) return a.start < b.start;
    if (a.end != b.end) return a.end > b.end;
    return a.id < b.id;
  });
  std::vector<ProfiledOp> out;
  uint64_t open_until = 0;
  for (auto& e : evs) {
    e.op.outermost = e.start >= open_until;
    if (e.op.outermost) open_until = e.end;
    out.push_back(e.op);
  }
  return out;
}

std::vector<std::vector<int64_t>> shapes_of(const InventoryEntry& e) {
  OpCall call = parse_call_line(e.signature(), "inventory");
  std::vector<std::vector<int64_t>> out;
  std::function<void(const ArgValue&)> visit = [&](const ArgValue& v) {
    if (auto* t = std::get_if<TensorSpec>(&v.v)) {
      if (!t->shape.empty()) out.push_back(t->shape);
    }
  };
  for (const auto& a : call.args) visit(a.value);
  return out;
}

class EveryBuiltinModel : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryBuiltinModel, InventoryMatchesTorchProfilerAndEverySignatureReplays) {
  const std::string name = GetParam();
  auto m = make_builtin_model(name, small(name == "distilgpt2" ? 1 : 2, 8));
  Inventory inv = inventory_of(*m);
  m->step();  // the profiled run repeats the observed one
  std::vector<ProfiledOp> prof = profile(*m);

  // 1. The outermost calls, in order, with their tensor shapes.
  std::vector<const ProfiledOp*> outer;
  for (const auto& p : prof)
    if (p.outermost) outer.push_back(&p);
  ASSERT_EQ(outer.size(), inv.sequence.size()) << name;
  for (std::size_t i = 0; i < outer.size(); ++i) {
    const InventoryEntry& e = inv.entries[inv.sequence[i].entry];
    ASSERT_EQ(outer[i]->name, e.op) << name << " call " << i;
    ASSERT_EQ(outer[i]->shapes, shapes_of(e)) << name << " call " << i << ": " << e.signature();
  }
  // 2. Every dispatcher call, nested ones included, by name.
  std::map<std::string, std::size_t> theirs, ours;
  for (const auto& p : prof) ++theirs[p.name];
  for (const auto& e : inv.entries) {
    ours[e.op] += e.count;
    for (const auto& [n, k] : e.nested) ours[n] += k;
  }
  EXPECT_EQ(ours, theirs) << name;

  // 3. Every unique signature replays through `opcost measure`'s path.
  ReplayOptions ro;
  ro.device = test_device();
  for (const auto& e : inv.entries) {
    OpCall call = parse_call_line(e.signature(), "inventory");
    std::unique_ptr<PreparedCall> p;
    ASSERT_NO_THROW(p = PreparedCall::prepare(call, ro)) << e.signature();
    EXPECT_EQ(p->canonical_args(), e.args) << "replay normalises the signature differently";
  }
}

INSTANTIATE_TEST_SUITE_P(Builtin, EveryBuiltinModel,
                         ::testing::Values("mnist-cnn", "resnet18", "resnet34", "resnet50", "distilgpt2"),
                         [](const auto& info) {
                           std::string s = info.param;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

// ---------------------------------------------------------------- modes

TEST(Inventory, TrainingAttributesBackwardOpsToTheirForwardLayer) {
  ModelInput in = small();
  in.train = true;
  auto m = make_builtin_model("mnist-cnn", in);
  Inventory inv = inventory_of(*m, /*backward=*/true);
  // conv1 needs no input gradient (output_mask differs), so two signatures, one per layer.
  EXPECT_EQ(count_of(inv, "aten::convolution_backward", "backward"), 2u);
  std::set<std::string> layers;
  for (const auto& e : inv.entries)
    if (e.phase == "backward" && e.op == "aten::convolution_backward") layers.insert(e.layers.begin(), e.layers.end());
  EXPECT_EQ(layers, (std::set<std::string>{"conv1", "conv2"}));
  // linear's backward: mm for the input and weight gradients, attributed to fc1 / fc2.
  std::set<std::string> mm_layers;
  for (const auto& e : inv.entries)
    if (e.phase == "backward" && e.op == "aten::mm") mm_layers.insert(e.layers.begin(), e.layers.end());
  EXPECT_TRUE(mm_layers.count("fc1") && mm_layers.count("fc2"));
  // Forward ops still run once each, and the loss is its own layer.
  EXPECT_EQ(count_of(inv, "aten::linear"), 2u);
  EXPECT_EQ(find(inv, "aten::sum")->layers, std::vector<std::string>{"loss"});
  // Every backward op has a forward layer ("" is the model's own forward, where flatten ran),
  // except gradient accumulation into the parameters.
  std::set<std::string> forward_layers;
  for (const auto& c : inv.sequence)
    if (inv.entries[c.entry].phase == "forward") forward_layers.insert(c.layer);
  for (const auto& e : inv.entries)
    if (e.phase == "backward")
      for (const auto& l : e.layers)
        EXPECT_TRUE(forward_layers.count(l) || (l == "(accumulate-grad)" && e.op == "aten::detach"))
            << e.signature() << " in " << l;
}

// A face whose step records the modes it ran under: what every face's step gets from
// RunnableModel::step(), Python's included.
class ModeRecordingModel : public RunnableModel {
 public:
  explicit ModeRecordingModel(bool train) : train_(train) {}
  struct Modes {
    bool grad, inference;
  };
  std::vector<Modes> seen;
  const std::string& name() const override { return name_; }
  int64_t parameter_count() const override { return 0; }
  std::string input_signature() const override { return "f32[1]"; }
  std::string device_kind() const override { return "cpu"; }
  int device_index() const override { return 0; }
  bool trains() const override { return train_; }
  void synchronize() override {}

 protected:
  void run_step() override { seen.push_back({c10::GradMode::is_enabled(), c10::InferenceMode::is_enabled()}); }

 private:
  bool train_;
  std::string name_ = "mode-recorder";
};

TEST(Models, AStepRunsUnderItsOwnGradAndInferenceModesWhateverTheCallers) {
  ModeRecordingModel train(true), inference(false);
  {
    c10::InferenceMode caller;  // as the measurement loop runs every call
    train.step();
  }
  {
    c10::NoGradGuard caller;  // Python's torch.no_grad()
    train.step();
  }
  inference.step();  // the caller's default: grad mode on
  ASSERT_EQ(train.seen.size(), 2u);
  for (const auto& m : train.seen) EXPECT_TRUE(m.grad && !m.inference);
  ASSERT_EQ(inference.seen.size(), 1u);
  EXPECT_TRUE(!inference.seen[0].grad && inference.seen[0].inference);
  EXPECT_TRUE(c10::GradMode::is_enabled() && !c10::InferenceMode::is_enabled());  // the caller's, restored
}

// A face that says how the workflow asked it to record generated kernels' launches.
class KernelWatchRecordingModel : public ModeRecordingModel {
 public:
  KernelWatchRecordingModel() : ModeRecordingModel(false) {}
  std::vector<std::pair<bool, KernelRecords>> watches;
  void watch_compiled_kernels(bool on, KernelRecords records) override { watches.push_back({on, records}); }

 protected:
  void run_step() override { at::mul(at::ones({2}), 2); }
};

TEST(Inventory, TheRecordedStepWritesGeneratedKernelsArgumentsAndTheTimingRoundsTheirNamesAlone) {
  KernelWatchRecordingModel m;
  ModelOptions mo;
  mo.model = "watch-recorder";
  const Inventory inv = take_inventory(m, mo, 3);
  EXPECT_EQ(inv.host_calibration.rounds, 3);
  using W = std::pair<bool, KernelRecords>;
  std::vector<W> expected = {{true, KernelRecords::kWithArguments}, {false, KernelRecords::kWithArguments}};
  for (int i = 0; i < 3; ++i) {
    expected.push_back({true, KernelRecords::kNamesOnly});
    expected.push_back({false, KernelRecords::kNamesOnly});
  }
  EXPECT_EQ(m.watches, expected);
}

TEST(Models, AMeasuredTrainingStepRunsWithAutogradAndItsBackward) {
  // The path `validate --train` measures the whole step on: the runner's loop, in inference mode.
  MeasureConfig cfg;
  cfg.energy = false;
  cfg.time.max_seconds = 0.05;
  cfg.synchronous_calls = true;
  Runner runner("cpu", 0, cfg);
  ModelInput in;
  in.train = true;
  ModeRecordingModel recorder(true);
  ModelCall recorded(recorder, in);
  const Measurement r = runner.measure(recorded);
  EXPECT_EQ(r.overload, "train");
  ASSERT_FALSE(recorder.seen.empty());
  for (const auto& m : recorder.seen) EXPECT_TRUE(m.grad && !m.inference);
  // A real model: its backward runs (it would throw without a graph), and the step is timed.
  in = small();
  in.train = true;
  auto mnist = make_builtin_model("mnist-cnn", in);
  ModelCall step(*mnist, in);
  Runner on_its_device(mnist->device_kind(), mnist->device_index(), cfg);
  EXPECT_GT(on_its_device.measure(step).time.per_call_us.median, 0.0);
}

// Energy per call (opcost trace --energy) charges each traced call with the measurement of the
// inventory call it matches: every call of every kept step must find its own.
TEST(Inventory, EveryTracedCallMatchesTheInventoryCallOfTheSameOperator) {
  for (const auto& [name, train] : std::vector<std::pair<std::string, bool>>{
           {"mnist-cnn", false}, {"mnist-cnn", true}, {"resnet18", false}, {"distilgpt2", false}}) {
    SCOPED_TRACE(name + (train ? " --train" : ""));
    ModelOptions mo{name, {}, small(1)};
    mo.in.train = train;
    auto model = make_model(name, {}, mo.in);
    const Inventory inv = take_inventory(*model, mo, 1);
    TraceRecordOptions ro;
    ro.schedule.active = 2;
    const TraceRun run = trace_model(mo, ro, nullptr, Notes{});
    ASSERT_EQ(run.steps.size(), 2u);
    const std::vector<int> match = match_inventory_calls(run, inv);
    std::size_t in_steps = 0;
    for (std::size_t i = 0; i < run.ops.size(); ++i) {
      if (run.ops[i].step < 0) continue;
      ++in_steps;
      ASSERT_GE(match[i], 0) << run.ops[i].name << " in step " << run.ops[i].step;
      EXPECT_EQ(inv.entries[inv.sequence[std::size_t(match[i])].entry].op, run.ops[i].name);
    }
    EXPECT_EQ(in_steps, 2 * inv.sequence.size());
  }
}

TEST(Inventory, AutocastRecordsTheCastsAndReplaysUnderAutocast) {
  ModelInput in = small();
  in.autocast = "bf16";
  auto m = make_builtin_model("mnist-cnn", in);
  Inventory inv = inventory_of(*m);
  const InventoryEntry* linear = find(inv, "aten::linear");
  ASSERT_NE(linear, nullptr);
  // As the model called it: the conv before ran in bf16, linear casts its fp32 weights inside.
  EXPECT_EQ(linear->args, "input=bf16[2,800] weight=f32[500,800] bias=f32[500]");
  EXPECT_GE(linear->nested.count("aten::_to_copy"), 1u);  // autocast's casts, inside
  ReplayOptions ro;
  ro.device = test_device();
  ro.autocast = "bf16";
  auto p = PreparedCall::prepare(parse_call_line(linear->signature(), "inventory"), ro);
  EXPECT_EQ(p->autocast(), "bf16");
  Inventory replayed = observe([&] { p->call(); });
  ASSERT_EQ(replayed.entries.size(), 1u);
  EXPECT_EQ(replayed.entries[0].nested, linear->nested);  // the same casts and kernels as in the model
}

// ---------------------------------------------------------------- TorchScript

TEST(TorchScript, LayerNamesAndCountsComeFromTheModuleHierarchy) {
  const std::string python = OPCOST_TEST_PYTHON, maker = OPCOST_TEST_MAKE_TORCHSCRIPT;
  if (python.empty())
    GTEST_SKIP() << "LibTorch came from OPCOST_TORCH_ROOT: no Python with this torch to script a model";
  // Shell and POSIX, not std::filesystem: libtorch.so exports a remove_all that crashes.
  char tmpl[] = "/tmp/opcost_ts_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, file = dir + "/net.pt";
  ASSERT_EQ(std::system(fmt::format("'{}' '{}' '{}'", python, maker, file).c_str()), 0);

  auto m = make_model(file, {"f32[2,3,8,8]"}, small());
  EXPECT_EQ(m->parameter_count(), 3 * 4 * 9 + 4 + 2 * (8 * 8 + 8) + 8 * 2 + 2);
  Inventory inv = inventory_of(*m);
  std::map<std::string, std::vector<std::string>> layers_of;
  for (const auto& e : inv.entries) layers_of[e.op].insert(layers_of[e.op].end(), e.layers.begin(), e.layers.end());
  EXPECT_EQ(count_of(inv, "aten::linear"), 3u);
  EXPECT_EQ(layers_of["aten::linear"], (std::vector<std::string>{"blocks.0.fc", "blocks.1.fc", "head"}));
  EXPECT_EQ(layers_of["aten::conv2d"], std::vector<std::string>{"conv"});
  EXPECT_EQ(layers_of["aten::relu"], (std::vector<std::string>{"blocks.0.act", "blocks.1.act"}));
  EXPECT_EQ(layers_of["aten::add"], (std::vector<std::string>{"blocks.0", "blocks.1"}));
  EXPECT_EQ(layers_of["aten::flatten"], std::vector<std::string>{""});

  // A trace of it: its calls' layers come from the module hierarchy too, nested.
  TraceRecordOptions ro;
  ro.schedule.active = 2;
  const TraceRun run = trace_model(ModelOptions{file, {"f32[2,3,8,8]"}, small()}, ro, nullptr, Notes{});
  std::map<std::string, std::size_t> linear_layers;
  for (const auto& op : run.ops)
    if (op.step >= 0 && op.name == "aten::linear")
      ++linear_layers[op.layer >= 0 ? run.layers[std::size_t(op.layer)].name : "(no layer)"];
  EXPECT_EQ(linear_layers, (std::map<std::string, std::size_t>{{"blocks.0.fc", 2}, {"blocks.1.fc", 2}, {"head", 2}}));
  std::size_t nested = 0;
  for (const auto& l : run.layers)
    if (l.name == "blocks.0.fc") {
      ASSERT_GE(l.parent, 0);
      EXPECT_EQ(run.layers[std::size_t(l.parent)].name, "blocks.0");
      ++nested;
    }
  EXPECT_EQ(nested, 2u);  // one per kept step

  // Inputs that do not fit are named with what the model's forward takes.
  try {
    make_model(file, {"f32[2,5,8,8]"}, small());
    FAIL() << "a 5-channel input should not fit a 3-channel conv";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("do not fit"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("forward(x: Tensor)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(make_model(file, {}, small()), std::invalid_argument);
  const std::string junk = dir + "/junk.pt";
  ASSERT_EQ(std::system(fmt::format("echo not-a-model > '{}'", junk).c_str()), 0);
  EXPECT_THROW(make_model(junk, {"f32[1]"}, small()), std::invalid_argument);
  ASSERT_EQ(std::system(fmt::format("rm -rf '{}'", dir).c_str()), 0);
}

}  // namespace
}  // namespace opcost

TEST(Inventory, ACpuScalarBesideDeviceTensorsKeepsItsDevice) {
  using namespace opcost;
  // `x * 0.5` in Python on a GPU tensor is aten::mul.Tensor with a 0-dim CPU tensor: replayed
  // on the GPU it would run another kernel. The meta device stands in for a GPU on the CPU.
  c10::InferenceMode guard;
  const auto x = at::empty({4, 8}, at::TensorOptions().device(at::kMeta));
  const auto half = at::scalar_tensor(0.5, at::kDouble), ones = at::ones({4});
  const Inventory inv = observe([&] {
    (void)at::mul(x, half);
    // All on the CPU in a step on a device: the CPU ran it (AdamW's step counters), and replayed
    // on the device it would cost kernels the step never ran.
    (void)at::mul(ones, half);
  });
  ASSERT_EQ(inv.entries.size(), 2u);
  EXPECT_EQ(inv.entries[0].signature(), "aten::mul.Tensor self=f32[4,8] other=f64[]:cpu");
  EXPECT_EQ(inv.entries[1].signature(), "aten::mul.Tensor self=f32[4]:cpu other=f64[]:cpu");
  // A step all on the CPU marks nothing: the CPU is its device.
  const Inventory cpu_step = observe([&] { (void)at::mul(ones, half); });
  ASSERT_EQ(cpu_step.entries.size(), 1u);
  EXPECT_EQ(cpu_step.entries[0].signature(), "aten::mul.Tensor self=f32[4] other=f64[]");
}

TEST(Inventory, AGeneratedKernelsLaunchIsACallOfItsOwnInItsLayer) {
  using namespace opcost;
  // What opcost/_compiled.py does around each launch of a kernel torch.compile generated.
  const Inventory inv = observe([&] {
    open_layer_scope("block.ln");
    open_compiled_kernel_record("compiled::triton_poi_fused_relu_0.h0123456789ab", {"f32[4,8]", "f32[4,8]", "32"});
    (void)at::ones({2});  // inside the launch: the kernel's own, not a call of the model's
    close_compiled_kernel_record();
    close_layer_scope();
    open_compiled_kernel_record("compiled::cpp_fused_mul_1.hba9876543210", {"f32[4,8]"});
    close_compiled_kernel_record();
  });
  ASSERT_EQ(inv.entries.size(), 2u);
  EXPECT_EQ(inv.entries[0].signature(),
            "compiled::triton_poi_fused_relu_0.h0123456789ab arg0=f32[4,8] arg1=f32[4,8] arg2=32");
  EXPECT_EQ(inv.entries[0].layers, std::vector<std::string>{"block.ln"});
  EXPECT_EQ(inv.entries[0].nested.count("aten::ones"), 1u);
  EXPECT_EQ(inv.entries[1].display_name(), "compiled::cpp_fused_mul_1.hba9876543210");
  EXPECT_EQ(inv.entries[1].layers, std::vector<std::string>{""});
  // Outside an observation the records cost nothing and are seen by no one.
  open_compiled_kernel_record("compiled::k.h1", {"f32[1]"});
  close_compiled_kernel_record();
  close_compiled_kernel_record();  // one close too many does nothing
}

TEST(Inventory, AnOutOverloadIsListedAsItsFunctionalTwin) {
  using namespace opcost;
  // torch.compile's code calls ATen through out= overloads into buffers it planned; a replay
  // allocates its output, so the call is the functional overload with the same arguments.
  c10::InferenceMode guard;
  const auto a = at::ones({4, 8}), b = at::ones({8, 3}), bias = at::ones({3});
  auto out = at::empty({4, 3});
  const Inventory inv = observe([&] {
    (void)at::addmm_out(out, bias, a, b);
    (void)at::mm_out(out, a, b);
  });
  ASSERT_EQ(inv.entries.size(), 2u);
  EXPECT_EQ(inv.entries[0].signature(), "aten::addmm self=f32[3] mat1=f32[4,8] mat2=f32[8,3]");
  EXPECT_EQ(inv.entries[1].signature(), "aten::mm self=f32[4,8] mat2=f32[8,3]");
}
