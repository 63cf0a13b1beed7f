// call_work for attention, normalization, reductions and pooling: the layers between the
// matrix products. Where their work is not multiply-adds, each counts a stated constant per
// element (as fvcore and PyTorch's flop counter do): a figure to rank and model calls by,
// not an instruction count.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <numeric>
#include <string>
#include <vector>

#include "core/estimate/call_work_args.h"
#include "core/estimate/call_work_families.h"

namespace opcost::call_work_families {

using namespace call_work_args;

namespace {

// --- Attention --------------------------------------------------------------------------------

// Softmax over a row: max, subtract, exp, sum and divide, one each per element.
constexpr double kSoftmaxFlopsPerElement = 5;

// softmax(Q·Kᵀ·scale [+ mask])·V per batch and head: query [..., L, E], key [..., S, E],
// value [..., S, Ev]. The two products are 2·L·S·E and 2·L·S·Ev; the softmax 5·L·S (the scale
// and a mask's add are left out). is_causal keeps about half of the L·S scores (exactly
// L·(L+1)/2 of L·L): every L·S term is halved. Dropout is not counted.
std::optional<CallWork> attention(const OpCall& call) {
  const TensorSpec *q = tensor(call, "query"), *k = tensor(call, "key"), *v = tensor(call, "value");
  const TensorSpec* mask = tensor(call, "attn_mask");
  const auto causal = bool_arg(call, "is_causal", false), gqa = bool_arg(call, "enable_gqa", false);
  // PyTorch refuses a mask with is_causal.
  if (q == nullptr || k == nullptr || v == nullptr || !causal || !gqa || (*causal && mask != nullptr))
    return std::nullopt;
  const std::size_t rank = q->shape.size();
  if (rank < 2 || k->shape.size() != rank || v->shape.size() != rank) return std::nullopt;
  const int64_t L = q->shape[rank - 2], E = q->shape[rank - 1], S = k->shape[rank - 2], Ev = v->shape[rank - 1];
  if (k->shape[rank - 1] != E || v->shape[rank - 2] != S) return std::nullopt;
  // Key and value share their leading (batch, head) dimensions; each is the query's, 1
  // (broadcast), or with enable_gqa a divisor of the query's heads (grouped-query attention).
  Shape scores(q->shape.begin(), q->shape.end() - 2);
  for (std::size_t d = 0; d + 2 < rank; ++d) {
    const int64_t qd = q->shape[d], kd = k->shape[d];
    const bool heads = *gqa && d + 3 == rank && kd >= 1 && qd % kd == 0;
    if (kd != v->shape[d] || (kd != qd && kd != 1 && !heads)) return std::nullopt;
  }
  scores.push_back(L);
  scores.push_back(S);
  if (mask != nullptr && broadcast(scores, mask->shape) != scores) return std::nullopt;
  const double batch = elements(Shape(q->shape.begin(), q->shape.end() - 2));
  const double pairs = double(L) * double(S) * (*causal ? 0.5 : 1);
  CallWork work{OpFamily::kAttention};
  work.flops = batch * pairs * (2 * double(E) + 2 * double(Ev) + kSoftmaxFlopsPerElement);
  work.bytes =
      bytes_of(q) + bytes_of(k) + bytes_of(v) + bytes_of(mask) + batch * double(L) * double(Ev) * dtype_bytes(q->dtype);
  return work;
}

// _native_multi_head_attention(query, key, value, embed_dim, num_head, qkv_weight [3E, E],
// qkv_bias, proj_weight [E, E], proj_bias, mask, need_weights, average_attn_weights): the fused
// path nn.MultiheadAttention takes in inference (batch first, [B, L, E] and [B, S, E]). Its
// in-projection (one of L rows and two of S, by E × E each), the attention of `num_head` heads of
// E / num_head as scaled_dot_product_attention counts it, and the out-projection; with
// need_weights the scores are written too (averaged over the heads, or each head's).
std::optional<CallWork> multi_head_attention(const OpCall& call) {
  const TensorSpec *q = tensor(call, "query"), *k = tensor(call, "key"), *v = tensor(call, "value");
  const TensorSpec *qkv_w = tensor(call, "qkv_weight"), *proj_w = tensor(call, "proj_weight");
  const auto embed = int_arg(call, "embed_dim", -1), heads = int_arg(call, "num_head", -1);
  if (q == nullptr || k == nullptr || v == nullptr || qkv_w == nullptr || proj_w == nullptr || !embed || !heads ||
      *embed < 1 || *heads < 1 || *embed % *heads != 0 || q->shape.size() != 3 || k->shape.size() != 3 ||
      v->shape != k->shape || q->shape[0] != k->shape[0] || q->shape[2] != *embed || k->shape[2] != *embed ||
      qkv_w->shape.size() != 2 || double(qkv_w->shape[0]) != 3.0 * double(*embed) || qkv_w->shape[1] != *embed ||
      proj_w->shape != Shape{*embed, *embed})
    return std::nullopt;
  const auto need_weights = bool_arg(call, "need_weights", true),
             average = bool_arg(call, "average_attn_weights", true);
  const TensorSpec* mask = tensor(call, "mask");
  if (!need_weights || !average) return std::nullopt;
  const double B = double(q->shape[0]), L = double(q->shape[1]), S = double(k->shape[1]), E = double(*embed);
  const double H = double(*heads), d = E / H;
  const double projections = 2 * B * (L + 2 * S) * E * E + 2 * B * L * E * E;
  const double attention = B * H * L * S * (2 * d + 2 * d + kSoftmaxFlopsPerElement);
  CallWork work{OpFamily::kAttention};
  work.flops = projections + attention;
  // A tensor given again (self-attention's `key=…:same[query] value=…:same[query]`) is read once.
  const double key_bytes = k->same_as == std::string("query") ? 0 : bytes_of(k);
  const double value_bytes = v->same_as == std::string("query") || v->same_as == std::string("key") ? 0 : bytes_of(v);
  const double scores = *need_weights ? B * L * S * (*average ? 1 : H) * dtype_bytes(q->dtype) : 0;
  work.bytes = bytes_of(q) + key_bytes + value_bytes + bytes_of(qkv_w) + bytes_of(tensor(call, "qkv_bias")) +
               bytes_of(proj_w) + bytes_of(tensor(call, "proj_bias")) + bytes_of(mask) +
               B * L * E * dtype_bytes(q->dtype) + scores;
  return work;
}

// --- Normalization ------------------------------------------------------------------------------

// Normalizing with statistics computed: 5 per element (the mean's add; the variance's subtract,
// square and add; the output's multiply by 1/σ, its subtract shared with the variance's).
// With given statistics (batch norm in eval): 2 (subtract the mean, multiply by 1/σ). RMS norm:
// 3 (square and add; multiply by 1/rms). A weight adds 1 per element, a bias 1.
constexpr double kNormalizeFlopsPerElement = 5, kNormalizeGivenStatsFlopsPerElement = 2, kRmsFlopsPerElement = 3;

// Input read, output written in its dtype, weight and bias read; `flops_per_element` before the
// affine's. `stats` more elements are written in the accumulate dtype (the mean and 1/σ the
// native_ variants return).
CallWork normalized(const TensorSpec& in, const TensorSpec* weight, const TensorSpec* bias, double flops_per_element,
                    double stats) {
  CallWork work{OpFamily::kNormalization};
  const double n = elements(in.shape);
  work.flops = n * (flops_per_element + (weight != nullptr ? 1 : 0) + (bias != nullptr ? 1 : 0));
  work.bytes = 2 * bytes_of(&in) + bytes_of(weight) + bytes_of(bias) + stats * accumulate_bytes(in.dtype);
  return work;
}

bool shaped(const TensorSpec* t, const Shape& shape) { return t == nullptr || t->shape == shape; }

// layer_norm, native_layer_norm, rms_norm, _fused_rms_norm: the last dimensions, given as
// normalized_shape, are normalized; weight and bias have that shape.
std::optional<CallWork> layer_norm(const OpCall& call) {
  const TensorSpec *in = tensor(call, "input"), *w = tensor(call, "weight"), *b = tensor(call, "bias");
  const NamedArg* shape_arg = named(call, "normalized_shape");
  const auto normalized_shape = shape_arg == nullptr ? std::nullopt : ints(shape_arg->value);
  if (in == nullptr || !normalized_shape || normalized_shape->empty() || normalized_shape->size() > in->shape.size() ||
      !std::equal(normalized_shape->rbegin(), normalized_shape->rend(), in->shape.rbegin()) ||
      !shaped(w, *normalized_shape) || !shaped(b, *normalized_shape))
    return std::nullopt;
  const bool rms = call.op == "aten::rms_norm" || call.op == "aten::_fused_rms_norm";
  const Shape outer(in->shape.begin(), in->shape.end() - normalized_shape->size());
  // native_layer_norm returns each row's mean and 1/σ, _fused_rms_norm its 1/rms.
  const double stats = call.op == "aten::native_layer_norm" ? 2 * elements(outer)
                       : call.op == "aten::_fused_rms_norm" ? elements(outer)
                                                            : 0;
  return normalized(*in, w, rms ? nullptr : b, rms ? kRmsFlopsPerElement : kNormalizeFlopsPerElement, stats);
}

// batch_norm, native_batch_norm, _native_batch_norm_legit_no_training: input [N, C, ...]
// normalized per channel; weight, bias and the running statistics [C]. In training (or
// without running statistics) the statistics are computed, returned (native_batch_norm) and
// folded into the running ones (read and written); in eval the running ones are read.
std::optional<CallWork> batch_norm(const OpCall& call) {
  const TensorSpec *in = tensor(call, "input"), *w = tensor(call, "weight"), *b = tensor(call, "bias");
  const TensorSpec *mean = tensor(call, "running_mean"), *var = tensor(call, "running_var");
  const bool no_training = call.op == "aten::_native_batch_norm_legit_no_training";
  const NamedArg* training_arg = named(call, "training");
  const bool* training = training_arg == nullptr ? nullptr : std::get_if<bool>(&training_arg->value.v);
  if (in == nullptr || in->shape.size() < 2 || (!no_training && training == nullptr)) return std::nullopt;
  if (no_training && (mean == nullptr || var == nullptr)) return std::nullopt;
  const Shape channels{in->shape[1]};
  if (!shaped(w, channels) || !shaped(b, channels) || !shaped(mean, channels) || !shaped(var, channels) ||
      (mean == nullptr) != (var == nullptr))
    return std::nullopt;
  const bool computes_stats = !no_training && (*training || mean == nullptr);
  const double stats = call.op == "aten::native_batch_norm" && computes_stats ? 2 * double(in->shape[1]) : 0;
  CallWork work =
      normalized(*in, w, b, computes_stats ? kNormalizeFlopsPerElement : kNormalizeGivenStatsFlopsPerElement, stats);
  const double running = bytes_of(mean) + bytes_of(var);
  work.bytes += computes_stats ? 2 * running : running;
  return work;
}

// group_norm (num_groups) and native_group_norm (N, C, HxW, group): input [N, C, ...] in
// groups of channels; weight and bias [C]. native_group_norm returns each group's mean and 1/σ.
std::optional<CallWork> group_norm(const OpCall& call) {
  const TensorSpec *in = tensor(call, "input"), *w = tensor(call, "weight"), *b = tensor(call, "bias");
  const bool native = call.op == "aten::native_group_norm";
  const auto groups = int_arg(call, native ? "group" : "num_groups", 0);
  if (in == nullptr || in->shape.size() < 2 || !groups || *groups < 1 || in->shape[1] % *groups != 0)
    return std::nullopt;
  const Shape channels{in->shape[1]};
  if (!shaped(w, channels) || !shaped(b, channels)) return std::nullopt;
  if (native) {
    const auto n = int_arg(call, "N", -1), c = int_arg(call, "C", -1), hxw = int_arg(call, "HxW", -1);
    if (!n || !c || !hxw || *n != in->shape[0] || *c != in->shape[1] || *hxw < 0 ||
        double(*n) * double(*c) * double(*hxw) != elements(in->shape))
      return std::nullopt;
  }
  return normalized(*in, w, b, kNormalizeFlopsPerElement, native ? 2 * double(in->shape[0]) * double(*groups) : 0);
}

// Backward of a normalization. grad_input from grad_out, the input and the saved statistics:
// two reductions of grad_out along the normalized elements (Σdy, Σdy·x̂) and 5 per element
// after them (x̂, and the dy − mean terms scaled by 1/σ and the weight): 7. With batch norm's
// running statistics (train=false) only dy · weight · 1/σ: 2. The weight's and bias's gradients
// are Σdy·x̂ and Σdy over the other dimensions: batch norm's reductions are grad_input's (per
// channel, shared); layer norm's run across the rows, 2 and 1 more per element.
constexpr double kNormalizeBackwardFlopsPerElement = 7, kNormalizeGivenStatsBackwardFlopsPerElement = 2;
constexpr double kLayerNormWeightGradFlopsPerElement = 2, kLayerNormBiasGradFlopsPerElement = 1;

// native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias,
// output_mask) and native_batch_norm_backward(grad_out, input, weight, running_mean, running_var,
// save_mean, save_invstd, train, eps, output_mask): grad_out and the input read, with the
// statistics used (layer norm's mean and rstd; batch norm's saved ones in training, its running
// ones in eval) and the weight; each gradient output_mask asks for written: grad_input in the
// input's shape, the weight's and bias's in the weight's.
std::optional<CallWork> normalization_backward(const OpCall& call) {
  const TensorSpec *grad = tensor(call, "grad_out"), *in = tensor(call, "input"), *w = tensor(call, "weight");
  const auto mask = gradient_mask(call);
  if (grad == nullptr || in == nullptr || grad->shape != in->shape || in->shape.size() < 2 || !mask)
    return std::nullopt;
  const auto [to_input, to_weight, to_bias] = *mask;
  const bool layer = call.op == "aten::native_layer_norm_backward";
  std::vector<const TensorSpec*> read = {grad, in, w};
  Shape parameter;
  double per_element = 0;
  if (layer) {
    const NamedArg* shape_arg = named(call, "normalized_shape");
    const auto normalized_shape = shape_arg == nullptr ? std::nullopt : ints(shape_arg->value);
    if (!normalized_shape || normalized_shape->empty() || normalized_shape->size() > in->shape.size() ||
        !std::equal(normalized_shape->rbegin(), normalized_shape->rend(), in->shape.rbegin()))
      return std::nullopt;
    parameter = *normalized_shape;
    read.push_back(tensor(call, "mean"));
    read.push_back(tensor(call, "rstd"));
    per_element = (to_input ? kNormalizeBackwardFlopsPerElement : 0) +
                  (to_weight ? kLayerNormWeightGradFlopsPerElement : 0) +
                  (to_bias ? kLayerNormBiasGradFlopsPerElement : 0);
  } else {
    const NamedArg* train_arg = named(call, "train");  // no default in the schema
    const bool* train = train_arg == nullptr ? nullptr : std::get_if<bool>(&train_arg->value.v);
    if (train == nullptr) return std::nullopt;
    parameter = {in->shape[1]};
    // In training the saved statistics are used, in eval the running ones.
    read.push_back(tensor(call, *train ? "save_mean" : "running_mean"));
    read.push_back(tensor(call, *train ? "save_invstd" : "running_var"));
    per_element = *train ? kNormalizeBackwardFlopsPerElement : kNormalizeGivenStatsBackwardFlopsPerElement;
  }
  if (!shaped(w, parameter)) return std::nullopt;
  CallWork work{OpFamily::kNormalization};
  work.flops = elements(in->shape) * per_element;
  for (const TensorSpec* t : read) work.bytes += bytes_of(t);
  const double parameter_bytes = w != nullptr ? elements(parameter) * dtype_bytes(w->dtype) : 0;
  work.bytes += (to_input ? bytes_of(in) : 0) + (to_weight ? parameter_bytes : 0) + (to_bias ? parameter_bytes : 0);
  return work;
}

// _softmax_backward_data(grad_output, output, dim, input_dtype): grad_input = output · (grad −
// Σ grad · output) along dim: 4 per element; both read, grad_input written in input_dtype.
std::optional<CallWork> softmax_backward(const OpCall& call) {
  const TensorSpec *grad = tensor(call, "grad_output"), *out = tensor(call, "output");
  const auto dim = int_arg(call, "dim", 0);
  if (grad == nullptr || out == nullptr || grad->shape != out->shape || named(call, "dim") == nullptr || !dim ||
      !wrap_dim(*dim, out->shape.size()))
    return std::nullopt;
  const auto dtype = dtype_arg(call, "input_dtype", out->dtype);
  if (!dtype) return std::nullopt;
  CallWork work{OpFamily::kReduction};
  work.flops = 4 * elements(out->shape);
  work.bytes = bytes_of(grad) + bytes_of(out) + elements(out->shape) * dtype_bytes(*dtype);
  return work;
}

// max_pool2d_with_indices_backward(grad_output, self, ..., indices): grad_input, self's shape,
// zeroed and each grad_output element added at its index: grad_output and the indices read.
std::optional<CallWork> max_pool_backward(const OpCall& call) {
  const TensorSpec *grad = tensor(call, "grad_output"), *self = tensor(call, "self"), *index = tensor(call, "indices");
  if (grad == nullptr || self == nullptr || index == nullptr || index->shape != grad->shape ||
      grad->shape.size() != self->shape.size() || grad->shape.size() < 3)
    return std::nullopt;
  CallWork work{OpFamily::kPooling};
  work.flops = elements(grad->shape);
  work.bytes = bytes_of(grad) + bytes_of(index) + bytes_of(self);
  return work;
}

// --- Reductions ---------------------------------------------------------------------------------

bool integral(const std::string& dtype) { return dtype == "bool" || dtype.starts_with("i") || dtype == "u8"; }

// The dimensions reduced, wrapped and each once: `dim` as an integer or a list; absent, None
// or [] reduce them all (sum, mean, amax, var, ... when given no dim).
std::optional<std::vector<bool>> reduced_dims(const OpCall& call, std::size_t rank) {
  std::vector<bool> reduced(rank, false);
  const NamedArg* a = named(call, "dim");
  const auto dims = a == nullptr || a->value.is_none() ? Shape{} : ints(a->value);
  if (!dims) return std::nullopt;
  for (int64_t d : *dims) {
    const auto k = wrap_dim(d, rank);
    if (!k) return std::nullopt;
    if (*k < rank && reduced[*k]) return std::nullopt;  // a dimension twice: PyTorch refuses it
    if (*k < rank) reduced[*k] = true;
  }
  if (dims->empty()) reduced.assign(rank, true);
  return reduced;
}

// sum, mean, amax, amin, max, min, var, std, all, any: one operation per input element (an add
// or a compare; all and any write bool); mean adds a divide per output, var 3 more per input element (subtract the
// mean, square, add) and a divide per output, std a square root per output too. The output's shape drops the reduced
// dimensions (keeps them as 1 with keepdim); max and min with a dim also write i64 indices; given a tensor `other` they
// are pointwise.
std::optional<CallWork> reduction(const OpCall& call) {
  const std::string_view op = call.op;
  const bool extreme = op == "aten::max" || op == "aten::min";
  if (extreme && tensor(call, "other") != nullptr) return count_elementwise(call);
  const TensorSpec* in = tensor(call, "self");
  const auto keepdim = bool_arg(call, "keepdim", false);
  if (in == nullptr || !keepdim) return std::nullopt;
  const NamedArg* dim_arg = named(call, "dim");
  // max.dim and min.dim take a single integer; their values come with indices.
  const bool with_indices = extreme && dim_arg != nullptr && !dim_arg->value.is_none();
  if (with_indices && !std::holds_alternative<int64_t>(dim_arg->value.v)) return std::nullopt;
  const auto reduced = reduced_dims(call, in->shape.size());
  if (!reduced) return std::nullopt;
  double outputs = 1;
  for (std::size_t k = 0; k < in->shape.size(); ++k)
    if (!(*reduced)[k]) outputs *= double(in->shape[k]);
  std::string out_dtype = in->dtype;
  if (op == "aten::sum" && integral(in->dtype)) out_dtype = "i64";  // as PyTorch promotes it
  if (op == "aten::all" || op == "aten::any") out_dtype = in->dtype == "u8" ? "u8" : "bool";
  if (op == "aten::sum" || op == "aten::mean") {
    const auto d = dtype_arg(call, "dtype", out_dtype);
    if (!d) return std::nullopt;
    out_dtype = *d;
  }
  const bool spread = op == "aten::var" || op == "aten::std";
  double out_bytes = dtype_bytes(out_dtype);
  if (spread && (in->dtype == "c64" || in->dtype == "c128")) out_bytes /= 2;  // a complex input's is real
  const double n = elements(in->shape);
  CallWork work{OpFamily::kReduction};
  work.flops = n * (spread ? 4 : 1) + outputs * (op == "aten::mean" ? 1 : spread ? (op == "aten::std" ? 2 : 1) : 0);
  work.bytes = bytes_of(in) + outputs * (out_bytes + (with_indices ? dtype_bytes("i64") : 0));
  return work;
}

// softmax, _softmax, log_softmax, _log_softmax along `dim`: 5 per element (log_softmax's log
// and subtract take the divide's place); the output has the input's shape, in `dtype` if
// given (f32 for _softmax's half_to_float).
std::optional<CallWork> softmax(const OpCall& call) {
  const TensorSpec* in = tensor(call, "self");
  const NamedArg* dim_arg = named(call, "dim");
  if (in == nullptr || dim_arg == nullptr) return std::nullopt;
  const auto* dim = std::get_if<int64_t>(&dim_arg->value.v);
  if (dim == nullptr || !wrap_dim(*dim, in->shape.size())) return std::nullopt;
  std::optional<std::string> out_dtype = in->dtype;
  if (call.op == "aten::_softmax" || call.op == "aten::_log_softmax") {
    const auto half_to_float = bool_arg(call, "half_to_float", false);
    if (!half_to_float) return std::nullopt;
    if (*half_to_float) out_dtype = "f32";
  } else {
    out_dtype = dtype_arg(call, "dtype", in->dtype);
  }
  if (!out_dtype) return std::nullopt;
  const double n = elements(in->shape);
  CallWork work{OpFamily::kReduction};
  work.flops = n * kSoftmaxFlopsPerElement;
  work.bytes = bytes_of(in) + n * dtype_bytes(*out_dtype);
  return work;
}

// --- Pooling ------------------------------------------------------------------------------------

// 2-d pooling of self [C, H, W] or [N, C, H, W] to `out_hw`, each output reading `window`
// inputs: one compare or add per input read. Indices (i64) are written too where asked.
CallWork pooled(const TensorSpec& in, double out_hw, double window, bool indices) {
  const double outputs = elements(Shape(in.shape.begin(), in.shape.end() - 2)) * out_hw;
  CallWork work{OpFamily::kPooling};
  work.flops = outputs * window;
  work.bytes = bytes_of(&in) + outputs * (dtype_bytes(in.dtype) + (indices ? dtype_bytes("i64") : 0));
  return work;
}

// max_pool2d, max_pool2d_with_indices, avg_pool2d: PyTorch's pooling_output_shape per side.
std::optional<CallWork> window_pool(const OpCall& call) {
  const TensorSpec* in = tensor(call, "self");
  if (in == nullptr || (in->shape.size() != 3 && in->shape.size() != 4)) return std::nullopt;
  const bool avg = call.op == "aten::avg_pool2d";
  const NamedArg* kernel_arg = named(call, "kernel_size");
  const NamedArg* stride_arg = named(call, "stride");
  const auto kernel = kernel_arg == nullptr ? std::nullopt : int_list(call, "kernel_size", 2, 0);
  // stride=[] (the default) is the kernel's size.
  const auto* stride_list = stride_arg == nullptr ? nullptr : std::get_if<ArgList>(&stride_arg->value.v);
  const bool stride_is_kernel =
      stride_arg == nullptr || stride_arg->value.is_none() || (stride_list != nullptr && stride_list->empty());
  const auto stride = stride_is_kernel ? kernel : int_list(call, "stride", 2, 1);
  const auto padding = int_list(call, "padding", 2, 0);
  const auto dilation = avg ? std::optional<Shape>(Shape{1, 1}) : int_list(call, "dilation", 2, 1);
  const auto ceil_mode = bool_arg(call, "ceil_mode", false);
  if (!kernel || !stride || !padding || !dilation || !ceil_mode) return std::nullopt;
  double out_hw = 1, window = 1;
  for (std::size_t k = 0; k < 2; ++k) {
    const double size = double(in->shape[in->shape.size() - 2 + k]), taps = double((*kernel)[k]);
    const double s = double((*stride)[k]), pad = double((*padding)[k]), d = double((*dilation)[k]);
    // PyTorch refuses a padding over half the kernel (undilated).
    if (taps < 1 || s < 1 || d < 1 || pad < 0 || pad > std::floor(taps / 2)) return std::nullopt;
    double out = std::floor((size + 2 * pad - d * (taps - 1) - 1 + (*ceil_mode ? s - 1 : 0)) / s) + 1;
    // With ceil_mode, the last window must start inside the input or its left padding.
    if (*ceil_mode && (out - 1) * s >= size + pad) out -= 1;
    if (!(out >= 1)) return std::nullopt;
    out_hw *= out;
    window *= taps;
  }
  return pooled(*in, out_hw, window, call.op == "aten::max_pool2d_with_indices");
}

// adaptive_avg_pool2d, _adaptive_avg_pool2d, adaptive_max_pool2d: output_size [oh, ow]; the
// windows of a side of n inputs to m outputs, [⌊i·n/m⌋, ⌈(i+1)·n/m⌉), add up to n + m − gcd(n, m)
// inputs (a window's bounds overlap its neighbour's where i·n/m is not whole), and a 2-d
// output's windows to the product of its sides' sums.
std::optional<CallWork> adaptive_pool(const OpCall& call) {
  const TensorSpec* in = tensor(call, "self");
  const auto size = named(call, "output_size") == nullptr ? std::nullopt : int_list(call, "output_size", 2, 0);
  if (in == nullptr || (in->shape.size() != 3 && in->shape.size() != 4) || !size) return std::nullopt;
  double out_hw = 1, windows = 1;
  for (std::size_t k = 0; k < 2; ++k) {
    const int64_t n = in->shape[in->shape.size() - 2 + k], m = (*size)[k];
    if (n < 1 || m < 1) return std::nullopt;
    out_hw *= double(m);
    windows *= double(n) + double(m) - double(std::gcd(n, m));
  }
  CallWork work = pooled(*in, out_hw, 1, call.op == "aten::adaptive_max_pool2d");
  work.flops = elements(Shape(in->shape.begin(), in->shape.end() - 2)) * windows;
  return work;
}

using F = OpFamily;
constexpr CountedOperator kLayers[] = {
    {"aten::scaled_dot_product_attention", F::kAttention, attention},
    {"aten::_native_multi_head_attention", F::kAttention, multi_head_attention},
    {"aten::layer_norm", F::kNormalization, layer_norm},
    {"aten::native_layer_norm", F::kNormalization, layer_norm},
    {"aten::rms_norm", F::kNormalization, layer_norm},
    {"aten::_fused_rms_norm", F::kNormalization, layer_norm},
    {"aten::batch_norm", F::kNormalization, batch_norm},
    {"aten::native_batch_norm", F::kNormalization, batch_norm},
    {"aten::_native_batch_norm_legit_no_training", F::kNormalization, batch_norm},
    {"aten::group_norm", F::kNormalization, group_norm},
    {"aten::native_group_norm", F::kNormalization, group_norm},
    {"aten::native_layer_norm_backward", F::kNormalization, normalization_backward},
    {"aten::native_batch_norm_backward", F::kNormalization, normalization_backward},
    {"aten::_softmax_backward_data", F::kReduction, softmax_backward},
    {"aten::max_pool2d_with_indices_backward", F::kPooling, max_pool_backward},
    {"aten::sum", F::kReduction, reduction},
    {"aten::mean", F::kReduction, reduction},
    {"aten::amax", F::kReduction, reduction},
    {"aten::amin", F::kReduction, reduction},
    {"aten::max", F::kReduction, reduction},
    {"aten::min", F::kReduction, reduction},
    {"aten::var", F::kReduction, reduction},
    {"aten::std", F::kReduction, reduction},
    {"aten::all", F::kReduction, reduction},
    {"aten::any", F::kReduction, reduction},
    {"aten::softmax", F::kReduction, softmax},
    {"aten::_softmax", F::kReduction, softmax},
    {"aten::log_softmax", F::kReduction, softmax},
    {"aten::_log_softmax", F::kReduction, softmax},
    {"aten::max_pool2d", F::kPooling, window_pool},
    {"aten::max_pool2d_with_indices", F::kPooling, window_pool},
    {"aten::avg_pool2d", F::kPooling, window_pool},
    {"aten::adaptive_avg_pool2d", F::kPooling, adaptive_pool},
    {"aten::_adaptive_avg_pool2d", F::kPooling, adaptive_pool},
    {"aten::adaptive_max_pool2d", F::kPooling, adaptive_pool},
};

}  // namespace

std::span<const CountedOperator> layer_operators() { return kLayers; }

}  // namespace opcost::call_work_families
