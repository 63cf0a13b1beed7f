// Schema-driven argument construction and replay, on CPU tensors: each op replayed through
// the dispatcher gives exactly what a direct call of the op gives on the same inputs.
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <functional>

#include "core/spec/arg_value.h"
#include "core/spec/op_call.h"
#include "core/spec/spec_file.h"
#include "replay_test_support.h"
#include "torch/bind.h"
#include "torch/canonical_form.h"
#include "torch/dtype_codes.h"
#include "torch/replay.h"

using namespace opcost;
using Inputs = std::vector<c10::IValue>;

namespace {

using opcost::test_support::call_of;
using opcost::test_support::test_device;

struct Case {
  std::string line;
  std::function<at::Tensor(const Inputs&)> direct;  // the op called directly, same inputs
};

at::Tensor T(const Inputs& in, std::size_t i) { return in[i].toTensor(); }
std::optional<at::Tensor> OT(const Inputs& in, std::size_t i) { return in[i].toOptional<at::Tensor>(); }

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"aten::conv2d input=f32[2,8,10,10] weight=f32[4,8,3,3] bias=f32[4] padding=[1,1] stride=2",
       [](const Inputs& in) {
         return at::conv2d(T(in, 0), T(in, 1), OT(in, 2), {2, 2}, {1, 1});
       }},
      {"aten::linear input=f32[4,16] weight=f32[8,16] bias=f32[8]",
       [](const Inputs& in) { return at::linear(T(in, 0), T(in, 1), OT(in, 2)); }},
      {"aten::addmm self=f32[12] mat1=f32[5,7] mat2=f32[7,12] beta=0.5 alpha=2",
       [](const Inputs& in) { return at::addmm(T(in, 0), T(in, 1), T(in, 2), 0.5, 2); }},
      {"aten::bmm self=f32[3,4,5] mat2=f32[3,5,6]", [](const Inputs& in) { return at::bmm(T(in, 0), T(in, 1)); }},
      {"aten::matmul self=f32[2,3,4,5] other=f32[5,6]",
       [](const Inputs& in) { return at::matmul(T(in, 0), T(in, 1)); }},
      {"aten::layer_norm input=f32[4,32] normalized_shape=[32] weight=f32[32] bias=f32[32] eps=1e-5",
       [](const Inputs& in) { return at::layer_norm(T(in, 0), {32}, OT(in, 2), OT(in, 3), 1e-5); }},
      {"aten::native_layer_norm input=f32[4,32] normalized_shape=[32] weight=f32[32] bias=f32[32] eps=1e-5",
       [](const Inputs& in) { return std::get<0>(at::native_layer_norm(T(in, 0), {32}, OT(in, 2), OT(in, 3), 1e-5)); }},
      {"aten::softmax.int self=f32[4,50] dim=-1", [](const Inputs& in) { return at::softmax(T(in, 0), -1); }},
      {"aten::gelu self=f32[64] approximate=tanh", [](const Inputs& in) { return at::gelu(T(in, 0), "tanh"); }},
      {"aten::relu self=f32[3,7]", [](const Inputs& in) { return at::relu(T(in, 0)); }},
      {"aten::add.Tensor self=f32[4,5] other=f32[5] alpha=3",
       [](const Inputs& in) { return at::add(T(in, 0), T(in, 1), 3); }},
      {"aten::mul.Tensor self=bf16[4,5] other=bf16[4,5]", [](const Inputs& in) { return at::mul(T(in, 0), T(in, 1)); }},
      {"aten::embedding weight=f32[100,16] indices=i64[4,9]",
       [](const Inputs& in) { return at::embedding(T(in, 0), T(in, 1)); }},
      {"aten::scaled_dot_product_attention query=f32[2,4,16,8] key=f32[2,4,16,8] value=f32[2,4,16,8] is_causal=true",
       [](const Inputs& in) {
         return at::scaled_dot_product_attention(T(in, 0), T(in, 1), T(in, 2), std::nullopt, 0.0, true);
       }},
      {"aten::max_pool2d self=f32[2,3,16,16] kernel_size=[3,3] stride=[2,2] padding=[1,1]",
       [](const Inputs& in) {
         return at::max_pool2d(T(in, 0), {3, 3}, {2, 2}, {1, 1});
       }},
      {"aten::batch_norm input=f32[4,6,5,5] weight=f32[6] bias=f32[6] running_mean=f32[6] "
       "running_var=f32[6]:range[0.5,1.5] "
       "training=false momentum=0.1 eps=1e-5 cudnn_enabled=true",
       [](const Inputs& in) {
         return at::batch_norm(T(in, 0), OT(in, 1), OT(in, 2), OT(in, 3), OT(in, 4), false, 0.1, 1e-5, true);
       }},
      {"aten::cat tensors=[f32[2,3],f32[4,3]] dim=0",
       [](const Inputs& in) { return at::cat(in[0].toTensorList().vec(), 0); }},
      {"aten::view self=f32[4,6] size=[3,8]",
       [](const Inputs& in) {
         return T(in, 0).view({3, 8});
       }},
      {"aten::reshape self=f32[4,6]:stride[1,4] shape=[24]", [](const Inputs& in) { return T(in, 0).reshape({24}); }},
      {"aten::sum.dim_IntList self=f32[4,6] dim=[1] keepdim=true dtype=f64",
       [](const Inputs& in) { return at::sum(T(in, 0), {1}, true, at::kDouble); }},
      {"aten::nll_loss self=f32[8,10] target=i64[8] reduction=sum",
       [](const Inputs& in) { return at::nll_loss(T(in, 0), T(in, 1), {}, at::Reduction::Sum); }},
      // A string with a comma and an arrow, quoted; a complex scalar.
      {"aten::einsum equation=\"bd,de->be\" tensors=[f32[2,3],f32[3,4]]",
       [](const Inputs& in) { return at::einsum("bd,de->be", in[1].toTensorList().vec()); }},
      {"aten::mul.Scalar self=c64[4] other=1.5-2.0j",
       [](const Inputs& in) { return at::mul(T(in, 0), c10::complex<double>(1.5, -2.0)); }},
      {"aten::upsample_nearest2d.vec input=f32[1,2,4,4] output_size=None scale_factors=[2.0,1.5]",
       [](const Inputs& in) {
         return at::upsample_nearest2d(T(in, 0), std::nullopt, std::vector<double>{2.0, 1.5});
       }},
  };
  return c;
}

}  // namespace

