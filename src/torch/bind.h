#pragma once
// Schema-driven argument binding (LibTorch side). Exposed for tests that compare a replay
// with a direct call of the op on the same inputs.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>

#include <optional>
#include <string>
#include <vector>

#include "core/spec/op_call.h"

namespace opcost {

struct BoundCall {
  std::optional<c10::OperatorHandle> handle;
  std::string overload;             // the schema's (resolved when the call named none)
  std::string resolution_note;      // how the overload was chosen, when it was
  std::vector<c10::IValue> inputs;  // one per schema argument, in schema order
  std::vector<NamedArg> canonical;  // non-default arguments, normalised, schema order
  std::string dtype;                // of the first floating tensor (else first tensor)
  std::size_t tensor_bytes = 0;     // bytes of tensor storage the inputs own
  std::size_t host_bytes_peak = 0;  // host memory needed while making them (CPU tensors)
  std::size_t implicit_nones = 0;   // optional arguments without default left as None
};

// Throws ReplayError with the op, the argument and what the schema expects. An op named
// without an overload that has no default one gets the overload its arguments fit.
BoundCall bind_call(const OpCall& call, c10::Device device, uint64_t seed);

// The same checks without making a tensor: types, names, shapes' sizes. Cheap, so a spec
// file's entries can all be checked before anything is measured.
BoundCall check_call(const OpCall& call, c10::Device device);

// The value as opcost writes it: normalised dtype codes, enum names, tensors as specs (keeping
// the range/device annotations of `given` when the value came from the user).
ArgValue canonical_value(const c10::Argument& a, const c10::IValue& iv, const ArgValue* given = nullptr);

// The same from already-canonical values, one per schema argument. `schema` must be a
// registered op's (defaults are cached by argument address).
std::vector<NamedArg> drop_defaults(const c10::FunctionSchema& schema, std::vector<ArgValue> values);

// Canonical text of a tensor as opcost writes it (dtype, shape, strides if not contiguous).
TensorSpec tensor_spec_of(const at::Tensor& t);

c10::Device resolve_device(const std::string& spec);

// dtype codes as opcost writes them ("f32", "bf16", ...) and back.
at::ScalarType scalar_type_of(const std::string& code);
std::string code_of(at::ScalarType t);

// The autocast dtype a user names ("bf16", "fp16", "half"...); nullopt for "". Throws
// ReplayError for anything else.
std::optional<at::ScalarType> autocast_dtype(const std::string& name);

// Autocast to `dtype` (nullopt does nothing) on one device type for the scope's life, as
// torch.autocast does: ops on the autocast lists cast their inputs.
class AutocastScope {
 public:
  AutocastScope(std::optional<at::ScalarType> dtype, c10::DeviceType device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  c10::DeviceType device_;
  bool active_ = false, was_enabled_ = false;
  at::ScalarType was_dtype_ = at::kFloat;
};

}  // namespace opcost
