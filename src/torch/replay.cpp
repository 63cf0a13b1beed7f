// Schema-driven replay of ATen operators: binds textual arguments to an operator's schema,
// builds seeded random inputs and calls the operator boxed through the dispatcher.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/DeviceAccelerator.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/InferenceMode.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

#include "core/spec/spec_file.h"
#include "core/sys/host_memory.h"
#include "core/text/text.h"
#include "torch/bind.h"
#include "torch/input_values.h"
#include "torch/replay.h"

namespace opcost {

at::ScalarType scalar_type_of(const std::string& code) {
  static const std::map<std::string, at::ScalarType> m = {{"f64", at::kDouble},
                                                          {"f32", at::kFloat},
                                                          {"f16", at::kHalf},
                                                          {"bf16", at::kBFloat16},
                                                          {"i64", at::kLong},
                                                          {"i32", at::kInt},
                                                          {"i16", at::kShort},
                                                          {"i8", at::kChar},
                                                          {"u8", at::kByte},
                                                          {"bool", at::kBool},
                                                          {"c64", at::kComplexFloat},
                                                          {"c128", at::kComplexDouble},
                                                          {"f8e4m3", at::ScalarType::Float8_e4m3fn},
                                                          {"f8e5m2", at::ScalarType::Float8_e5m2}};
  return m.at(code);
}

std::string code_of(at::ScalarType t) {
  // Called for every tensor an inventory records: a table, built once.
  static const std::map<at::ScalarType, std::string> codes = [] {
    std::map<at::ScalarType, std::string> m;
    for (const auto& d : dtype_names()) m.emplace(scalar_type_of(d.canonical), d.canonical);
    return m;
  }();
  auto it = codes.find(t);
  return it != codes.end() ? it->second : c10::toString(t);
}

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

// Inputs are drawn where they live, from a generator of that device seeded with `seed`: the
// same data on every run on that kind of device, without drawing hundreds of MB on one host
// thread first (the H100's resnet50 b32: 80 ms an operator). A dry bind draws nothing.
at::Generator seeded_generator(c10::Device device, uint64_t seed, bool dry) {
  if (device.is_cpu() || dry) return at::detail::createCPUGenerator(seed);
  at::Generator g = at::globalContext().defaultGenerator(device).clone();
  std::lock_guard lock(g.mutex());
  g.set_current_seed(seed);
  return g;
}

struct Binder {
  const OpCall& call;
  const c10::FunctionSchema& schema;
  c10::Device device;
  at::Generator gen;
  BoundCall out;
  std::map<std::string, const ArgValue*> given;  // by schema argument name
  bool dry = false;                              // check types and sizes only: no tensor is made

  [[noreturn]] void fail(const c10::Argument& a, const std::string& what) const {
    throw ReplayError(fmt::format("{}: argument '{}' ({}): {}\n  schema: {}", call.display_name(), a.name(),
                                  a.type()->str(), what, c10::toString(schema)));
  }

  at::Tensor make_tensor(const c10::Argument& a, const TensorSpec& t, std::size_t list_pos) {
    const at::ScalarType st = scalar_type_of(t.dtype);
    c10::Device dev = t.device ? resolve_device(*t.device) : device;
    // Elements of storage, checked for overflow (LibTorch would fail deep inside with "Stride
    // calculation overflowed" and a backtrace).
    auto overflow = [&] {  // one line: the schema adds nothing to a size no tensor can have
      throw ReplayError(
          fmt::format("{}: argument '{}': {} has more elements than a tensor can hold (over 2^63); use "
                      "smaller shapes",
                      call.display_name(), a.name(), format_tensor(t)));
    };
    int64_t storage = 1;
    bool empty = false;
    for (auto d : t.shape) {
      if (d == 0) empty = true;
      if (!empty && __builtin_mul_overflow(storage, d, &storage)) overflow();
    }
    if (t.strides) {
      storage = 1;
      for (std::size_t i = 0; i < t.shape.size(); ++i) {
        if ((*t.strides)[i] < 0) fail(a, "negative strides are not supported");
        int64_t span = 0;
        if (!empty && (__builtin_mul_overflow(t.shape[i] - 1, (*t.strides)[i], &span) ||
                       __builtin_add_overflow(storage, span, &storage)))
          overflow();
      }
    }
    if (empty) storage = 0;
    const int64_t element = int64_t(c10::elementSize(st));
    int64_t bytes = 0;
    if (__builtin_mul_overflow(storage, element, &bytes)) overflow();
    out.tensor_bytes += std::size_t(bytes);
    // The seeded data is drawn in float (complex) first: the peak a tensor adds.
    const int64_t staging = storage * (at::isComplexType(st) ? 8 : at::isFloatingType(st) ? 4 : 8);
    if (dev.is_cpu()) out.host_bytes_peak = std::max<std::size_t>(out.host_bytes_peak, out.tensor_bytes + staging);
    if (out.dtype.empty() || (!at::isFloatingType(scalar_type_of(out.dtype)) && at::isFloatingType(st)))
      out.dtype = t.dtype;
    if (dry) return at::Tensor();
    const auto draw = at::TensorOptions().device(gen.device());  // where the generator draws
    // Values the call needs to be valid and to cost what the model paid (torch/input_values).
    const at::Tensor flat = draw_values(ArgPlace{call.op, a.name(), list_pos, given}, t, st, storage, gen, draw);
    at::Tensor x = flat.to(st).to(dev);
    return t.strides ? x.as_strided(t.shape, *t.strides) : x.view(t.shape);
  }

