#include "core/estimate/cost_features.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "core/estimate/call_work_args.h"

namespace opcost {

const std::vector<std::string>& cost_feature_names() {
  static const std::vector<std::string> names = {
      "log2_flops",            // log2(1 + FLOPs)
      "log2_bytes",            // log2(1 + bytes moved at least)
      "log2_flop_per_byte",    // arithmetic intensity
      "log2_roofline_us",      // log2(roofline time + 1 ns) on the GPU's achieved rates
      "dtype_bytes",           // the call's dtype (its first tensor's): bytes per element
      "dtype_kind",            // 0 integer or bool, 1 f16, 2 bf16, 3 f32, 4 f64, 5 other floats (fp8)
      "alignment_log2",        // the worst-aligned last dimension: log2 of its largest power-of-2 factor, at most 7
      "log2_smallest_extent",  // the smallest of the tensors' last two dimensions: a thin GEMM wastes tiles
      "log2_largest_tensor",   // log2 of the largest tensor's element count
      "tensor_count",          // tensor arguments
      "cold_cache",            // 1 when the caches are flushed before each call
      "zeros_fraction",        // the largest fraction of zeros asked of an input (power depends on data)
      "operator_code",         // operator_code(op)
      // A matrix product's, or a convolution's implicit GEMM's, m, n and k (0 for other calls):
      // the kernel's tiles and waves are cut from these, not from the FLOPs alone.
      "log2_gemm_m",
      "log2_gemm_n",
      "log2_gemm_k",
      "gemm_alignment_log2",  // the worse-aligned of n and k (7 for other calls)
      // The first tensor's layout: where a reduction or a normalisation runs along it, and how
      // many rows, columns and (NCHW) positions per channel it has.
      "rank",
      "log2_first_extent",
      "log2_last_extent",
      "log2_inner_extent",  // the product of the dimensions after the second (1 below rank 3)
      "dim_is_last",        // a `dim` argument: 1 when it names the last dimension, 0 when not, 0.5 without one
      "non_contiguous",     // tensors given with strides other than their contiguous ones (a transposed copy)
      "log2_window",        // a convolution's kernel taps, a pooling's window (0 for other calls)
      "stride",             // the largest entry of a `stride` argument (1 without one)
      // An attention's is_causal=true (0 without): its FLOPs are halved already, but its kernel
      // skips whole tiles above the diagonal, and less than half of them where the sequence is
      // short or not a multiple of the tile (on the 2026-11-26 rows, bf16 [2,16,1000,128] ran
      // 31 µs causal against 35 µs not). Without it the trees read the two alike by their other
      // features: the attention's held-out time median went 14.4% → 8.0% (H100) with it.
      "causal",
  };
  return names;
}

double operator_code(std::string_view op) {
  std::uint32_t h = 2166136261u;
  for (unsigned char c : op) {
    h ^= c;
    h *= 16777619u;
  }
  return double((h >> 20) ^ (h & 0xFFFFFu));
}

namespace {

double dtype_kind(const std::string& code) {
  if (code == "f16") return 1;
  if (code == "bf16") return 2;
  if (code == "f32") return 3;
  if (code == "f64") return 4;
  if (!code.empty() && code[0] == 'f') return 5;
  return 0;
}

// log2 of the largest power of two dividing `extent`, at most 7 (128: the widest tile).
double alignment_log2(int64_t extent) {
  if (extent <= 0) return 0;
  int bits = 0;
  while (bits < 7 && (extent & (int64_t(1) << bits)) == 0) ++bits;
  return bits;
}

std::vector<const TensorSpec*> tensors_of(const OpCall& call) {
  std::vector<const TensorSpec*> out;
  for (const auto& a : call.args) {
    if (const auto* t = std::get_if<TensorSpec>(&a.value.v)) out.push_back(t);
    if (const auto* list = std::get_if<ArgList>(&a.value.v))  // cat's tensors=[...]
      for (const auto& item : *list)
        if (const auto* t = std::get_if<TensorSpec>(&item.v)) out.push_back(t);
  }
  return out;
}

// The argument readers call_work uses: a feature reads an argument as the work does.
using call_work_args::tensor;

struct GemmDims {
  double m = 0, n = 0, k = 0;
};

// The GEMM a matrix product or a convolution is (implicit GEMM: m = batch × output positions,
// n = output channels, k = input channels per group × kernel taps). Its shapes were checked by
// call_work already; nullopt for any other call.
std::optional<GemmDims> gemm_dims(const OpCall& call, const CostFeatures& f) {
  const std::string_view op = call.op;
  if (f.family == OpFamily::kMatmul) {
    if (op == "aten::linear") {
      const TensorSpec *in = tensor(call, "input"), *w = tensor(call, "weight");
      if (in == nullptr || w == nullptr || w->shape.size() != 2 || w->shape[1] <= 0) return std::nullopt;
      double elements = 1;
      for (int64_t d : in->shape) elements *= double(d);
      return GemmDims{elements / double(w->shape[1]), double(w->shape[0]), double(w->shape[1])};
    }
    if (op == "aten::matmul") {  // its batch broadcast: m is what the FLOPs leave of k and n
      const TensorSpec *a = tensor(call, "self"), *b = tensor(call, "other");
      if (a == nullptr || b == nullptr || a->shape.empty() || b->shape.empty()) return std::nullopt;
      const double k = double(a->shape.back()), n = b->shape.size() == 1 ? 1 : double(b->shape.back());
      if (!(k > 0 && n > 0)) return std::nullopt;
      return GemmDims{f.work.flops / (2 * k * n), n, k};
    }
    const TensorSpec *a = tensor(call, op == "aten::addmm" ? "mat1" : "self"), *b = tensor(call, "mat2");
    if (a == nullptr || b == nullptr || a->shape.size() < 2 || b->shape.size() < 2) return std::nullopt;
    const std::size_t r = a->shape.size() - 2;
    const double batch = r == 1 ? double(a->shape[0]) : 1;
    return GemmDims{batch * double(a->shape[r]), double(b->shape[r + 1]), double(a->shape[r + 1])};
  }
  if (f.family == OpFamily::kConvolution) {
    const TensorSpec* w = tensor(call, "weight");
    if (w == nullptr || w->shape.size() < 3 || w->shape[0] <= 0) return std::nullopt;
    double k = double(w->shape[1]);
    for (std::size_t d = 2; d < w->shape.size(); ++d) k *= double(w->shape[d]);
    const double bias = tensor(call, "bias") != nullptr ? 1 : 0;
    if (!(k > 0)) return std::nullopt;
    const double outputs = f.work.flops / (2 * k + bias);  // call_work: 2 · outputs · k (+ outputs)
    return GemmDims{outputs / double(w->shape[0]), double(w->shape[0]), k};
  }
  return std::nullopt;
}

bool contiguous(const TensorSpec& t) {
  if (!t.strides) return true;
  int64_t expected = 1;
  for (std::size_t k = t.shape.size(); k-- > 0;) {
    if (t.shape[k] != 1 && (*t.strides)[k] != expected) return false;
    expected *= std::max<int64_t>(t.shape[k], 1);
  }
  return true;
}

const ArgValue* arg_value(const OpCall& call, std::string_view name) {
  const NamedArg* a = call_work_args::named(call, name);
  return a == nullptr ? nullptr : &a->value;
}

// The integers of an argument given as one integer or a list of them.
std::vector<int64_t> integers(const ArgValue* v) {
  std::vector<int64_t> out;
  if (v == nullptr) return out;
  if (const auto* i = std::get_if<int64_t>(&v->v)) out.push_back(*i);
  if (const auto* list = std::get_if<ArgList>(&v->v))
    for (const auto& item : *list)
      if (const auto* i = std::get_if<int64_t>(&item.v)) out.push_back(*i);
  return out;
}

double dim_is_last(const OpCall& call, std::size_t rank) {
  const auto dims = integers(arg_value(call, "dim"));
  if (dims.empty()) return 0.5;
  for (int64_t d : dims)
    if (d == -1 || (rank > 0 && d == int64_t(rank) - 1)) return 1;
  return 0;
}

// A convolution's kernel taps (its weight's spatial dimensions), a pooling's window
// (kernel_size=[2] is 2 × 2 on an NCHW input, as PyTorch expands it).
double window(const OpCall& call, const CostFeatures& f, std::size_t rank) {
  if (f.family == OpFamily::kConvolution) {
    const TensorSpec* w = tensor(call, "weight");
    double taps = 1;
    if (w != nullptr)
      for (std::size_t d = 2; d < w->shape.size(); ++d) taps *= double(std::max<int64_t>(w->shape[d], 1));
    return taps;
  }
  const auto sizes = integers(arg_value(call, "kernel_size"));
  if (sizes.size() == 1) return std::pow(double(std::max<int64_t>(sizes[0], 1)), rank > 2 ? double(rank - 2) : 1.0);
  double taps = 1;
  for (int64_t k : sizes) taps *= double(std::max<int64_t>(k, 1));
  return taps;
}

double alignment_of(double extent) { return extent >= 1 && extent < 9e18 ? alignment_log2(int64_t(extent)) : 0; }

}  // namespace

std::optional<CostFeatures> cost_features(const OpCall& call, std::string_view cache_mode, const GpuProfile& gpu) {
  const auto work = call_work(call);
  if (!work) return std::nullopt;
  const auto tensors = tensors_of(call);
  CostFeatures f;
  f.family = work->family;
  f.work = *work;
  const std::string dtype = tensors.empty() ? work->dtype : tensors.front()->dtype;

  double compute_s = 0, memory_s = 0;
  if (work->flops > 0) {
    std::optional<double> tflops = gpu.tflops_for(dtype);
    // cuDNN runs an f32 convolution on TF32 tensor cores (PyTorch's default,
    // torch.backends.cudnn.allow_tf32), at half the bf16 rate on Ampere and Hopper: not at the
    // f32 GEMM's rate (which PyTorch keeps in full f32), a third to an eighth of it on the H100.
    if (f.family == OpFamily::kConvolution && dtype == "f32")
      if (const auto bf16 = gpu.tflops_for("bf16")) tflops = std::max(tflops.value_or(0), *bf16 / 2);
    if (!tflops && !gpu.achieved_tflops.empty()) {
      tflops =
          std::max_element(gpu.achieved_tflops.begin(), gpu.achieved_tflops.end(), [](const auto& a, const auto& b) {
            return a.second < b.second;
          })->second;
      f.notes.push_back(
          fmt::format("{} has no row of dtype {} to read a FLOP rate from: its roofline uses the best "
                      "rate of any dtype ({:.1f} TFLOP/s)",
                      gpu.name, dtype.empty() ? "(none)" : dtype, *tflops));
    }
    if (tflops) compute_s = work->flops / (*tflops * 1e12);
  }
  if (gpu.achieved_GBps > 0) memory_s = work->bytes / (gpu.achieved_GBps * 1e9);
  f.roofline_us = std::max(compute_s, memory_s) * 1e6;
  f.base_us = f.roofline_us + kTimeFloorUs;
  const auto side_W = compute_s >= memory_s && work->flops > 0 ? gpu.compute_power_W : gpu.memory_power_W;
  if (side_W && gpu.idle_power_W)
    f.base_power_W = (f.roofline_us * *side_W + kTimeFloorUs * *gpu.idle_power_W) / f.base_us;

  double alignment = 7, smallest = 0, largest = 0, zeros = 0;
  bool any_extent = false;
  for (const TensorSpec* t : tensors) {
    double n = 1;
    for (int64_t d : t->shape) n *= double(std::max<int64_t>(d, 0));
    largest = std::max(largest, n);
    if (!t->shape.empty()) alignment = std::min(alignment, alignment_log2(t->shape.back()));
    const std::size_t rank = t->shape.size();
    for (std::size_t k = rank >= 2 ? rank - 2 : 0; k < rank; ++k) {
      const double e = std::log2(double(std::max<int64_t>(t->shape[k], 1)));
      smallest = any_extent ? std::min(smallest, e) : e;
      any_extent = true;
    }
    zeros = std::max(zeros, t->zeros_fraction.value_or(0));
  }
  f.values = {std::log2(1 + work->flops),
              std::log2(1 + work->bytes),
              std::log2((1 + work->flops) / (1 + work->bytes)),
              std::log2(f.roofline_us + 1e-3),
              double(dtype.empty() ? 0 : dtype_bytes(dtype)),
              dtype_kind(dtype),
              alignment,
              smallest,
              std::log2(1 + largest),
              double(tensors.size()),
              cache_mode == "cold" ? 1.0 : 0.0,
              zeros,
              operator_code(call.op)};
  const auto gemm = gemm_dims(call, f);
  const auto log2_or_0 = [](double v) { return v >= 1 ? std::log2(v) : 0.0; };
  f.values.push_back(gemm ? log2_or_0(gemm->m) : 0);
  f.values.push_back(gemm ? log2_or_0(gemm->n) : 0);
  f.values.push_back(gemm ? log2_or_0(gemm->k) : 0);
  f.values.push_back(gemm ? std::min(alignment_of(gemm->n), alignment_of(gemm->k)) : 7);

  const TensorSpec* first = tensors.empty() ? nullptr : tensors.front();
  const std::size_t rank = first == nullptr ? 0 : first->shape.size();
  const auto extent = [&](std::size_t k) { return double(std::max<int64_t>(first->shape[k], 1)); };
  double inner = 1;
  for (std::size_t k = 2; k < rank; ++k) inner *= extent(k);
  double strided = 0;
  for (const TensorSpec* t : tensors) strided += contiguous(*t) ? 0 : 1;
  // A pooling's stride left out (or []) is its kernel's, as PyTorch takes it.
  auto strides = integers(arg_value(call, "stride"));
  if (strides.empty() && f.family == OpFamily::kPooling) strides = integers(arg_value(call, "kernel_size"));
  double stride = 1;
  for (int64_t s : strides) stride = std::max(stride, double(s));
  f.values.push_back(double(rank));
  f.values.push_back(rank > 0 ? std::log2(extent(0)) : 0);
  f.values.push_back(rank > 0 ? std::log2(extent(rank - 1)) : 0);
  f.values.push_back(std::log2(inner));
  f.values.push_back(dim_is_last(call, rank));
  f.values.push_back(strided);
  f.values.push_back(std::log2(window(call, f, rank)));
  f.values.push_back(stride);
  f.values.push_back(call_work_args::bool_arg(call, "is_causal", false).value_or(false) ? 1 : 0);
  // Zero-size or hostile shapes can make 0/0: no figure, never a NaN that passes every range check.
  if (!std::isfinite(f.base_us) ||
      !std::all_of(f.values.begin(), f.values.end(), [](double v) { return std::isfinite(v); }))
    return std::nullopt;
  return f;
}

}  // namespace opcost
