#include "core/estimate/call_work_args.h"

#include <algorithm>
#include <array>

namespace opcost::call_work_args {

const NamedArg* named(const OpCall& call, std::string_view name) {
  for (const auto& a : call.args)
    if (a.name == name) return &a;
  return nullptr;
}

const TensorSpec* tensor(const OpCall& call, std::string_view name) {
  const NamedArg* a = named(call, name);
  return a == nullptr ? nullptr : std::get_if<TensorSpec>(&a->value.v);
}

double elements(const Shape& s) {
  double n = 1;
  for (int64_t d : s) n *= double(d);
  return n;
}

double bytes_of(const TensorSpec* t) { return t == nullptr ? 0 : elements(t->shape) * dtype_bytes(t->dtype); }

double accumulate_bytes(const std::string& dtype) { return dtype == "f64" ? 8 : 4; }

std::optional<Shape> int_list(const OpCall& call, std::string_view name, std::size_t rank, int64_t fallback) {
  const NamedArg* a = named(call, name);
  if (a == nullptr || a->value.is_none()) return Shape(rank, fallback);
  if (const auto* i = std::get_if<int64_t>(&a->value.v)) return Shape(rank, *i);
  const auto* list = std::get_if<ArgList>(&a->value.v);
  if (list == nullptr || (list->size() != rank && list->size() != 1)) return std::nullopt;
  Shape out;
  for (std::size_t k = 0; k < rank; ++k) {
    const auto* i = std::get_if<int64_t>(&(*list)[list->size() == 1 ? 0 : k].v);
    if (i == nullptr) return std::nullopt;
    out.push_back(*i);
  }
  return out;
}

std::optional<Shape> ints(const ArgValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v.v)) return Shape{*i};
  const auto* list = std::get_if<ArgList>(&v.v);
  if (list == nullptr) return std::nullopt;
  Shape out;
  for (const ArgValue& item : *list) {
    const auto* i = std::get_if<int64_t>(&item.v);
    if (i == nullptr) return std::nullopt;
    out.push_back(*i);
  }
  return out;
}

std::optional<int64_t> int_arg(const OpCall& call, std::string_view name, int64_t fallback) {
  const NamedArg* a = named(call, name);
  if (a == nullptr || a->value.is_none()) return fallback;
  const auto* i = std::get_if<int64_t>(&a->value.v);
  return i == nullptr ? std::nullopt : std::optional<int64_t>(*i);
}

std::optional<bool> bool_arg(const OpCall& call, std::string_view name, bool fallback) {
  const NamedArg* a = named(call, name);
  if (a == nullptr || a->value.is_none()) return fallback;
  const auto* b = std::get_if<bool>(&a->value.v);
  return b == nullptr ? std::nullopt : std::optional<bool>(*b);
}

std::optional<std::array<bool, 3>> gradient_mask(const OpCall& call) {
  const NamedArg* a = named(call, "output_mask");
  const auto* list = a == nullptr ? nullptr : std::get_if<ArgList>(&a->value.v);
  if (list == nullptr || list->size() != 3) return std::nullopt;
  std::array<bool, 3> asked{};
  for (std::size_t k = 0; k < 3; ++k) {
    const auto* b = std::get_if<bool>(&(*list)[k].v);
    if (b == nullptr) return std::nullopt;
    asked[k] = *b;
  }
  return asked;
}

std::optional<std::string> dtype_arg(const OpCall& call, std::string_view name, const std::string& fallback) {
  const NamedArg* a = named(call, name);
  if (a == nullptr || a->value.is_none()) return fallback;
  const auto* word = std::get_if<ArgValue::Word>(&a->value.v);
  if (word == nullptr) return std::nullopt;
  std::string_view text = word->text;
  if (text.starts_with("torch.")) text.remove_prefix(6);
  return canonical_dtype(text);
}

std::optional<std::size_t> wrap_dim(int64_t d, std::size_t rank) {
  const int64_t n = std::max<int64_t>(int64_t(rank), 1);
  if (d < -n || d >= n) return std::nullopt;
  return std::size_t(d < 0 ? d + n : d);
}