  int64_t enum_value(const c10::Argument& a, const ArgValue& v) {
    if (auto* i = std::get_if<int64_t>(&v.v)) return *i;
    auto* w = std::get_if<ArgValue::Word>(&v.v);
    if (!w) fail(a, fmt::format("expected an integer, got '{}'", format_value(v)));
    if (real_kind(a) == c10::TypeKind::ScalarTypeType) {
      if (auto code = canonical_dtype(w->text)) return int64_t(scalar_type_of(*code));
      fail(a, fmt::format("'{}' is not a dtype (f32, bf16, f16, i64, ...)", w->text));
    }
    if (const auto* names = enum_names(a)) {
      auto it = std::find(names->begin(), names->end(), w->text);
      if (it != names->end()) return int64_t(it - names->begin());
      fail(a, fmt::format("'{}' is not one of: {}", w->text, fmt::join(*names, ", ")));
    }
    fail(a, fmt::format("expected an integer, got '{}'", w->text));
  }

  std::vector<int64_t> int_list(const c10::Argument& a, const ArgValue& v) {
    if (auto* i = std::get_if<int64_t>(&v.v)) {  // `padding=1` for int[2]: broadcast
      return std::vector<int64_t>(a.N() ? std::size_t(*a.N()) : 1, *i);
    }
    auto* l = std::get_if<ArgList>(&v.v);
    if (!l) fail(a, fmt::format("expected a list of integers like [1,1], got '{}'", format_value(v)));
    std::vector<int64_t> out;
    for (const auto& item : *l) {
      auto* i = std::get_if<int64_t>(&item.v);
      if (!i) fail(a, fmt::format("expected integers in the list, got '{}'", format_value(item)));
      out.push_back(*i);
    }
    return out;
  }

