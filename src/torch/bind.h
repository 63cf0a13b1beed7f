#pragma once
// Binding a textual call (core/spec/op_call) to its operator's registered schema: the overload
// chosen, one LibTorch value per schema argument, and the call's canonical arguments
// (torch/canonical_form). The replay builds its inputs through it; a dry bind checks a call
// without making a tensor.
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
  // (input, the earlier input whose tensor it is): the ':same[name]' arguments.
  std::vector<std::pair<std::size_t, std::size_t>> same_inputs;
};

// Throws ReplayError with the op, the argument and what the schema expects. An op named
// without an overload that has no default one gets the overload its arguments fit. Inputs are
// drawn with a generator seeded with `seed` (torch/input_synthesis).
BoundCall bind_call(const OpCall& call, c10::Device device, uint64_t seed);

// The same checks without making a tensor: types, names, shapes' sizes. Cheap, so a spec
// file's entries can all be checked before anything is measured.
BoundCall check_call(const OpCall& call, c10::Device device);

// Whether the schema writes into an out= argument (aten::addmm.out): such overloads are not
// replayed, and the inventory lists them as their functional twin.
bool is_out_overload(const c10::FunctionSchema& schema);

}  // namespace opcost