class ReplayEqualsDirectCall : public ::testing::TestWithParam<std::size_t> {};

TEST_P(ReplayEqualsDirectCall, SameInputsSameOutput) {
  const Case& c = cases()[GetParam()];
  c10::InferenceMode guard;
  BoundCall b = bind_call(call_of(c.line), test_device(), 0);
  ASSERT_EQ(b.inputs[0].isTensor() ? b.inputs[0].toTensor().device().type() : test_device().type(),
            test_device().type());
  std::vector<c10::IValue> stack = b.inputs;
  b.handle->callBoxed(stack);
  ASSERT_GE(stack.size(), 1u) << c.line;
  const at::Tensor replayed = stack[0].toTensor();
  const at::Tensor direct = c.direct(b.inputs);
  ASSERT_EQ(replayed.sizes(), direct.sizes()) << c.line;
  // Same inputs, same kernels: bitwise equal (cuDNN/cuBLAS are deterministic for these).
  EXPECT_TRUE(at::allclose(replayed, direct, 1e-5, 1e-6)) << c.line;
  EXPECT_TRUE(at::equal(replayed, direct)) << c.line;
  EXPECT_FALSE(replayed.isnan().any().item<bool>()) << c.line;
}

INSTANTIATE_TEST_SUITE_P(Ops, ReplayEqualsDirectCall, ::testing::Range<std::size_t>(0, cases().size()));

TEST(Bind, CanonicalFormOmitsDefaultsAndNormalises) {
  BoundCall b = bind_call(call_of("conv2d f32[1,3,8,8] f32[4,3,3,3] None 1 padding=1 dilation=[1,1] groups=1"),
                          c10::Device(at::kCPU), 0);
  EXPECT_EQ(format_args(b.canonical), "input=f32[1,3,8,8] weight=f32[4,3,3,3] padding=[1,1]");
  EXPECT_EQ(b.dtype, "f32");
  EXPECT_EQ(b.tensor_bytes, std::size_t(1 * 3 * 8 * 8 + 4 * 3 * 3 * 3) * 4);
}