  c10::IValue convert(const c10::Argument& a, const c10::TypePtr& type, const ArgValue& v) {
    using K = c10::TypeKind;
    switch (type->kind()) {
      case K::OptionalType:
        if (v.is_none()) return c10::IValue();
        return convert(a, type->castRaw<c10::OptionalType>()->getElementType(), v);
      case K::TensorType: {
        // C++ callers pass an undefined tensor where no tensor is meant, even to an argument
        // the schema does not mark optional (cuDNN attention's backward takes attn_bias so).
        if (v.is_none()) return at::Tensor();
        auto* t = std::get_if<TensorSpec>(&v.v);
        if (!t) fail(a, fmt::format("expected a tensor like f32[2,3], got '{}'", format_value(v)));
        return make_tensor(a, *t, 0);
      }
      case K::IntType:
      case K::SymIntType:
        return enum_value(a, v);
      case K::FloatType:
      case K::SymFloatType:
        if (auto* d = std::get_if<double>(&v.v)) return *d;
        if (auto* i = std::get_if<int64_t>(&v.v)) return double(*i);
        fail(a, fmt::format("expected a number, got '{}'", format_value(v)));
      case K::BoolType:
      case K::SymBoolType:
        if (auto* b = std::get_if<bool>(&v.v)) return *b;
        if (auto* i = std::get_if<int64_t>(&v.v); i && (*i == 0 || *i == 1)) return *i == 1;
        fail(a, fmt::format("expected true or false, got '{}'", format_value(v)));
      case K::NumberType:
        if (auto* d = std::get_if<double>(&v.v)) return at::Scalar(*d);
        if (auto* i = std::get_if<int64_t>(&v.v)) return at::Scalar(*i);
        if (auto* b = std::get_if<bool>(&v.v)) return at::Scalar(*b);
        if (auto* c = std::get_if<ArgValue::Complex>(&v.v)) return at::Scalar(c10::complex<double>(c->real, c->imag));
        fail(a, fmt::format("expected a number, got '{}'", format_value(v)));
      case K::ComplexType:
        if (auto* c = std::get_if<ArgValue::Complex>(&v.v)) return c10::complex<double>(c->real, c->imag);
        if (auto* d = std::get_if<double>(&v.v)) return c10::complex<double>(*d, 0);
        if (auto* i = std::get_if<int64_t>(&v.v)) return c10::complex<double>(double(*i), 0);
        fail(a, fmt::format("expected a complex number such as 1.0+2.0j, got '{}'", format_value(v)));
      case K::StringType:  // also a Dimname, which travels boxed as its name ("dimname::N")
        if (auto* w = std::get_if<ArgValue::Word>(&v.v)) return w->text;
        fail(a, fmt::format("expected a string such as tanh or \"bd,de->be\", got '{}'", format_value(v)));
      case K::DeviceObjType:
        if (auto* w = std::get_if<ArgValue::Word>(&v.v)) return resolve_device(w->text);
        fail(a, fmt::format("expected a device (cpu, cuda), got '{}'", format_value(v)));
      case K::GeneratorType:
        if (v.is_none()) return c10::IValue();
        fail(a, "only None is accepted for a generator");
      case K::ListType: {
        const c10::TypePtr elem = type->containedType(0);
        const K ek = elem->kind();
        if (ek == K::IntType || ek == K::SymIntType) return int_list(a, v);
        auto* l = std::get_if<ArgList>(&v.v);
        if (!l) fail(a, fmt::format("expected a list, got '{}'", format_value(v)));
        if (ek == K::TensorType) {
          c10::List<at::Tensor> ts;
          for (std::size_t i = 0; i < l->size(); ++i) {
            auto* t = std::get_if<TensorSpec>(&(*l)[i].v);
            if (!t) fail(a, fmt::format("item {}: expected a tensor, got '{}'", i, format_value((*l)[i])));
            ts.push_back(make_tensor(a, *t, i));
          }
          return ts;
        }
        if (ek == K::OptionalType && elem->containedType(0)->kind() == K::TensorType) {
          c10::List<std::optional<at::Tensor>> ts;
          for (std::size_t i = 0; i < l->size(); ++i) {
            if ((*l)[i].is_none()) {
              ts.push_back(std::nullopt);
              continue;
            }
            auto* t = std::get_if<TensorSpec>(&(*l)[i].v);
            if (!t) fail(a, fmt::format("item {}: expected a tensor or None", i));
            ts.push_back(make_tensor(a, *t, i));
          }
          return ts;
        }
        // Any other element type (Scalar, float, bool, str, and their optionals: None inside), each
        // item as that type, in a list that carries the element type as the schema declares it.
        c10::impl::GenericList items(elem);
        items.reserve(l->size());
        for (const auto& item : *l) items.push_back(convert(a, elem, item));
        return items;
      }
      default:
        fail(a, fmt::format("arguments of type {} are not supported", type->str()));
    }
  }
};

}  // namespace