std::optional<Shape> broadcast(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()));
  for (std::size_t k = 0; k < out.size(); ++k) {
    const int64_t x = k < out.size() - a.size() ? 1 : a[k - (out.size() - a.size())];
    const int64_t y = k < out.size() - b.size() ? 1 : b[k - (out.size() - b.size())];
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[k] = x == 1 ? y : x;
  }
  return out;
}

namespace {

// bool < integer < floating < complex: the order of PyTorch's type promotion categories.
int category(const std::string& dtype) {
  if (dtype == "bool") return 0;
  if (dtype == "c64" || dtype == "c128") return 3;
  if (dtype.starts_with("f") || dtype == "bf16") return 2;
  return 1;
}

bool has(const std::vector<const TensorSpec*>& tensors, std::string_view dtype) {
  return std::any_of(tensors.begin(), tensors.end(), [&](const TensorSpec* t) { return t->dtype == dtype; });
}

// Strides in elements: as written, else row-major. Doubles: a hostile shape's products.
std::vector<double> strides_of(const TensorSpec& t) {
  std::vector<double> out(t.shape.size());
  if (t.strides && t.strides->size() == t.shape.size()) {
    for (std::size_t k = 0; k < out.size(); ++k) out[k] = double((*t.strides)[k]);
    return out;
  }
  double step = 1;
  for (std::size_t k = out.size(); k-- > 0;) {
    out[k] = step;
    step *= double(std::max<int64_t>(t.shape[k], 1));
  }
  return out;
}

}  // namespace

double promoted_bytes(const std::vector<const TensorSpec*>& tensors) {
  int top = -1;
  for (const TensorSpec* t : tensors) top = std::max(top, category(t->dtype));
  if (top < 0) return 0;
  double widest = 0;  // of the top category; a complex one's by its real part
  for (const TensorSpec* t : tensors) {
    const int c = category(t->dtype);
    if (c == top || (top == 3 && c == 2)) widest = std::max(widest, dtype_bytes(t->dtype) / (c == 3 ? 2.0 : 1.0));
  }
  if (top == 3) return 2 * widest;
  if (top == 2 && widest == 2 && has(tensors, "f16") && has(tensors, "bf16")) return 4;
  if (top == 1 && widest == 1 && has(tensors, "u8") && has(tensors, "i8")) return 2;
  return widest;
}

bool laid_out_as(const TensorSpec& t, std::string_view memory_format) {
  const std::size_t rank = t.shape.size();
  // The dimensions from the fastest-varying to the slowest.
  std::vector<std::size_t> order;
  if (memory_format == "channels_last" && rank == 4) {
    order = {1, 3, 2, 0};
  } else if (memory_format == "channels_last_3d" && rank == 5) {
    order = {1, 4, 3, 2, 0};
  } else if (memory_format.empty() || memory_format == "contiguous_format") {
    for (std::size_t k = rank; k-- > 0;) order.push_back(k);
  } else {
    return false;
  }
  if (elements(t.shape) == 0) return true;
  const std::vector<double> stride = strides_of(t);
  double expected = 1;
  for (std::size_t k : order) {
    if (t.shape[k] == 1) continue;
    if (stride[k] != expected) return false;
    expected *= double(t.shape[k]);
  }
  return true;
}

bool viewable_as(const TensorSpec& t, const Shape& shape) {
  if (t.shape.empty() || elements(t.shape) == 0 || laid_out_as(t, "contiguous_format")) return true;
  const Shape& old = t.shape;
  const std::vector<double> stride = strides_of(t);
  // PyTorch's computeStride: walk the old dimensions from the last, in chunks contiguous in
  // memory; each chunk must be made of whole dimensions of the new shape.
  int64_t view_d = int64_t(shape.size()) - 1;
  double chunk_base_stride = stride.back(), tensor_numel = 1, view_numel = 1;
  for (int64_t tensor_d = int64_t(old.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= double(old[tensor_d]);
    if (tensor_d == 0 || (old[tensor_d - 1] != 1 && stride[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        view_numel *= double(shape[view_d]);
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (tensor_d > 0) {
        chunk_base_stride = stride[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

}  // namespace opcost::call_work_args
