#pragma once
// dtype codes as opcost writes them ("f32", "bf16", ... core/spec/arg_value's dtype_names) and
// LibTorch's ScalarType, both ways.
#include <c10/core/ScalarType.h>

#include <string>

namespace opcost {

// The ScalarType of a canonical code; std::out_of_range for a code the table lacks.
at::ScalarType scalar_type_of(const std::string& code);
// The canonical code of a ScalarType; LibTorch's own name for one opcost has no code for.
std::string code_of(at::ScalarType t);

}  // namespace opcost
