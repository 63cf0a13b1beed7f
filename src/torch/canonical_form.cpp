#include "torch/canonical_form.h"

#include <fmt/format.h>

#include <mutex>
#include <unordered_map>

#include "torch/dtype_codes.h"

namespace opcost {

namespace {

// Enum-like ints: names a user may write for them, in enum order.
const std::vector<std::string> kReductions = {"none", "mean", "sum"};
const std::vector<std::string> kMemoryFormats = {"contiguous_format", "preserve_format", "channels_last",
                                                 "channels_last_3d"};
const std::vector<std::string> kLayouts = {"strided",    "sparse_coo", "sparse_csr", "mkldnn",
                                           "sparse_csc", "sparse_bsr", "sparse_bsc", "jagged"};

c10::TypeKind real_kind(const c10::Argument& a) {
  c10::TypePtr t = a.real_type();
  if (auto o = t->cast<c10::OptionalType>()) t = o->getElementType();
  return t->kind();
}

// The canonical text of an argument's default. Registered schemas live as long as the
// process, so their arguments' addresses are stable keys.
const std::string& default_text(const c10::Argument& a) {
  static std::mutex mu;
  static std::unordered_map<const c10::Argument*, std::string> cache;
  std::lock_guard lock(mu);
  auto it = cache.find(&a);
  if (it == cache.end()) it = cache.emplace(&a, format_value(canonical_value(a, *a.default_value(), nullptr))).first;
  return it->second;
}

ArgValue canonical_scalar(const at::Scalar& s) {
  if (s.isIntegral(false)) return ArgValue{s.toLong()};
  if (s.isBoolean()) return ArgValue{s.toBool()};
  if (s.isComplex()) {
    const auto c = s.toComplexDouble();
    return ArgValue{ArgValue::Complex{c.real(), c.imag()}};
  }
  return ArgValue{s.toDouble()};
}

ArgValue canonical_tensor(const at::Tensor& t, const ArgValue* given_v) {
  TensorSpec s = tensor_spec_of(t);
  if (given_v)
    if (auto* g = std::get_if<TensorSpec>(&given_v->v)) {
      s.range = g->range;
      s.zeros_fraction = g->zeros_fraction;
      s.distinct = g->distinct;
      s.same_as = g->same_as;
      if (g->device) s.device = g->device;
    }
  return ArgValue{s};
}

}  // namespace

bool is_dtype_argument(const c10::Argument& a) { return real_kind(a) == c10::TypeKind::ScalarTypeType; }

const std::vector<std::string>* enum_names(const c10::Argument& a) {
  switch (real_kind(a)) {
    case c10::TypeKind::MemoryFormatType:
      return &kMemoryFormats;
    case c10::TypeKind::LayoutType:
      return &kLayouts;
    default:
      break;
  }
  if (a.name() == "reduction") return &kReductions;
  return nullptr;
}

ArgValue canonical_value(const c10::Argument& a, const c10::IValue& iv, const ArgValue* given_v) {
  if (iv.isNone()) return ArgValue{ArgValue::None{}};
  // C++ callers pass an undefined tensor where Python passes None (a conv without bias).
  if (iv.isTensor())
    return iv.toTensor().defined() ? canonical_tensor(iv.toTensor(), given_v) : ArgValue{ArgValue::None{}};
  if (iv.isInt()) {
    const int64_t i = iv.toInt();
    if (is_dtype_argument(a)) return ArgValue{ArgValue::Word{code_of(at::ScalarType(i))}};
    if (const auto* names = enum_names(a); names && i >= 0 && i < int64_t(names->size()))
      return ArgValue{ArgValue::Word{(*names)[i]}};
    return ArgValue{i};
  }
  if (iv.isDouble()) return ArgValue{iv.toDouble()};
  if (iv.isBool()) return ArgValue{iv.toBool()};
  if (iv.isComplexDouble()) {
    const auto c = iv.toComplexDouble();
    return ArgValue{ArgValue::Complex{c.real(), c.imag()}};
  }
  if (iv.isScalar()) return canonical_scalar(iv.toScalar());
  // A generator is replayed as None (the seeded default): its state is not an argument's size.
  if (iv.isGenerator()) return ArgValue{ArgValue::None{}};
  if (iv.isString()) return ArgValue{ArgValue::Word{iv.toStringRef()}};
  if (iv.isDevice()) return ArgValue{ArgValue::Word{iv.toDevice().str()}};
  if (iv.isList()) {
    ArgList items;
    const ArgList* given_items = given_v ? std::get_if<ArgList>(&given_v->v) : nullptr;
    const auto list = iv.toListRef();
    for (std::size_t i = 0; i < list.size(); ++i)
      items.push_back(
          canonical_value(a, list[i], given_items && i < given_items->size() ? &(*given_items)[i] : nullptr));
    return ArgValue{items};
  }
  // No argument of an ATen schema is left (a tuple or an object would need a TorchScript
  // caller): the signature says what it was, and its bind fails naming it.
  return ArgValue{ArgValue::Word{fmt::format("<{} value: no representation>", iv.tagKind())}};
}

std::optional<NamedArg> canonical_argument(const c10::Argument& a, ArgValue canonical, bool written) {
  if (a.default_value() && format_value(canonical) == default_text(a)) return std::nullopt;
  // An optional argument without a default binds to None when left out; any other must be
  // written (an undefined tensor given to a plain Tensor argument: None).
  if (canonical.is_none() && !a.default_value() && !written && a.type()->kind() == c10::TypeKind::OptionalType)
    return std::nullopt;
  return NamedArg{a.name(), std::move(canonical)};
}

std::string canonical_args(const c10::FunctionSchema& schema, std::vector<ArgValue> values) {
  std::vector<NamedArg> out;
  const auto& args = schema.arguments();
  for (std::size_t i = 0; i < args.size() && i < values.size(); ++i)
    if (auto arg = canonical_argument(args[i], std::move(values[i]), false)) out.push_back(std::move(*arg));
  return format_args(out);
}

TensorSpec tensor_spec_of(const at::Tensor& t) {
  TensorSpec s;
  s.dtype = code_of(t.scalar_type());
  s.shape = t.sizes().vec();
  if (!t.is_contiguous()) s.strides = t.strides().vec();
  return s;
}

}  // namespace opcost
