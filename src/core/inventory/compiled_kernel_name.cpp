#include "core/inventory/compiled_kernel_name.h"

namespace opcost {

bool is_compiled_kernel_name(std::string_view name) {
  return name.size() > kCompiledKernelNamespace.size() &&
         name.substr(0, kCompiledKernelNamespace.size()) == kCompiledKernelNamespace;
}

std::pair<std::string, std::string> split_compiled_kernel_name(std::string_view record_name) {
  const std::size_t dot = record_name.rfind('.');
  if (dot == std::string_view::npos || dot < kCompiledKernelNamespace.size())
    return {std::string(record_name), std::string()};
  return {std::string(record_name.substr(0, dot)), std::string(record_name.substr(dot + 1))};
}

std::string compiled_kernel_arg_name(std::size_t i) { return "arg" + std::to_string(i); }

}  // namespace opcost