// The value as opcost writes it, normalised (dtype codes, enum names, broadcast lists).
ArgValue canonical_value(const c10::Argument& a, const c10::IValue& iv, const ArgValue* given_v) {
  if (iv.isNone()) return ArgValue{ArgValue::None{}};
  // C++ callers pass an undefined tensor where Python passes None (a conv without bias).
  if (iv.isTensor() && !iv.toTensor().defined()) return ArgValue{ArgValue::None{}};
  if (iv.isTensor()) {
    TensorSpec s = tensor_spec_of(iv.toTensor());
    if (given_v)
      if (auto* g = std::get_if<TensorSpec>(&given_v->v)) {
        s.range = g->range;
        s.zeros_fraction = g->zeros_fraction;
        s.distinct = g->distinct;
        if (g->device) s.device = g->device;
      }
    return ArgValue{s};
  }
  if (iv.isInt()) {
    const int64_t i = iv.toInt();
    if (real_kind(a) == c10::TypeKind::ScalarTypeType) return ArgValue{ArgValue::Word{code_of(at::ScalarType(i))}};
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
  if (iv.isScalar()) {
    const at::Scalar s = iv.toScalar();
    if (s.isIntegral(false)) return ArgValue{s.toLong()};
    if (s.isBoolean()) return ArgValue{s.toBool()};
    if (s.isComplex()) {
      const auto c = s.toComplexDouble();
      return ArgValue{ArgValue::Complex{c.real(), c.imag()}};
    }
    return ArgValue{s.toDouble()};
  }
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

namespace {

bool holds_tensor_spec(const ArgValue& v) {
  if (std::holds_alternative<TensorSpec>(v.v)) return true;
  if (const auto* list = std::get_if<ArgList>(&v.v))
    return std::any_of(list->begin(), list->end(), [](const ArgValue& e) { return holds_tensor_spec(e); });
  return false;
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

}  // namespace

std::vector<NamedArg> drop_defaults(const c10::FunctionSchema& schema, std::vector<ArgValue> values) {
  std::vector<NamedArg> out;
  const auto& args = schema.arguments();
  for (std::size_t i = 0; i < args.size() && i < values.size(); ++i) {
    const auto& a = args[i];
    if (a.default_value() && format_value(values[i]) == default_text(a)) continue;
    // An optional argument without a default binds to None when left out; any other must be
    // written (an undefined tensor given to a plain Tensor argument: None).
    if (values[i].is_none() && !a.default_value() && a.type()->kind() == c10::TypeKind::OptionalType) continue;
    out.push_back({a.name(), std::move(values[i])});
  }
  return out;
}

c10::Device resolve_device(const std::string& spec) {
  if (spec == "auto") {
    auto acc = at::accelerator::getAccelerator(false);
    if (acc && *acc == at::kCUDA && at::accelerator::deviceCount() > 0) return c10::Device(at::kCUDA, 0);
    return c10::Device(at::kCPU);
  }
  try {
    c10::Device d(spec);
    if (d.is_cuda() && (!at::hasCUDA() || at::accelerator::deviceCount() == 0))
      throw ReplayError(
          fmt::format("device '{}' requested but this machine has no CUDA GPU "
                      "(use --device cpu)",
                      spec));
    if (d.is_cuda() && !d.has_index()) d = c10::Device(at::kCUDA, 0);
    return d;
  } catch (const c10::Error&) {
    throw ReplayError(fmt::format("unknown device '{}' (use auto, cpu, cuda or cuda:N)", spec));
  }
}

int cuda_device_count() {
  auto acc = at::accelerator::getAccelerator(false);
  return acc && *acc == at::kCUDA ? int(at::accelerator::deviceCount()) : 0;
}

TensorSpec tensor_spec_of(const at::Tensor& t) {
  TensorSpec s;
  s.dtype = code_of(t.scalar_type());
  s.shape = t.sizes().vec();
  if (!t.is_contiguous()) s.strides = t.strides().vec();
  return s;
}

namespace {

bool is_out_overload(const c10::FunctionSchema& schema) {
  for (const auto& a : schema.arguments())
    if (a.is_out()) return true;
  return false;
}

BoundCall bind_to(const c10::OperatorHandle& handle, const OpCall& call, c10::Device device, uint64_t seed, bool dry) {
  const c10::FunctionSchema& schema = handle.schema();
  Binder b{call, schema, device, seeded_generator(device, seed, dry), {}, {}, dry};
  b.out.handle = handle;
  b.out.overload = schema.overload_name();
  const auto& args = schema.arguments();
  if (is_out_overload(schema))
    throw ReplayError(fmt::format(
        "{}: out= overloads are not replayed; use {} with the same arguments less the output (opcost picks the "
        "functional overload from them)",
        call.display_name(), call.op));
  // Positional values fill the positional (non-kwarg-only) parameters in order.
  std::size_t next_positional = 0;
  for (const auto& na : call.args) {
    if (na.name.empty()) {
      while (next_positional < args.size() && args[next_positional].kwarg_only()) ++next_positional;
      if (next_positional >= args.size())
        throw ReplayError(fmt::format("{}: too many positional arguments ('{}' is one too many)\n  schema: {}",
                                      call.display_name(), format_value(na.value), c10::toString(schema)));
      const std::string& name = args[next_positional++].name();
      if (b.given.count(name))
        throw ReplayError(fmt::format("{}: argument '{}' given twice: by name, and as the positional value '{}'",
                                      call.display_name(), name, format_value(na.value)));
      b.given[name] = &na.value;
      continue;
    }
    auto it = std::find_if(args.begin(), args.end(), [&](const c10::Argument& a) { return a.name() == na.name; });
    if (it == args.end()) {
      std::vector<std::string> names;
      for (const auto& a : args) names.push_back(a.name());
      throw ReplayError(fmt::format("{}: no argument named '{}'; the schema's arguments are: {}\n  schema: {}",
                                    call.display_name(), na.name, fmt::join(names, ", "), c10::toString(schema)));
    }
    if (b.given.count(na.name))
      throw ReplayError(fmt::format("{}: argument '{}' given twice", call.display_name(), na.name));
    b.given[na.name] = &na.value;
  }
  for (const auto& a : args) {
    auto it = b.given.find(a.name());
    c10::IValue iv;
    if (it != b.given.end()) {
      iv = b.convert(a, a.type(), *it->second);
    } else if (a.default_value()) {
      iv = *a.default_value();
    } else if (a.type()->kind() == c10::TypeKind::OptionalType) {
      iv = c10::IValue();
      ++b.out.implicit_nones;
    } else {
      b.fail(a, "missing: this argument has no default");
    }
    // A dry bind makes no tensor: a tensor argument's canonical form is then its spec as given.
    const bool given_tensors = it != b.given.end() && holds_tensor_spec(*it->second);
    if (!dry || !given_tensors) {
      ArgValue canon = canonical_value(a, iv, it != b.given.end() ? it->second : nullptr);
      const bool is_default = a.default_value() && format_value(canon) == default_text(a);
      if (!is_default && !(canon.is_none() && !a.default_value() && it == b.given.end()))
        b.out.canonical.push_back({a.name(), canon});
    } else {
      b.out.canonical.push_back({a.name(), *it->second});
    }
    b.out.inputs.push_back(std::move(iv));
  }
  return std::move(b.out);
}

// Resolution order among overloads that all fit: named-tensor (Dimname) overloads last, then
// those that fit only by leaving more optional arguments as None, then the common names.
std::tuple<bool, std::size_t, int, std::string> overload_rank(const c10::FunctionSchema& schema,
                                                              std::size_t implicit_nones) {
  bool dimname = false;
  for (const auto& a : schema.arguments()) dimname |= a.type()->str().find("Dimname") != std::string::npos;
  static const std::vector<std::string> common = {"", "Tensor", "int", "Scalar", "self", "input", "dim"};
  const auto at = std::find(common.begin(), common.end(), schema.overload_name());
  return {dimname, implicit_nones, int(at - common.begin()), schema.overload_name()};
}

struct Resolved {
  c10::OperatorHandle handle;
  std::string note;  // how the overload was chosen, when the call did not name it
};

// The operator the call names, with its overload; when it names none and the op has no
// default overload, the functional overload its arguments fit, as torch.ops.aten.add(...)
// chooses one.
Resolved resolve_overload(const OpCall& call, c10::Device device) {
  auto& dispatcher = c10::Dispatcher::singleton();
  if (auto handle = dispatcher.findSchema({call.op, call.overload})) return {*handle, ""};
  std::vector<c10::OperatorHandle> candidates;
  std::vector<std::string> names;
  for (const auto& n : dispatcher.getAllOpNames()) {
    if (n.name != call.op) continue;
    names.push_back(n.overload_name.empty() ? "(default)" : n.overload_name);
    if (auto h = dispatcher.findSchema(n); h && !is_out_overload(h->schema())) candidates.push_back(*h);
  }
  std::sort(names.begin(), names.end());
  if (names.empty()) {
    auto near = similar_op_names(call.op);
    throw ReplayError(fmt::format("unknown operator '{}'{}", call.display_name(),
                                  near.empty() ? "" : fmt::format(" (did you mean {}?)", fmt::join(near, ", "))));
  }
  if (!call.overload.empty())
    throw ReplayError(
        fmt::format("{}: no overload '{}'; its overloads are: {}", call.op, call.overload, fmt::join(names, ", ")));
  std::vector<std::pair<c10::OperatorHandle, std::size_t>> fits;
  std::vector<std::string> why;
  for (const auto& h : candidates) {
    try {
      fits.push_back({h, bind_to(h, call, device, 0, true).implicit_nones});
    } catch (const ReplayError& e) {
      std::string first_line = e.what();
      first_line = first_line.substr(0, first_line.find('\n'));
      why.push_back(fmt::format("  .{}: {}", h.schema().overload_name(), first_line));
    }
  }
  if (fits.empty())
    throw ReplayError(fmt::format("{} has no default overload and the arguments fit none of its overloads:\n{}",
                                  call.op, fmt::join(why, "\n")));
  std::sort(fits.begin(), fits.end(), [](const auto& a, const auto& b) {
    return overload_rank(a.first.schema(), a.second) < overload_rank(b.first.schema(), b.second);
  });
  const auto& chosen = fits.front().first;
  std::string note = fmt::format("{} has no default overload: took {}.{}, the one the arguments fit", call.op, call.op,
                                 chosen.schema().overload_name());
  if (fits.size() > 1) {
    std::vector<std::string> others;
    for (std::size_t i = 1; i < fits.size(); ++i) others.push_back(fits[i].first.schema().overload_name());
    note += fmt::format(" (also fit: {}; name one to choose it)", fmt::join(others, ", "));
  }
  return {chosen, note};
}

}  // namespace

BoundCall bind_call(const OpCall& call, c10::Device device, uint64_t seed) {
  Resolved r = resolve_overload(call, device);
  BoundCall b = bind_to(r.handle, call, device, seed, false);
  b.resolution_note = std::move(r.note);
  return b;
}

BoundCall check_call(const OpCall& call, c10::Device device) {
  Resolved r = resolve_overload(call, device);
  BoundCall b = bind_to(r.handle, call, device, 0, true);
  b.resolution_note = std::move(r.note);
  return b;
}

std::string canonical_signature(const std::string& op_name, const std::string& args_text) {
  const OpCall call = parse_call(op_name, split_call_line(args_text));
  return format_args(check_call(call, c10::Device(c10::kCPU)).canonical);
}

std::vector<std::string> similar_op_names(const std::string& name, std::size_t max) {
  std::vector<std::string> names;
  for (const auto& n : c10::Dispatcher::singleton().getAllOpNames()) names.push_back(n.name);
  return closest(name, names, max);
}

namespace {

std::string first_line(std::string_view text) { return std::string(text.substr(0, text.find('\n'))); }

// Allocators that fail without LibTorch's OutOfMemoryError type still say so in their text.
bool is_out_of_memory_text(std::string_view text) {
  for (const char* s : {"out of memory", "can't allocate memory", "not enough memory", "Cannot allocate memory"})
    if (text.find(s) != std::string_view::npos) return true;
  return false;
}

}  // namespace

std::optional<std::string> host_allocation_failure(std::string_view text) {
  if (text.find("CPUAllocator") == std::string_view::npos || !is_out_of_memory_text(text)) return std::nullopt;
  std::string asked = "an allocation";
  constexpr std::string_view kTried = "tried to allocate ";
  if (const auto at = text.find(kTried); at != std::string_view::npos) {
    std::uint64_t bytes = 0;
    const char* start = text.data() + at + kTried.size();
    if (const auto [end, ec] = std::from_chars(start, text.data() + text.size(), bytes); ec == std::errc())
      asked = fmt::format("an allocation of {}", format_bytes(double(bytes)));
  }
  const auto free = available_host_memory_bytes();
  // A limit on the process's address space (ulimit -v) fails allocations the memory could hold.
  rlimit limit{};
  const bool limited = getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY;
  return fmt::format("out of host memory: {} failed{}{}", asked,
                     free ? fmt::format(", {} available", format_bytes(double(*free))) : "",
                     limited ? fmt::format(" (and this process may map at most {} in all: ulimit -v)",
                                           format_bytes(double(limit.rlim_cur)))
                             : "");
}

namespace {

// One line: what was asked, what is free, the fix.
std::string out_of_memory(const std::string& label, c10::Device device, std::size_t input_bytes,
                          std::string_view torch_text) {
  std::string free;
  if (device.is_cpu())
    if (auto bytes = available_host_memory_bytes()) free = fmt::format(", {} available", format_bytes(double(*bytes)));
  return fmt::format("{}: out of memory on {} (inputs {}{}; {}); use smaller shapes{}", label, device.str(),
                     format_bytes(double(input_bytes)), free, first_line(torch_text),
                     device.is_cuda() ? ", or free the GPU's memory" : "");
}

// What a bound call is, as the measurement and the database record it (autocast and the cold
// input sets are the caller's).
CallInfo info_of(const OpCall& call, const BoundCall& b, c10::Device device) {
  CallInfo info;
  info.op = call.op;
  info.overload = b.overload;
  info.resolution_note = b.resolution_note;
  info.canonical_args = format_args(b.canonical);
  info.schema = c10::toString(b.handle->schema());
  info.dtype = b.dtype;
  info.device_kind = device.is_cuda() ? "cuda" : "cpu";
  info.device_index = device.has_index() ? device.index() : 0;
  info.input_bytes = b.tensor_bytes;
  return info;
}

// The schema argument indices a cache mode rotates: none when warm, every tensor argument when
// "cold", the named ones for "cold:<arg>,<arg>".
std::vector<std::size_t> cold_arguments(const std::string& mode, const c10::FunctionSchema& schema) {
  const auto& args = schema.arguments();
  std::vector<std::size_t> out;
  if (mode == "warm") return out;
  if (mode == "cold") {
    for (std::size_t i = 0; i < args.size(); ++i) out.push_back(i);
    return out;
  }
  if (mode.rfind("cold:", 0) != 0)
    throw ReplayError(fmt::format("unknown cache mode '{}' (use warm, cold, or cold:<argument>,...)", mode));
  std::stringstream names(mode.substr(5));
  for (std::string name; std::getline(names, name, ',');) {
    if (name.empty())
      throw ReplayError(fmt::format("cache mode '{}' names an empty argument (use cold:<argument>,...)", mode));
    auto it = std::find_if(args.begin(), args.end(), [&](const c10::Argument& a) { return a.name() == name; });
    if (it == args.end()) {
      std::vector<std::string> names;
      for (const auto& a : args) names.push_back(a.name());
      throw ReplayError(fmt::format("cache mode '{}': {} has no argument '{}' (its arguments: {})", mode, schema.name(),
                                    name, fmt::join(names, ", ")));
    }
    out.push_back(std::size_t(it - args.begin()));
  }
  if (out.empty()) throw ReplayError(fmt::format("cache mode '{}' names no argument (use cold:<argument>,...)", mode));
  return out;
}

std::size_t ivalue_tensor_bytes(const c10::IValue& iv) {
  if (iv.isTensor()) return iv.toTensor().defined() ? iv.toTensor().nbytes() : 0;
  std::size_t bytes = 0;
  if (iv.isTensorList())
    for (const at::Tensor& t : iv.toTensorList()) bytes += t.defined() ? t.nbytes() : 0;
  return bytes;
}

// A copy of an argument's tensors (a list's each); anything else as it is.
c10::IValue cloned(const c10::IValue& iv) {
  if (iv.isTensor()) return iv.toTensor().defined() ? c10::IValue(iv.toTensor().clone()) : iv;
  if (iv.isTensorList()) {
    c10::List<at::Tensor> copies;
    for (const at::Tensor& t : iv.toTensorList()) copies.push_back(t.defined() ? t.clone() : t);
    return copies;
  }
  return iv;
}

class PreparedCallImpl : public PreparedCall {
 public:
  PreparedCallImpl(const OpCall& call, const ReplayOptions& opt) {
    const c10::Device device = resolve_device(opt.device);
    c10::InferenceMode guard;
    const std::string label = fmt::format("{} {}", call.display_name(), format_args(call.args));
    std::size_t needed = 0;
    try {
      // Sizes first: inputs that cannot fit are refused with the figures, before LibTorch
      // tries (and the system may kill the process instead of failing the allocation).
      const BoundCall sizes = check_call(call, device);
      needed = sizes.tensor_bytes;
      const std::vector<std::size_t> cold = cold_arguments(opt.cache_mode, sizes.handle->schema());
      const auto free = available_host_memory_bytes();
      if (free && sizes.host_bytes_peak > *free)
        throw ReplayError(
            fmt::format("{}: the inputs need {} of host memory to make, but {} is available; use smaller shapes", label,
                        format_bytes(double(sizes.host_bytes_peak)), format_bytes(double(*free))));
      BoundCall b = bind_call(call, device, opt.seed);
      handle_ = b.handle;
      info_ = info_of(call, b, device);
      sets_.push_back(std::move(b.inputs));
      if (!cold.empty()) {
        // Rotate over enough copies of the cold inputs that each call finds them out of cache.
        std::size_t bytes = 0;
        for (std::size_t a : cold) bytes += ivalue_tensor_bytes(sets_.front()[a]);
        const std::size_t n =
            std::clamp<std::size_t>(bytes ? (opt.cold_footprint_bytes + bytes - 1) / bytes : 1, 2, 256);
        for (std::size_t i = 1; i < n; ++i) {
          std::vector<c10::IValue> copy = sets_.front();
          for (std::size_t a : cold) copy[a] = cloned(copy[a]);
          sets_.push_back(std::move(copy));
        }
      }
      info_.cache_mode = opt.cache_mode;
      info_.input_sets = sets_.size();
      device_type_ = device.type();
      autocast_ = autocast_dtype(opt.autocast);  // resolved once: call() stays lean
      if (autocast_) info_.autocast = code_of(*autocast_);
      call_checked();
    } catch (const c10::OutOfMemoryError& e) {
      throw ReplayError(out_of_memory(label, device, needed, e.what_without_backtrace()));
    } catch (const std::bad_alloc&) {
      throw ReplayError(out_of_memory(label, device, needed, "the allocation failed"));
    } catch (const c10::Error& e) {  // a LibTorch check while making the inputs: its message, no backtrace
      if (auto oom = host_allocation_failure(e.what_without_backtrace()))  // the CPU allocator's failure
        throw ReplayError(
            fmt::format("{}: {} (inputs {}); use smaller shapes", label, *oom, format_bytes(double(needed))));
      throw ReplayError(fmt::format("{}: {}", label, first_line(e.what_without_backtrace())));
    }
  }

  void call() override {
    stack_ = sets_[next_];
    if (++next_ == sets_.size()) next_ = 0;
    if (!autocast_) {
      handle_->callBoxed(stack_);
    } else {
      AutocastScope scope(autocast_, device_type_);  // a few thread-local stores per call
      handle_->callBoxed(stack_);
    }
  }

 private:
  // The first call, with the op's own error text wrapped in ours.
  void call_checked() {
    try {
      call();
      if (info_.device_kind == "cuda") at::accelerator::synchronizeDevice(info_.device_index);
    } catch (const c10::OutOfMemoryError&) {
      throw;
    } catch (const std::bad_alloc&) {
      throw;
    } catch (const c10::Error& e) {
      if (is_out_of_memory_text(e.what_without_backtrace())) throw;  // reported as such by the constructor
      throw ReplayError(fmt::format("{} rejected the arguments {}:\n  {}\n  schema: {}",
                                    info_.op + (info_.overload.empty() ? "" : "." + info_.overload),
                                    info_.canonical_args, e.what_without_backtrace(), info_.schema));
    }
  }

  std::optional<c10::OperatorHandle> handle_;
  std::optional<at::ScalarType> autocast_;
  c10::DeviceType device_type_ = c10::DeviceType::CPU;
  std::size_t next_ = 0;
  std::vector<std::vector<c10::IValue>> sets_;
  std::vector<c10::IValue> stack_;
};

}  // namespace

CallInfo PreparedCall::identify(const OpCall& call, const ReplayOptions& opt) {
  try {
    const c10::Device device = resolve_device(opt.device);
    CallInfo info = info_of(call, check_call(call, device), device);
    if (const auto a = autocast_dtype(opt.autocast)) info.autocast = code_of(*a);
    return info;
  } catch (const c10::Error& e) {
    throw ReplayError(fmt::format("{}: {}", call.display_name(), first_line(e.what_without_backtrace())));
  }
}

std::string PreparedCall::check(const OpCall& call, const ReplayOptions& opt) {
  return identify(call, opt).resolution_note;
}

std::unique_ptr<PreparedCall> PreparedCall::prepare(const OpCall& call, const ReplayOptions& opt) {
  return std::make_unique<PreparedCallImpl>(call, opt);
}

std::optional<at::ScalarType> autocast_dtype(const std::string& name) {
  if (name.empty()) return std::nullopt;
  const auto code = canonical_dtype(name);
  if (!code || (*code != "bf16" && *code != "f16"))
    throw ReplayError(fmt::format("autocast dtype '{}' is not supported (use bf16 or fp16)", name));
  return scalar_type_of(*code);
}

AutocastScope::AutocastScope(std::optional<at::ScalarType> dtype, c10::DeviceType device) : device_(device) {
  if (!dtype) return;
  active_ = true;
  was_enabled_ = at::autocast::is_autocast_enabled(device_);
  was_dtype_ = at::autocast::get_autocast_dtype(device_);
  at::autocast::set_autocast_enabled(device_, true);
  at::autocast::set_autocast_dtype(device_, *dtype);
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  at::autocast::set_autocast_enabled(device_, was_enabled_);
  at::autocast::set_autocast_dtype(device_, was_dtype_);
  if (!was_enabled_) at::autocast::clear_cache();
}

}  // namespace opcost
