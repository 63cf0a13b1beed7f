#pragma once
// A stored measurement of a call that differs from the model's only in floating-point scalar
// values: what the prediction may use when no row matches a call exactly. AdamW's step size
// (-lr / (1 - beta1^t)) is an argument of aten::addcdiv_ (and of _foreach_addcdiv_.ScalarList,
// _foreach_div_.ScalarList on a GPU) that changes every step, so each step calls signatures
// whose text no earlier step had; the kernel, the bytes it moves and its arithmetic are the
// same whatever the value. Not so for every operator: those whose kernel or output size
// depends on a float's value are left to exact matches (float_scalars_may_change_work).
// Torch-free; docs/prediction.md says which operators and why.
#include <string_view>
#include <vector>

#include "core/spec/op_call.h"

namespace opcost {

// Whether a floating-point scalar argument's value may change `op`'s kernel or the size of
// its work (pow's exponent 2 squares, 0.5 takes a square root; addmm's beta 0 never reads
// self; dropout's p 0 copies; a norm's p picks its reduction; upsampling's scales and
// arange's bounds set the output's size). `op` as "aten::pow", any overload.
bool float_scalars_may_change_work(std::string_view op);

// The arguments are the same but for the values of floating-point scalars: every argument has
// the same name in the same place, and each pair of values is equal, or both doubles (a
// `double` argument, or a Scalar holding a float), or lists of the same length whose elements
// are so pairwise. Tensors (dtype, shape, strides, device, range, zeros), integers, booleans,
// words, None and complex numbers must be equal: an integer and a float are two types (a
// Scalar's type decides the result's dtype), and a float equal to its default is left out of
// a canonical signature, so it matches only a row that leaves it out too.
bool same_but_float_scalars(const std::vector<NamedArg>& a, const std::vector<NamedArg>& b);

// Whether any argument is a double or a list holding one: a call without one can match no row
// but its exact one, and its look-up ends there.
bool has_float_scalars(const std::vector<NamedArg>& args);

}  // namespace opcost
