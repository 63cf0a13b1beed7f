#include "core/estimate/call_work.h"

#include "core/estimate/call_work_args.h"
#include "core/estimate/call_work_families.h"
#include "core/spec/spec_file.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace opcost {

using namespace call_work_args;
using call_work_families::CountedOperator;

namespace {

// A convolution's output positions per spatial dimension, from its input [N, C, ...], weight
// [O, C/groups, ...], stride, padding (numbers, or the words "valid" and "same" of the
// padding=str overloads: "same" keeps the input's size, at stride 1 only), dilation and groups;
// nullopt for a misfit. In doubles: hostile sizes must not overflow an integer, and a stride of 0
// must not divide.
std::optional<std::vector<double>> convolution_outputs(const OpCall& call, const TensorSpec* in, const TensorSpec* w) {
  if (in == nullptr || w == nullptr || in->shape.size() < 3 || w->shape.size() != in->shape.size()) return std::nullopt;
  const std::size_t spatial = in->shape.size() - 2;
  const int64_t groups = int_list(call, "groups", 1, 1).value_or(Shape{0})[0];
  const auto stride = int_list(call, "stride", spatial, 1), dilation = int_list(call, "dilation", spatial, 1);
  if (!stride || !dilation || groups < 1 || double(in->shape[1]) != double(w->shape[1]) * double(groups))
    return std::nullopt;
  std::optional<Shape> padding;
  const NamedArg* p = named(call, "padding");
  const auto* word = p == nullptr ? nullptr : std::get_if<ArgValue::Word>(&p->value.v);
  if (word != nullptr && word->text != "valid" && word->text != "same") return std::nullopt;
  const bool same = word != nullptr && word->text == "same";
  if (!same) padding = word != nullptr ? Shape(spatial, 0) : int_list(call, "padding", spatial, 0);
  if (!same && !padding) return std::nullopt;
  std::vector<double> outputs;
  for (std::size_t k = 0; k < spatial; ++k) {
    const double size = double(in->shape[2 + k]), taps = double(w->shape[2 + k]);
    const double s = double((*stride)[k]), d = double((*dilation)[k]), pad = same ? 0 : double((*padding)[k]);
    if (s < 1 || d < 1 || pad < 0 || (same && s != 1)) return std::nullopt;
    const double out = same ? size : std::floor((size + 2 * pad - d * (taps - 1) - 1) / s) + 1;
    if (!(out >= 1)) return std::nullopt;
    outputs.push_back(out);
  }
  return outputs;
}

// The kernel's taps: the product of the weight's spatial dimensions.
double kernel_taps(const TensorSpec& w) {
  double taps = 1;
  for (std::size_t d = 2; d < w.shape.size(); ++d) taps *= double(w.shape[d]);
  return taps;
}

std::optional<CallWork> convolution(const OpCall& call) {
  const TensorSpec *in = tensor(call, "input"), *w = tensor(call, "weight"), *bias = tensor(call, "bias");
  const auto spatial_outputs = convolution_outputs(call, in, w);
  if (!spatial_outputs) return std::nullopt;
  double outputs = double(in->shape[0]) * double(w->shape[0]);
  for (double o : *spatial_outputs) outputs *= o;
  CallWork work{OpFamily::kConvolution};
  work.flops = 2 * outputs * double(w->shape[1]) * kernel_taps(*w) + (bias != nullptr ? outputs : 0);
  work.bytes = bytes_of(in) + bytes_of(w) + bytes_of(bias) + outputs * dtype_bytes(in->dtype);
  return work;
}

// convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
// transposed, output_padding, groups, output_mask): each gradient asked for in output_mask is
// the forward's product again, as many FLOPs: grad_input (grad_output by the weight) and
// grad_weight (grad_output by the input), and grad_bias a sum over grad_output. grad_output is
// read; for grad_input the weight is read and grad_input written (the input's shape), for
// grad_weight the input is read and grad_weight written (the weight's shape). grad_output must
// be the forward's output. Transposed convolutions: no figure.
std::optional<CallWork> convolution_backward(const OpCall& call) {
  const TensorSpec *grad = tensor(call, "grad_output"), *in = tensor(call, "input"), *w = tensor(call, "weight");
  const auto mask = gradient_mask(call);
  const auto transposed = bool_arg(call, "transposed", false);
  const auto spatial_outputs = convolution_outputs(call, in, w);
  if (grad == nullptr || !spatial_outputs || !mask || !transposed || *transposed ||
      grad->shape.size() != in->shape.size() || grad->shape[0] != in->shape[0] || grad->shape[1] != w->shape[0])
    return std::nullopt;
  for (std::size_t k = 0; k < spatial_outputs->size(); ++k)
    if (double(grad->shape[2 + k]) != (*spatial_outputs)[k]) return std::nullopt;
  const auto [to_input, to_weight, to_bias] = *mask;
  const double outputs = elements(grad->shape), product_flops = 2 * outputs * double(w->shape[1]) * kernel_taps(*w);
  CallWork work{OpFamily::kConvolution};
  work.flops = (to_input ? product_flops : 0) + (to_weight ? product_flops : 0) + (to_bias ? outputs : 0);
  work.bytes = bytes_of(grad) + (to_input ? bytes_of(w) + bytes_of(in) : 0) +
               (to_weight ? bytes_of(in) + bytes_of(w) : 0) +
               (to_bias ? double(w->shape[0]) * dtype_bytes(grad->dtype) : 0);
  return work;
}

// m×k by k×n, `batch` times, plus `bias` added to each output element when there is one.
CallWork product(double batch, double m, double k, double n, const std::vector<const TensorSpec*>& read,
                 const TensorSpec* bias, const std::string& dtype) {
  CallWork work{OpFamily::kMatmul};
  work.flops = 2 * batch * m * k * n + (bias != nullptr ? batch * m * n : 0);
  for (const TensorSpec* t : read) work.bytes += bytes_of(t);
  work.bytes += bytes_of(bias) + batch * m * n * dtype_bytes(dtype);
  return work;
}

std::optional<CallWork> matmul(const OpCall& call) {
  const std::string_view name = call.op;
  if (name == "aten::mm" || name == "aten::bmm" || name == "aten::addmm") {
    const bool add = name == "aten::addmm";
    const TensorSpec *a = tensor(call, add ? "mat1" : "self"), *b = tensor(call, add ? "mat2" : "mat2");
    const std::size_t rank = name == "aten::bmm" ? 3 : 2;
    if (a == nullptr || b == nullptr || a->shape.size() != rank || b->shape.size() != rank) return std::nullopt;
    const std::size_t r = rank - 2;  // the batch dimension, if any, comes first
    if (a->shape[r + 1] != b->shape[r] || (rank == 3 && a->shape[0] != b->shape[0])) return std::nullopt;
    return product(rank == 3 ? double(a->shape[0]) : 1, double(a->shape[r]), double(a->shape[r + 1]),
                   double(b->shape[r + 1]), {a, b}, add ? tensor(call, "self") : nullptr, a->dtype);
  }
  // linear: input [..., k] by weight [n, k] transposed, plus bias [n].
  const TensorSpec *in = tensor(call, "input"), *w = tensor(call, "weight");
  if (in == nullptr || w == nullptr || in->shape.empty() || w->shape.size() != 2 || in->shape.back() != w->shape[1])
    return std::nullopt;
  const double k = double(w->shape[1]), m = elements(in->shape) / k;
  return product(1, m, k, double(w->shape[0]), {in, w}, tensor(call, "bias"), in->dtype);
}

// matmul(self, other) as torch.matmul dispatches it: 1-D operands are a row or a column (squeezed
// out of the result), 2-D by 2-D is mm, and beyond that the leading (batch) dimensions broadcast.
std::optional<CallWork> general_matmul(const OpCall& call) {
  const TensorSpec *a = tensor(call, "self"), *b = tensor(call, "other");
  if (a == nullptr || b == nullptr || a->shape.empty() || b->shape.empty()) return std::nullopt;
  const Shape& sa = a->shape;
  const Shape& sb = b->shape;
  const double m = sa.size() == 1 ? 1 : double(sa[sa.size() - 2]), k = double(sa.back());
  const double kb = sb.size() == 1 ? double(sb[0]) : double(sb[sb.size() - 2]),
               n = sb.size() == 1 ? 1 : double(sb.back());
  if (k != kb) return std::nullopt;
  const auto batch = broadcast(sa.size() > 2 ? Shape(sa.begin(), sa.end() - 2) : Shape{},
                               sb.size() > 2 ? Shape(sb.begin(), sb.end() - 2) : Shape{});
  if (!batch) return std::nullopt;
  return product(elements(*batch), m, k, n, {a, b}, nullptr, a->dtype);
}

}  // namespace

