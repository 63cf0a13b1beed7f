// Binding a call to its operator's schema: the overload, the argument values, the canonical
// arguments. What the values of a tensor are is torch/input_synthesis's.
#include "torch/bind.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "core/inventory/compiled_kernel_name.h"
#include "core/spec/spec_file.h"
#include "core/text/text.h"
#include "torch/canonical_form.h"
#include "torch/device.h"
#include "torch/dtype_codes.h"
#include "torch/input_synthesis.h"
#include "torch/replay.h"

namespace opcost {

namespace {

// One call bound to one schema: its arguments converted one by one, tensors made (or, dry,
// only sized) as they come.
struct Binder {
  const OpCall& call;
  const c10::FunctionSchema& schema;
  c10::Device device;
  at::Generator gen;
  BoundCall out;
  std::map<std::string, const ArgValue*> given;  // by schema argument name
  bool dry = false;                              // check types and sizes only: no tensor is made
  // The tensor arguments bound so far (undefined when dry), for a later ':same[name]'.
  std::map<std::string, std::pair<const TensorSpec*, at::Tensor>> made;

  [[noreturn]] void fail(const c10::Argument& a, const std::string& what) const {
    throw ReplayError(fmt::format("{}: argument '{}' ({}): {}\n  schema: {}", call.display_name(), a.name(),
                                  a.type()->str(), what, c10::toString(schema)));
  }

  // An argument's tensor: the very tensor of an earlier argument for ':same[name]', else a new one.
  at::Tensor argument_tensor(const c10::Argument& a, const TensorSpec& t) {
    if (!t.same_as) {
      at::Tensor made_now = make_tensor(a, t, 0);
      made[a.name()] = {&t, made_now};
      return made_now;
    }
    const auto it = made.find(*t.same_as);
    if (it == made.end())
      fail(a, fmt::format("':same[{}]' names no tensor argument before '{}'; name an earlier tensor argument of the "
                          "call, or drop ':same'",
                          *t.same_as, a.name()));
    // The earlier argument's tensor, whatever its values' modifiers (a range, zeros): only what
    // makes a tensor itself must agree.
    const TensorSpec& earlier = *it->second.first;
    if (t.dtype != earlier.dtype || t.shape != earlier.shape || t.strides != earlier.strides ||
        t.device != earlier.device) {
      TensorSpec plain = t;
      plain.same_as.reset();
      fail(a, fmt::format("':same[{}]' is {}, but '{}' is {}: one tensor has one dtype, shape, layout and device; "
                          "write it as '{}' is, or drop ':same'",
                          *t.same_as, format_tensor(plain), *t.same_as, format_tensor(earlier), *t.same_as));
    }
    return it->second.second;
  }

  at::Tensor make_tensor(const c10::Argument& a, const TensorSpec& t, std::size_t list_pos) {
    if (t.same_as) fail(a, fmt::format("':same[{}]' is for a tensor argument, not an item of a list", *t.same_as));
    const at::ScalarType st = scalar_type_of(t.dtype);
    const c10::Device dev = t.device ? resolve_argument_device(*t.device) : device;
    const TensorFootprint f = footprint_of(t, st);
    if (f.problem == TensorFootprint::Problem::negative_stride) fail(a, "negative strides are not supported");
    if (f.problem == TensorFootprint::Problem::overflow)  // one line: the schema adds nothing to such a size
      throw ReplayError(
          fmt::format("{}: argument '{}': {} has more elements than a tensor can hold (over 2^63); use "
                      "smaller shapes",
                      call.display_name(), a.name(), format_tensor(t)));
    out.tensor_bytes += std::size_t(f.bytes);
    if (dev.is_cpu())
      out.host_bytes_peak = std::max<std::size_t>(out.host_bytes_peak, out.tensor_bytes + f.staging_bytes);
    if (out.dtype.empty() || (!at::isFloatingType(scalar_type_of(out.dtype)) && at::isFloatingType(st)))
      out.dtype = t.dtype;
    if (dry) return at::Tensor();
    return synthesize_tensor(ArgPlace{call.op, a.name(), list_pos, given}, t, st, f.storage, gen, dev);
  }

  int64_t enum_value(const c10::Argument& a, const ArgValue& v) {
    if (auto* i = std::get_if<int64_t>(&v.v)) return *i;
    auto* w = std::get_if<ArgValue::Word>(&v.v);
    if (!w) fail(a, fmt::format("expected an integer, got '{}'", format_value(v)));
    if (is_dtype_argument(a)) {
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
        return argument_tensor(a, *t);
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
        if (auto* w = std::get_if<ArgValue::Word>(&v.v)) return resolve_argument_device(w->text);
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

bool holds_tensor_spec(const ArgValue& v) {
  if (std::holds_alternative<TensorSpec>(v.v)) return true;
  if (const auto* list = std::get_if<ArgList>(&v.v))
    return std::any_of(list->begin(), list->end(), [](const ArgValue& e) { return holds_tensor_spec(e); });
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
      if (const auto* t = std::get_if<TensorSpec>(&it->second->v); t && t->same_as)
        for (std::size_t j = 0; j < b.out.inputs.size(); ++j)
          if (args[j].name() == *t->same_as) b.out.same_inputs.push_back({b.out.inputs.size(), j});
    } else if (a.default_value()) {
      iv = *a.default_value();
    } else if (a.type()->kind() == c10::TypeKind::OptionalType) {
      iv = c10::IValue();
      ++b.out.implicit_nones;
    } else {
      b.fail(a, "missing: this argument has no default");
    }
    // A dry bind makes no tensor: a tensor argument's canonical form is then its spec as given.
    const bool written = it != b.given.end();
    if (dry && written && holds_tensor_spec(*it->second)) {
      b.out.canonical.push_back({a.name(), *it->second});
    } else if (auto arg = canonical_argument(a, canonical_value(a, iv, written ? it->second : nullptr), written)) {
      b.out.canonical.push_back(std::move(*arg));
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
  if (names.empty() && is_compiled_kernel_name(call.op))
    throw ReplayError(fmt::format("{}: {}", call.display_name(), kGeneratedKernelNotHere));
  if (names.empty()) {
    auto near = similar_op_names(call.op);
    throw ReplayError(fmt::format("unknown operator '{}'{}", call.display_name(),
                                  near.empty() ? "" : fmt::format(" (did you mean {}?)", fmt::join(near, ", "))),
                      ReplayError::Kind::kUnknownOperator);
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

bool is_out_overload(const c10::FunctionSchema& schema) {
  const auto& args = schema.arguments();
  return std::any_of(args.begin(), args.end(), [](const c10::Argument& a) { return a.is_out(); });
}

}  // namespace opcost