TEST(Bind, AnUndefinedTensorGivenToAPlainTensorArgumentIsWrittenAndBoundAsNone) {
  // cuDNN attention's backward takes attn_bias and the cumulative lengths as plain Tensors, and
  // autograd passes them undefined: the signature must say None for the replay to bind them.
  const auto& op =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::_scaled_dot_product_cudnn_attention_backward", "");
  const auto& schema = op.schema();
  std::vector<ArgValue> values;
  for (const auto& a : schema.arguments()) {
    const auto k = a.type()->kind();
    if (a.name() == "attn_bias" || a.name() == "cum_seq_q" || a.name() == "cum_seq_k" || a.name() == "scale")
      values.push_back(ArgValue{ArgValue::None{}});
    else if (k == c10::TypeKind::TensorType)
      values.push_back(parse_value(a.name() == "logsumexp" ? "f32[1,2,8,1]" : "f16[1,2,8,4]"));
    else if (k == c10::TypeKind::FloatType)
      values.push_back(ArgValue{0.0});
    else if (k == c10::TypeKind::BoolType)
      values.push_back(ArgValue{true});
    else
      values.push_back(ArgValue{int64_t(8)});
  }
  const std::string text = canonical_args(schema, values);
  EXPECT_NE(text.find("attn_bias=None cum_seq_q=None cum_seq_k=None"), std::string::npos) << text;
  EXPECT_EQ(text.find("scale"), std::string::npos) << text;  // optional with default None: left out
  BoundCall b =
      bind_call(call_of("aten::_scaled_dot_product_cudnn_attention_backward " + text), c10::Device(at::kCPU), 0);
  const auto& args = schema.arguments();
  for (std::size_t i = 0; i < args.size(); ++i)
    if (args[i].name() == "attn_bias") EXPECT_TRUE(b.inputs[i].isTensor() && !b.inputs[i].toTensor().defined());
  EXPECT_EQ(format_args(b.canonical), text);
  // Left out, such an argument is still an error that names it.
  EXPECT_THROW(bind_call(call_of("aten::_scaled_dot_product_cudnn_attention_backward " +
                                 text.substr(0, text.find(" attn_bias"))),
                         c10::Device(at::kCPU), 0),
               ReplayError);
}

TEST(Bind, SeededDataIsReproducibleAndIndicesAreInRange) {
  // Drawn on the test device (CUDA in the GPU run) by a generator of its own: the same seed
  // gives the same data, another seed other data, and torch's own generator is not touched.
  const c10::Device dev = test_device();
  at::Generator global = at::globalContext().defaultGenerator(dev);
  const uint64_t global_seed = global.current_seed();
  auto a = bind_call(call_of("aten::embedding weight=f32[50,4] indices=i64[1000]"), dev, 42);
  auto b = bind_call(call_of("aten::embedding weight=f32[50,4] indices=i64[1000]"), dev, 42);
  auto c = bind_call(call_of("aten::embedding weight=f32[50,4] indices=i64[1000]"), dev, 43);
  EXPECT_EQ(a.inputs[0].toTensor().device().type(), dev.type());
  EXPECT_TRUE(at::equal(a.inputs[0].toTensor(), b.inputs[0].toTensor()));
  EXPECT_TRUE(at::equal(a.inputs[1].toTensor(), b.inputs[1].toTensor()));
  EXPECT_FALSE(at::equal(a.inputs[0].toTensor(), c.inputs[0].toTensor()));
  EXPECT_EQ(global.current_seed(), global_seed);
  const auto idx = a.inputs[1].toTensor();
  EXPECT_GE(idx.min().item<int64_t>(), 0);
  EXPECT_LT(idx.max().item<int64_t>(), 50);
  EXPECT_GT(idx.max().item<int64_t>(), 40);  // the whole range is used, not a corner of it
  auto r = bind_call(call_of("aten::relu self=f32[1000]:range[2,3]"), c10::Device(at::kCPU), 0);
  EXPECT_GE(r.inputs[0].toTensor().min().item<float>(), 2.0f);
  EXPECT_EQ(format_args(r.canonical), "self=f32[1000]:range[2.0,3.0]");
}

