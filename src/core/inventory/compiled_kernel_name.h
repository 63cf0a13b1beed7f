#pragma once
// How a kernel that torch.compile generated (inductor's Triton or C++ kernels) is named as an
// operator of the inventory: "compiled::<kernel name>", its overload the hash of the kernel's
// source (names like triton_poi_fused_gelu_0 repeat across models with other code), and its
// arguments named by position. Torch-free: predict and measure tell these calls apart too.
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace opcost {

inline constexpr std::string_view kCompiledKernelNamespace = "compiled::";

// Why such a call cannot be replayed from a spec or another process: its kernel exists only in
// the process that compiled it.
inline constexpr std::string_view kGeneratedKernelNotHere =
    "a kernel torch.compile generated is replayed only while opcost runs its model in the same process "
    "(opcost.validate in Python)";

// Whether an op name (or a record's name) is a generated kernel's.
bool is_compiled_kernel_name(std::string_view name);

// "compiled::triton_poi_fused_gelu_0.h3fa9c1d2e4b5" -> ("compiled::triton_poi_fused_gelu_0",
// "h3fa9c1d2e4b5"); a name without a hash keeps an empty overload.
std::pair<std::string, std::string> split_compiled_kernel_name(std::string_view record_name);

// The name of a generated kernel's i-th argument: "arg0", "arg1", ...
std::string compiled_kernel_arg_name(std::size_t i);

}  // namespace opcost
