#pragma once
// The torch side of the canonical signature (core/spec/signature.h): what only an operator's
// registered schema can say, namely each argument's place and default and what a number means
// (a dtype, a reduction, a memory format). The observer (a model's calls) and the replay (a
// user's or an inventory's calls) both write signatures through these functions, so that the
// two can never write one call two ways.
#include <ATen/core/Tensor.h>
#include <ATen/core/function_schema.h>
#include <ATen/core/ivalue.h>

#include <optional>
#include <string>
#include <vector>

#include "core/spec/op_call.h"

namespace opcost {

// The value as opcost writes it: normalised dtype codes, enum names, tensors as specs (keeping
// the range/zeros/distinct/device annotations of `given` when the value came from a user).
ArgValue canonical_value(const c10::Argument& a, const c10::IValue& iv, const ArgValue* given = nullptr);

// One argument as the signature writes it, or nullopt where the signature leaves it out: its
// value is the schema's default, or None for an optional argument without default that the
// caller did not write (`written`: a user's call named it; a model's call writes nothing).
std::optional<NamedArg> canonical_argument(const c10::Argument& a, ArgValue canonical, bool written);

// A model's call, one canonical value per schema argument, as its signature's arguments: schema
// order, defaults left out (canonical_argument with nothing written), as format_args writes them.
// `schema` must be a registered op's (defaults are cached by argument address).
std::string canonical_args(const c10::FunctionSchema& schema, std::vector<ArgValue> values);

// Canonical text of a tensor as opcost writes it (dtype, shape, strides if not contiguous).
TensorSpec tensor_spec_of(const at::Tensor& t);

// Names a user may write for an enum-like integer argument (a reduction, a memory format, a
// layout), in enum order; nullptr for any other argument.
const std::vector<std::string>* enum_names(const c10::Argument& a);
// Whether the argument is a dtype (ScalarType, optional or not): its integer is written as a code.
bool is_dtype_argument(const c10::Argument& a);

}  // namespace opcost