// A training step's embedding backward (BERT's token types: 2 rows) indexes a gradient of
// num_weights rows: indices drawn from the default [0, 16) wrote outside it on the H100.
TEST(Bind, EmbeddingBackwardIndicesStayBelowNumWeights) {
  for (const std::string op : {"aten::embedding_backward", "aten::embedding_dense_backward"}) {
    const bool sparse_arg = op == "aten::embedding_backward";
    const std::string line = op + (sparse_arg ? " grad" : " grad_output") +
                             "=f32[8,64,4] indices=i64[8,64] num_weights=2 padding_idx=-1 scale_grad_by_freq=false" +
                             (sparse_arg ? " sparse=false" : "");
    auto b = bind_call(call_of(line), c10::Device(at::kCPU), 0);
    const auto idx = b.inputs[1].toTensor();
    EXPECT_GE(idx.min().item<int64_t>(), 0) << op;
    EXPECT_LT(idx.max().item<int64_t>(), 2) << op;
  }
}

TEST(Bind, AFractionOfZerosIsThatFractionAndStaysInTheSignature) {
  auto half = bind_call(call_of("aten::relu self=bf16[20000]:zeros[0.5]"), c10::Device(at::kCPU), 3);
  const double zero_share = (half.inputs[0].toTensor() == 0).to(at::kDouble).mean().item<double>();
  EXPECT_NEAR(zero_share, 0.5, 0.02);
  EXPECT_EQ(format_args(half.canonical), "self=bf16[20000]:zeros[0.5]");
  auto none = bind_call(call_of("aten::relu self=f32[20000]:zeros[0]"), c10::Device(at::kCPU), 3);
  EXPECT_EQ((none.inputs[0].toTensor() == 0).sum().item<int64_t>(), 0);
  auto all = bind_call(call_of("aten::relu self=f32[100]:zeros[1]"), c10::Device(at::kCPU), 3);
  EXPECT_EQ((all.inputs[0].toTensor() == 0).sum().item<int64_t>(), 100);
}

