#include "torch/observer.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>
#include <fmt/format.h>

#include <optional>
#include <variant>

#include "torch/bind.h"

namespace opcost {

namespace {

// What the observer keeps of an input: tensors as their specs (cheap: no data, no
// reference that would keep activations alive), everything else as the IValue itself.
using Slot = std::variant<TensorSpec, std::vector<TensorSpec>, c10::IValue>;

struct Call {
  std::optional<c10::OperatorHandle> handle;
  std::vector<Slot> slots;
  std::string layer;
  std::vector<std::string> nested;
};

struct Capture {
  std::vector<Call> calls;
  std::vector<std::string> layers;  // open USER_SCOPE records
  std::vector<int> ops;             // open FUNCTION records: index into calls, or -1 nested
  std::map<std::pair<std::string, std::string>, std::optional<c10::OperatorHandle>> handles;
};

thread_local Capture* tl_capture = nullptr;

Slot slot_of(const c10::IValue& v) {
  if (v.isTensor()) {
    const auto& t = v.toTensor();
    if (t.defined()) return tensor_spec_of(t);
  }
  if (v.isTensorList()) {
    std::vector<TensorSpec> specs;
    for (const auto& t : v.toTensorVector()) specs.push_back(tensor_spec_of(t));
    return specs;
  }
  return v;
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  Capture* c = tl_capture;
  if (!c) return nullptr;
  if (fn.scope() == at::RecordScope::USER_SCOPE) {
    c->layers.emplace_back(fn.name());
    return nullptr;
  }
  if (!c->ops.empty()) {  // nested inside an outer op: count it there
    for (auto it = c->ops.rbegin(); it != c->ops.rend(); ++it)
      if (*it >= 0) {
        c->calls[*it].nested.emplace_back(fn.name());
        break;
      }
    c->ops.push_back(-1);
    return nullptr;
  }
  const std::string name = fn.name(), overload = fn.overload_name();
  auto [it, fresh] = c->handles.try_emplace({name, overload});
  if (fresh) it->second = c10::Dispatcher::singleton().findSchema({name, overload});
  if (!it->second) {  // not a dispatcher op (e.g. a profiler range): not a unit to measure
    c->ops.push_back(-1);
    return nullptr;
  }
  Call call;
  call.handle = it->second;
  for (const auto& v : fn.inputs()) call.slots.push_back(slot_of(v));
  call.layer = c->layers.empty() ? "" : c->layers.back();
  c->ops.push_back(int(c->calls.size()));
  c->calls.push_back(std::move(call));
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  Capture* c = tl_capture;
  if (!c) return;
  if (fn.scope() == at::RecordScope::USER_SCOPE) {
    if (!c->layers.empty()) c->layers.pop_back();
  } else if (!c->ops.empty()) {
    c->ops.pop_back();
  }
}

}  // namespace

Inventory observe(const std::function<void()>& body) {
  Capture capture;
  tl_capture = &capture;
  const auto handle = at::addThreadLocalCallback(
      at::RecordFunctionCallback(on_start, on_end)
          .needsInputs(true)
          .scopes({at::RecordScope::FUNCTION, at::RecordScope::USER_SCOPE}));
  try {
    body();
  } catch (...) {
    at::removeCallback(handle);
    tl_capture = nullptr;
    throw;
  }
  at::removeCallback(handle);
  tl_capture = nullptr;

  InventoryBuilder builder;
  for (const auto& call : capture.calls) {
    const auto& schema = call.handle->schema();
    const auto& args = schema.arguments();
    std::vector<ArgValue> values;
    for (std::size_t i = 0; i < args.size() && i < call.slots.size(); ++i) {
      const Slot& s = call.slots[i];
      if (auto* t = std::get_if<TensorSpec>(&s)) {
        values.push_back(ArgValue{*t});
      } else if (auto* ts = std::get_if<std::vector<TensorSpec>>(&s)) {
        ArgList l;
        for (const auto& t : *ts) l.push_back(ArgValue{t});
        values.push_back(ArgValue{l});
      } else {
        values.push_back(canonical_value(args[i], std::get<c10::IValue>(s)));
      }
    }
    builder.add(schema.name(), schema.overload_name(), format_args(drop_defaults(schema, std::move(values))),
                call.layer, call.nested);
  }
  return builder.take();
}

}  // namespace opcost