namespace call_work_families {

// One operation per output element.
std::optional<CallWork> count_elementwise(const OpCall& call) {
  std::vector<const TensorSpec*> inputs;
  for (const auto& a : call.args)
    if (const auto* t = std::get_if<TensorSpec>(&a.value.v)) inputs.push_back(t);
  if (inputs.empty()) return std::nullopt;
  Shape out = inputs.front()->shape;
  for (const TensorSpec* t : inputs) {
    auto b = broadcast(out, t->shape);
    if (!b) return std::nullopt;
    out = *b;
  }
  CallWork work{OpFamily::kElementwise};
  work.flops = elements(out);
  for (const TensorSpec* t : inputs) work.bytes += bytes_of(t);
  work.bytes += elements(out) * dtype_bytes(inputs.front()->dtype);
  return work;
}

namespace {

// _foreach_* (the optimizers' multi-tensor kernels): its pointwise operator at each position of
// its tensor lists (self=[...], tensor1=[...]), with any tensor given once (other=f32[]) at
// every position, as count_elementwise counts one call; the lists must be of one length.
std::optional<CallWork> foreach_elementwise(const OpCall& call) {
  std::vector<const ArgList*> lists;
  std::vector<const TensorSpec*> shared;
  for (const auto& a : call.args) {
    if (const auto* list = std::get_if<ArgList>(&a.value.v)) {
      if (!list->empty() && std::holds_alternative<TensorSpec>(list->front().v)) lists.push_back(list);
    } else if (const auto* t = std::get_if<TensorSpec>(&a.value.v)) {
      shared.push_back(t);
    }
  }
  if (lists.empty()) return std::nullopt;
  CallWork work{OpFamily::kElementwise};
  for (std::size_t i = 0; i < lists.front()->size(); ++i) {
    std::vector<const TensorSpec*> inputs;
    for (const ArgList* list : lists) {
      const auto* t = list->size() == lists.front()->size() ? std::get_if<TensorSpec>(&(*list)[i].v) : nullptr;
      if (t == nullptr) return std::nullopt;
      inputs.push_back(t);
    }
    inputs.insert(inputs.end(), shared.begin(), shared.end());
    Shape out = inputs.front()->shape;
    for (const TensorSpec* t : inputs) {
      const auto b = broadcast(out, t->shape);
      if (!b) return std::nullopt;
      out = *b;
    }
    work.flops += elements(out);
    for (const TensorSpec* t : inputs) work.bytes += bytes_of(t);
    work.bytes += elements(out) * dtype_bytes(inputs.front()->dtype);
  }
  return work;
}

// eq, ne, lt, le, gt, ge: one comparison per broadcast output element, written as bool.
std::optional<CallWork> compared(const OpCall& call) {
  auto work = count_elementwise(call);
  if (!work) return std::nullopt;
  work->bytes = work->flops;  // the output: 1 byte each
  for (const auto& a : call.args)
    if (const auto* t = std::get_if<TensorSpec>(&a.value.v)) work->bytes += bytes_of(t);
  return work;
}

// fill_ and zero_: self written, one store per element (a 0-dim tensor `value` read too).
std::optional<CallWork> filled(const OpCall& call) {
  const TensorSpec *self = tensor(call, "self"), *value = tensor(call, "value");
  if (self == nullptr || (value != nullptr && !value->shape.empty())) return std::nullopt;
  CallWork work{OpFamily::kElementwise};
  work.flops = elements(self->shape);
  work.bytes = bytes_of(self) + bytes_of(value);
  return work;
}

// A new tensor: of `size` (zeros, ones, full, empty; new_* in self's dtype) or of self's shape
// (*_like). Every one is written but the empty ones, which only allocate (zero work, as a
// view's). Its dtype: `dtype`, else self's where there is a self, else f32 (PyTorch's default;
// full's is its fill value's, which the spec does not keep as a type: f32 too).
std::optional<CallWork> created(const OpCall& call) {
  const std::string_view op = call.op;
  const TensorSpec* self = tensor(call, "self");
  std::optional<Shape> size;
  if (op.ends_with("_like")) {
    if (self != nullptr) size = self->shape;
  } else if (const NamedArg* size_arg = named(call, "size"); size_arg != nullptr) {
    size = ints(size_arg->value);
  }
  if (!size || (op.starts_with("aten::new_") && self == nullptr) ||
      std::any_of(size->begin(), size->end(), [](int64_t d) { return d < 0; }))
    return std::nullopt;
  const auto dtype = dtype_arg(call, "dtype", self != nullptr ? self->dtype : "f32");
  if (!dtype) return std::nullopt;
  CallWork work{OpFamily::kElementwise};
  work.dtype = *dtype;
  if (op.find("empty") == std::string_view::npos) {
    work.flops = elements(*size);
    work.bytes = work.flops * dtype_bytes(*dtype);
  }
  return work;
}

// where(condition, self, other): one select per broadcast output element, written in the dtype
// self and other promote to (a number: as the other's).
std::optional<CallWork> selected(const OpCall& call) {
  auto work = count_elementwise(call);
  const TensorSpec *condition = tensor(call, "condition"), *self = tensor(call, "self"), *other = tensor(call, "other");
  if (!work || condition == nullptr || (self == nullptr && other == nullptr)) return std::nullopt;
  std::vector<const TensorSpec*> values;
  for (const TensorSpec* t : {self, other})
    if (t != nullptr) values.push_back(t);
  work->bytes = work->flops * promoted_bytes(values);
  for (const auto& a : call.args)
    if (const auto* t = std::get_if<TensorSpec>(&a.value.v)) work->bytes += bytes_of(t);
  return work;
}

// arange(end), arange(start, end, step): ⌈(end − start) / step⌉ values written, i64 where every
// bound is an integer (PyTorch's default), else f32, unless `dtype` says.
std::optional<CallWork> ranged(const OpCall& call) {
  const auto number = [&](std::string_view name, double fallback) -> std::optional<double> {
    const NamedArg* a = named(call, name);
    if (a == nullptr || a->value.is_none()) return fallback;
    if (const auto* i = std::get_if<int64_t>(&a->value.v)) return double(*i);
    if (const auto* d = std::get_if<double>(&a->value.v)) return *d;
    return std::nullopt;
  };
  const auto start = number("start", 0), end = number("end", std::nan("")), step = number("step", 1);
  if (!start || !end || !step || !std::isfinite(*end) || !std::isfinite(*start) || !std::isfinite(*step) || *step == 0)
    return std::nullopt;
  const double n = std::ceil((*end - *start) / *step);
  if (!(n >= 0)) return std::nullopt;  // PyTorch refuses a step of the wrong sign
  bool integral = true;
  for (std::string_view name : {"start", "end", "step"}) {
    const NamedArg* a = named(call, name);
    integral = integral && (a == nullptr || a->value.is_none() || std::holds_alternative<int64_t>(a->value.v));
  }
  const auto dtype = dtype_arg(call, "dtype", integral ? "i64" : "f32");
  if (!dtype) return std::nullopt;
  CallWork work{OpFamily::kElementwise};
  work.dtype = *dtype;
  work.flops = n;
  work.bytes = n * dtype_bytes(*dtype);
  return work;
}

using F = OpFamily;
constexpr CountedOperator kCompute[] = {
    {"aten::matmul", F::kMatmul, general_matmul},
    {"aten::hardswish", F::kElementwise, count_elementwise},
    {"aten::hardswish_", F::kElementwise, count_elementwise},
    {"aten::hardsigmoid", F::kElementwise, count_elementwise},
    {"aten::hardsigmoid_", F::kElementwise, count_elementwise},
    {"aten::hardtanh", F::kElementwise, count_elementwise},
    {"aten::hardtanh_", F::kElementwise, count_elementwise},
    {"aten::masked_fill", F::kElementwise, count_elementwise},
    {"aten::masked_fill_", F::kElementwise, count_elementwise},
    {"aten::eq", F::kElementwise, compared},
    {"aten::ne", F::kElementwise, compared},
    {"aten::lt", F::kElementwise, compared},
    {"aten::le", F::kElementwise, compared},
    {"aten::gt", F::kElementwise, compared},
    {"aten::ge", F::kElementwise, compared},
    {"aten::fill_", F::kElementwise, filled},
    {"aten::zero_", F::kElementwise, filled},
    {"aten::zeros", F::kElementwise, created},
    {"aten::ones", F::kElementwise, created},
    {"aten::full", F::kElementwise, created},
    {"aten::empty", F::kElementwise, created},
    {"aten::new_zeros", F::kElementwise, created},
    {"aten::new_ones", F::kElementwise, created},
    {"aten::new_full", F::kElementwise, created},
    {"aten::new_empty", F::kElementwise, created},
    {"aten::zeros_like", F::kElementwise, created},
    {"aten::ones_like", F::kElementwise, created},
    {"aten::full_like", F::kElementwise, created},
    {"aten::empty_like", F::kElementwise, created},
    {"aten::where", F::kElementwise, selected},
    {"aten::sin", F::kElementwise, count_elementwise},
    {"aten::cos", F::kElementwise, count_elementwise},
    {"aten::log", F::kElementwise, count_elementwise},
    {"aten::__and__", F::kElementwise, count_elementwise},
    {"aten::__or__", F::kElementwise, count_elementwise},
    {"aten::logical_not", F::kElementwise, count_elementwise},
    {"aten::threshold_backward", F::kElementwise, count_elementwise},
    {"aten::gelu_backward", F::kElementwise, count_elementwise},
    {"aten::silu_backward", F::kElementwise, count_elementwise},
    {"aten::lerp_", F::kElementwise, count_elementwise},
    {"aten::addcmul_", F::kElementwise, count_elementwise},
    {"aten::addcdiv_", F::kElementwise, count_elementwise},
    {"aten::_foreach_add_", F::kElementwise, foreach_elementwise},
    {"aten::_foreach_add", F::kElementwise, foreach_elementwise},
    {"aten::_foreach_sub_", F::kElementwise, foreach_elementwise},
    {"aten::_foreach_mul_", F::kElementwise, foreach_elementwise},
    {"aten::_foreach_mul", F::kElementwise, foreach_elementwise},
    {"aten::_foreach_div_", F::kElementwise, foreach_elementwise},
    {"aten::_foreach_div", F::kElementwise, foreach_elementwise},
    {"aten::_foreach_sqrt", F::kElementwise, foreach_elementwise},
    {"aten::_foreach_sqrt_", F::kElementwise, foreach_elementwise},
    {"aten::_foreach_neg_", F::kElementwise, foreach_elementwise},
    {"aten::_foreach_lerp_", F::kElementwise, foreach_elementwise},
    {"aten::_foreach_addcmul_", F::kElementwise, foreach_elementwise},
    {"aten::_foreach_addcdiv_", F::kElementwise, foreach_elementwise},
    {"aten::arange", F::kElementwise, ranged},
    {"aten::conv1d", F::kConvolution, convolution},
    {"aten::conv2d", F::kConvolution, convolution},
    {"aten::conv3d", F::kConvolution, convolution},
    {"aten::convolution_backward", F::kConvolution, convolution_backward},
    {"aten::mm", F::kMatmul, matmul},
    {"aten::bmm", F::kMatmul, matmul},
    {"aten::addmm", F::kMatmul, matmul},
    {"aten::linear", F::kMatmul, matmul},
    {"aten::add", F::kElementwise, count_elementwise},
    {"aten::sub", F::kElementwise, count_elementwise},
    {"aten::mul", F::kElementwise, count_elementwise},
    {"aten::div", F::kElementwise, count_elementwise},
    {"aten::relu", F::kElementwise, count_elementwise},
    {"aten::gelu", F::kElementwise, count_elementwise},
    {"aten::silu", F::kElementwise, count_elementwise},
    {"aten::sigmoid", F::kElementwise, count_elementwise},
    {"aten::tanh", F::kElementwise, count_elementwise},
    {"aten::exp", F::kElementwise, count_elementwise},
    {"aten::neg", F::kElementwise, count_elementwise},
    {"aten::sqrt", F::kElementwise, count_elementwise},
    {"aten::rsqrt", F::kElementwise, count_elementwise},
    {"aten::abs", F::kElementwise, count_elementwise},
    {"aten::add_", F::kElementwise, count_elementwise},
    {"aten::mul_", F::kElementwise, count_elementwise},
    {"aten::relu_", F::kElementwise, count_elementwise},
    {"aten::silu_", F::kElementwise, count_elementwise},
    {"aten::threshold", F::kElementwise, count_elementwise},
    {"aten::pow", F::kElementwise, count_elementwise},
};

}  // namespace

std::span<const CountedOperator> compute_operators() { return kCompute; }

}  // namespace call_work_families