TEST(Bind, StridedTensorsKeepTheirStrides) {
  auto b = bind_call(call_of("aten::relu self=f32[4,8]:stride[1,4]"), c10::Device(at::kCPU), 0);
  EXPECT_EQ(b.inputs[0].toTensor().strides().vec(), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(format_args(b.canonical), "self=f32[4,8]:stride[1,4]");
}

static std::string replay_error_with(const OpCall& call, const ReplayOptions& o) {
  try {
    PreparedCall::prepare(call, o);
  } catch (const ReplayError& e) {
    return e.what();
  }
  return "";
}

static std::string replay_error(const std::string& line) {
  ReplayOptions o;
  o.device = "cpu";
  return replay_error_with(call_of(line), o);
}

TEST(ReplayErrors, NameTheOpTheArgumentAndTheSchema) {
  auto e = replay_error("aten::conv2dd input=f32[1]");
  EXPECT_NE(e.find("unknown operator 'aten::conv2dd'"), std::string::npos) << e;
  EXPECT_NE(e.find("aten::conv2d"), std::string::npos) << e;  // did you mean
  e = replay_error("aten::add.Bogus self=f32[2]");
  EXPECT_NE(e.find("no overload 'Bogus'"), std::string::npos) << e;
  EXPECT_NE(e.find("Tensor"), std::string::npos) << e;
}

TEST(ReplayErrors, BindingAndShapeErrors) {
  auto e = replay_error("aten::conv2d input=f32[1,3,8,8] weight=f32[4,3,3,3] padding=[1,tanh]");
  EXPECT_NE(e.find("argument 'padding'"), std::string::npos) << e;
  EXPECT_NE(e.find("schema: aten::conv2d("), std::string::npos) << e;
  e = replay_error("aten::conv2d input=f32[1,3,8,8]");
  EXPECT_NE(e.find("argument 'weight'"), std::string::npos) << e;
  EXPECT_NE(e.find("no default"), std::string::npos) << e;
  e = replay_error("aten::conv2d input=f32[1,3,8,8] weight=f32[4,3,3,3] paddin=[1,1]");
  EXPECT_NE(e.find("no argument named 'paddin'"), std::string::npos) << e;
  e = replay_error("aten::conv2d input=f32[1,3,8,8] weight=f32[4,5,3,3]");  // channel mismatch
  EXPECT_NE(e.find("rejected the arguments"), std::string::npos) << e;
  EXPECT_NE(e.find("channels"), std::string::npos) << e;  // the op's own text
  e = replay_error("aten::relu self=3");
  EXPECT_NE(e.find("expected a tensor"), std::string::npos) << e;
  e = replay_error("aten::nll_loss self=f32[8,10] target=i64[8] reduction=average");
  EXPECT_NE(e.find("none, mean, sum"), std::string::npos) << e;
  if (!at::hasCUDA()) {
    e = replay_error("aten::relu self=f32[4]:cuda");
    EXPECT_NE(e.find("no CUDA GPU"), std::string::npos) << e;
  }
}

// Replay on the CPU in a cache mode, its rotated copies spanning 1 MiB.
ReplayOptions cpu_replay_in(const std::string& cache_mode) {
  ReplayOptions o;
  o.device = "cpu";
  o.cache_mode = cache_mode;
  o.cold_footprint_bytes = 1 << 20;
  return o;
}

TEST(Replay, PreparedCallRunsAndRotatesColdInputs) {
  ReplayOptions o = cpu_replay_in("cold");
  auto p = PreparedCall::prepare(call_of("aten::mul.Tensor self=f32[256,256] other=f32[256,256]"), o);
  EXPECT_EQ(p->input_bytes(), 2u * 256 * 256 * 4);
  EXPECT_EQ(p->input_sets(), 2u);  // 1 MiB / 512 KiB
  EXPECT_EQ(p->device_kind(), "cpu");
  EXPECT_EQ(p->overload(), "Tensor");
  for (int i = 0; i < 5; ++i) p->call();
}

TEST(Replay, ColdArgumentsAloneAreRotated) {
  ReplayOptions o = cpu_replay_in("cold:mat2");
  auto p = PreparedCall::prepare(call_of("aten::mm self=f32[64,256] mat2=f32[256,256]"), o);
  EXPECT_EQ(p->input_sets(), 4u);  // 1 MiB / the 256 KiB of mat2 alone
  EXPECT_EQ(p->info().cache_mode, "cold:mat2");
  for (int i = 0; i < 5; ++i) p->call();
  o.cache_mode = "cold:weight";
  const std::string e = replay_error_with(call_of("aten::mm self=f32[64,256] mat2=f32[256,256]"), o);
  EXPECT_NE(e.find("has no argument 'weight' (its arguments: self, mat2)"), std::string::npos) << e;
  o.cache_mode = "tepid";
  EXPECT_NE(replay_error_with(call_of("aten::mm self=f32[4,4] mat2=f32[4,4]"), o).find("unknown cache mode 'tepid'"),
            std::string::npos);
  // "cold:" with no name is not quietly warm.
  for (const char* mode : {"cold:", "cold:,mat2"}) {
    o.cache_mode = mode;
    EXPECT_NE(replay_error_with(call_of("aten::mm self=f32[4,4] mat2=f32[4,4]"), o).find("use cold:<argument>"),
              std::string::npos)
        << mode;
  }
}

TEST(Overloads, ChosenFromTheArgumentsWhenTheOpHasNoDefault) {
  ReplayOptions o;
  o.device = "cpu";
  // aten::add, aten::mul, aten::softmax and aten::empty have no default overload.
  auto add = PreparedCall::prepare(call_of("aten::add self=f32[8,8] other=f32[8,8]"), o);
  EXPECT_EQ(add->overload(), "Tensor");
  EXPECT_NE(add->resolution_note().find("took aten::add.Tensor"), std::string::npos) << add->resolution_note();
  EXPECT_EQ(PreparedCall::prepare(call_of("aten::add self=f32[8] other=2"), o)->overload(), "Scalar");
  EXPECT_EQ(PreparedCall::prepare(call_of("aten::mul self=f32[8] other=f32[8]"), o)->overload(), "Tensor");
  EXPECT_EQ(PreparedCall::prepare(call_of("aten::softmax self=f32[4,8] dim=-1"), o)->overload(), "int");
  // empty: the memory_format overload, not the named-tensor one that also fits.
  EXPECT_EQ(PreparedCall::prepare(call_of("aten::empty size=[4,8]"), o)->overload(), "memory_format");
  // A named overload is never second-guessed, and the default one stays the default.
  EXPECT_EQ(PreparedCall::prepare(call_of("aten::add.Scalar self=f32[8] other=2"), o)->overload(), "Scalar");
  auto relu = PreparedCall::prepare(call_of("aten::relu self=f32[8]"), o);
  EXPECT_EQ(relu->overload(), "");
  EXPECT_TRUE(relu->resolution_note().empty());
  // The same call as measured with its overload named: one canonical signature.
  EXPECT_EQ(add->canonical_args(), "self=f32[8,8] other=f32[8,8]");
  // Nothing fits: every overload's reason, and out= variants are never candidates.
  const auto e = replay_error("aten::add self=f32[8] other=f32[8] bogus=1");
  EXPECT_NE(e.find("fit none of its overloads"), std::string::npos) << e;
  EXPECT_NE(e.find(".Tensor: "), std::string::npos) << e;
  EXPECT_EQ(e.find(".out:"), std::string::npos) << e;
  const auto out = replay_error("aten::add.out self=f32[8] other=f32[8] out=f32[8]");
  EXPECT_NE(out.find("use aten::add with the same arguments less the output"), std::string::npos) << out;
}

TEST(ReplayErrors, APositionalValueNeverReplacesANamedOne) {
  auto e = replay_error("aten::relu self=f16[16,8] f32[3]");
  EXPECT_NE(e.find("argument 'self' given twice"), std::string::npos) << e;
  e = replay_error("aten::add.Tensor other=f32[5] f32[3] f32[4]");
  EXPECT_NE(e.find("argument 'other' given twice"), std::string::npos) << e;
  EXPECT_NE(e.find("f32[4]"), std::string::npos) << e;
  // Positional values alone still fill the parameters in order.
  EXPECT_EQ(replay_error("aten::add.Tensor f32[3] f32[3]"), "");
}

TEST(ReplayErrors, HugeShapesSayWhatTheyNeedInOneLine) {
  auto e = replay_error("aten::relu self=f32[100000,100000,100000]");
  EXPECT_NE(e.find("the inputs need"), std::string::npos) << e;  // 3.6 PiB: more than any host has
  EXPECT_NE(e.find("use smaller shapes"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  e = replay_error("aten::relu self=f32[4611686018427387904,4]");  // 2^62 × 4 elements: overflow
  EXPECT_NE(e.find("more elements than a tensor can hold"), std::string::npos) << e;
  EXPECT_EQ(e.find("Stride calculation"), std::string::npos) << e;
  EXPECT_EQ(e.find("Exception raised"), std::string::npos) << e;
}

TEST(ReplayErrors, CheckFindsBindingErrorsWithoutMakingTensors) {
  ReplayOptions o;
  o.device = "cpu";
  // A shape no host could hold is fine for a check: nothing is allocated.
  EXPECT_EQ(PreparedCall::check(call_of("aten::relu self=f32[100000,100000]"), o), "");
  EXPECT_THROW(PreparedCall::check(call_of("aten::relu selff=f32[4]"), o), ReplayError);
  EXPECT_NE(PreparedCall::check(call_of("aten::add self=f32[4] other=f32[4]"), o).find("aten::add.Tensor"),
            std::string::npos);
}

TEST(Bind, EveryDtypeOfTheSpecLanguageHasTorchsElementSize) {
  // The torch-free table (core/spec) states sizes for the operator order of `model`; torch
  // is the authority.
  for (const auto& d : dtype_names())
    EXPECT_EQ(d.bytes, int(c10::elementSize(scalar_type_of(d.canonical)))) << d.canonical;
}

// Every IValue kind an ATen schema takes reads back from its signature unchanged: the text an
// inventory writes is the call that is replayed (issue 31: AdamW's Scalar lists, einsum's equation).
TEST(Replay, SignaturesOfEveryArgumentKindRoundTrip) {
  const std::vector<std::pair<std::string, std::string>> calls = {
      {"aten::einsum", R"(equation="b d,de->be" tensors=[f32[2,3],f32[3,4]])"},
      {"aten::einsum", R"(equation="i,j->\"ij\\" tensors=[f32[2],f32[3]])"},  // only the round trip matters here
      {"aten::_foreach_div_.ScalarList", "self=[f32[3],f32[4]] scalars=[2.0,-0.5]"},
      {"aten::_foreach_addcdiv_.ScalarList", "self=[f32[3]] tensor1=[f32[3]] tensor2=[f32[3]] scalars=[-0.001]"},
      {"aten::mul.Scalar", "self=c64[4] other=1.5-2.0j"},
      {"aten::full", "size=[2] fill_value=1.0+2.0j dtype=c64"},
      {"aten::empty.memory_format", "size=[2,3] dtype=f32 layout=strided device=cpu memory_format=contiguous_format"},
      {"aten::index.Tensor", "self=f32[4,5] indices=[None,i64[3]]"},
      {"aten::upsample_nearest2d.vec", "input=f32[1,2,4,4] output_size=None scale_factors=[2.0,1.5]"},
      {"aten::to.dtype_layout", "self=f32[2] dtype=bf16 layout=strided device=cpu"},
  };
  for (const auto& [op, args] : calls) {
    std::string back;
    ASSERT_NO_THROW(back = canonical_signature(op, args)) << op << " " << args;
    EXPECT_EQ(back, args) << op;
  }
}

TEST(Replay, ScalarListsReplayWithTheirValues) {
  OpCall call = call_of("aten::_foreach_div.ScalarList self=[f32[3],f32[4]] scalars=[2.0,-0.5]");
  BoundCall b = bind_call(call, c10::Device(c10::kCPU), 7);
  const auto self = b.inputs[0].toTensorList().vec();
  std::vector<c10::IValue> stack = b.inputs;
  b.handle->callBoxed(stack);
  const auto out = stack.at(0).toTensorList().vec();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(at::allclose(out[0], self[0] / 2.0));
  EXPECT_TRUE(at::allclose(out[1], self[1] / -0.5));
}

// Canonical arguments as the build before the signature module wrote them (defaults dropped,
// dtype and enum names, positional values named): stored rows key on this text.
TEST(Replay, CanonicalSignaturesAreThoseStoredBefore) {
  const std::vector<std::array<std::string, 3>> cases = {
      {"aten::conv2d", "input=f32[1,3,8,8] weight=f32[4,3,3,3] bias=None stride=1 padding=[1,1]",
       "input=f32[1,3,8,8] weight=f32[4,3,3,3] padding=[1,1]"},
      {"aten::add.Tensor", "f32[2,3] f32[2,3] alpha=1", "self=f32[2,3] other=f32[2,3]"},
      {"aten::nll_loss_nd", "self=f32[8,10] target=i64[8] reduction=mean", "self=f32[8,10] target=i64[8]"},
      {"aten::sum.dim_IntList", "self=f32[4,5] dim=[1] dtype=float32", "self=f32[4,5] dim=[1] dtype=f32"},
      {"aten::empty_like", "self=f32[3] memory_format=channels_last", "self=f32[3] memory_format=channels_last"},
  };
  for (const auto& [op, given, stored] : cases) EXPECT_EQ(canonical_signature(op, given), stored) << op << " " << given;
}

// The observer and the replay write a call through the same canonical_form: a model's values
// (all written, as a model passes them) and a user's text (defaults left out) agree.
TEST(Replay, ObserverAndReplayWriteOneForm) {
  const auto handle = c10::Dispatcher::singleton().findSchema({"aten::conv2d", ""});
  ASSERT_TRUE(handle);
  const auto& schema = handle->schema();
  std::vector<ArgValue> values = {parse_value("f32[1,3,8,8]"), parse_value("f32[4,3,3,3]"), ArgValue{ArgValue::None{}},
                                  parse_value("[1,1]"),        parse_value("[1,1]"),        parse_value("[1,1]"),
                                  ArgValue{int64_t(1)}};
  const std::string from_model = canonical_args(schema, values);
  EXPECT_EQ(from_model, "input=f32[1,3,8,8] weight=f32[4,3,3,3] padding=[1,1]");
  EXPECT_EQ(canonical_signature("aten::conv2d", from_model), from_model);
}
