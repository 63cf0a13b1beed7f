#include "core/predict/op_weight.h"

#include <algorithm>
#include <variant>
#include <vector>

namespace opcost {

namespace {

double elements(const TensorSpec& t) {
  double n = 1;
  for (auto d : t.shape) n *= double(d);
  return n;
}

const TensorSpec* tensor(const OpCall& call, const char* name) {
  for (const auto& a : call.args)
    if (a.name == name)
      if (auto* t = std::get_if<TensorSpec>(&a.value.v)) return t;
  return nullptr;
}

// An int or a list of ints (stride=[2,2], padding=1) for each of `dims` spatial dimensions.
std::vector<int64_t> per_dim(const OpCall& call, const char* name, std::size_t dims, int64_t otherwise) {
  std::vector<int64_t> v(dims, otherwise);
  for (const auto& a : call.args) {
    if (a.name != name) continue;
    if (auto* i = std::get_if<int64_t>(&a.value.v)) std::fill(v.begin(), v.end(), *i);
    if (auto* list = std::get_if<ArgList>(&a.value.v))
      for (std::size_t d = 0; d < dims && !list->empty(); ++d)
        if (auto* i = std::get_if<int64_t>(&(*list)[std::min(d, list->size() - 1)].v)) v[d] = *i;
  }
  return v;
}

// Multiply-adds × 2 of the calls whose time their arithmetic sets; 0 for the rest.
double flops(const OpCall& call) {
  const std::string& op = call.op;
  if (op == "aten::conv1d" || op == "aten::conv2d" || op == "aten::conv3d" || op == "aten::convolution" ||
      op == "aten::_convolution" || op == "aten::cudnn_convolution") {
    const TensorSpec *x = tensor(call, "input"), *w = tensor(call, "weight");
    if (!x || !w || x->shape.size() < 3 || w->shape.size() != x->shape.size()) return 0;
    const std::size_t dims = x->shape.size() - 2;
    const auto stride = per_dim(call, "stride", dims, 1), padding = per_dim(call, "padding", dims, 0),
               dilation = per_dim(call, "dilation", dims, 1);
    double out = double(x->shape[0]) * double(w->shape[0]);
    for (std::size_t d = 0; d < dims; ++d) {
      const int64_t extent = x->shape[2 + d] + 2 * padding[d] - dilation[d] * (w->shape[2 + d] - 1) - 1;
      out *= double(std::max<int64_t>(0, extent / std::max<int64_t>(1, stride[d]) + 1));
    }
    return 2 * out * elements(*w) / double(std::max<int64_t>(1, w->shape[0]));  // × Cin/groups × kernel
  }
  if (op == "aten::linear") {
    const TensorSpec *x = tensor(call, "input"), *w = tensor(call, "weight");
    return x && w && !w->shape.empty() ? 2 * elements(*x) * double(w->shape[0]) : 0;
  }
  // A product of a by b: 2 × a's elements × b's last dimension (batched ones too).
  const std::pair<const char*, const char*> products[] = {
      {"self", "mat2"}, {"mat1", "mat2"}, {"batch1", "batch2"}, {"self", "other"}};
  if (op == "aten::mm" || op == "aten::bmm" || op == "aten::addmm" || op == "aten::baddbmm" || op == "aten::matmul")
    for (const auto& [first, second] : products)
      if (const TensorSpec* a = tensor(call, first), *b = tensor(call, second); a && b && !b->shape.empty())
        return 2 * elements(*a) * double(b->shape.back());
  return 0;
}

}  // namespace

double expected_weight(const OpCall& call, std::size_t calls) {
  double bytes = 0, largest = 0, balance = 100;
  for (const auto& a : call.args)
    if (auto* t = std::get_if<TensorSpec>(&a.value.v)) {
      const double b = elements(*t) * dtype_bytes(t->dtype);
      bytes += b;
      largest = std::max(largest, b);
      const bool narrow_float = t->dtype == "f16" || t->dtype == "bf16" || t->dtype.rfind("f8", 0) == 0;
      if (narrow_float) balance = 300;
    }
  constexpr double kHostFloorBytes = 4000;  // every call costs the host something
  return (std::max(bytes + largest, flops(call) / balance) + kHostFloorBytes) * double(calls);
}

}  // namespace opcost