namespace {

const CountedOperator* counted(std::string_view op) {
  for (const auto table : {call_work_families::compute_operators(), call_work_families::layer_operators(),
                           call_work_families::movement_operators()})
    for (const CountedOperator& c : table)
      if (c.op == op) return &c;
  return nullptr;
}

}  // namespace

std::string_view family_name(OpFamily family) {
  switch (family) {
    case OpFamily::kConvolution:
      return "convolution";
    case OpFamily::kMatmul:
      return "matmul";
    case OpFamily::kElementwise:
      return "elementwise";
    case OpFamily::kAttention:
      return "attention";
    case OpFamily::kNormalization:
      return "normalization";
    case OpFamily::kReduction:
      return "reduction";
    case OpFamily::kPooling:
      return "pooling";
    case OpFamily::kEmbedding:
      return "embedding";
    case OpFamily::kDataMovement:
      return "data_movement";
  }
  return "other";
}

std::optional<CallWork> call_work(const OpCall& call) {
  const CountedOperator* c = counted(call.op);
  return c == nullptr ? std::nullopt : c->count(call);
}

std::optional<CallWork> call_work(std::string_view op, std::string_view args) {
  try {
    return call_work(parse_call(op, split_call_line(std::string(args))));
  } catch (const std::exception&) {  // ParseError, invalid_argument: not a call it can count
    return std::nullopt;
  }
}

std::vector<std::string_view> counted_operators() {
  std::vector<std::string_view> out;
  for (const auto table : {call_work_families::compute_operators(), call_work_families::layer_operators(),
                           call_work_families::movement_operators()})
    for (const CountedOperator& c : table) out.push_back(c.op);
  return out;
}

std::optional<OpFamily> family_of(std::string_view op) {
  const CountedOperator* c = counted(op);
  return c == nullptr ? std::nullopt : std::optional<OpFamily>(c->family);
}

}  // namespace opcost
