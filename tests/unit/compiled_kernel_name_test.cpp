#include "core/inventory/compiled_kernel_name.h"

#include <gtest/gtest.h>

namespace opcost {

TEST(CompiledKernelName, IsTheCompiledNamespaceWithAKernelName) {
  EXPECT_TRUE(is_compiled_kernel_name("compiled::triton_poi_fused_relu_0"));
  EXPECT_TRUE(is_compiled_kernel_name("compiled::cpp_fused_mul_1.h0123456789ab"));
  EXPECT_FALSE(is_compiled_kernel_name("compiled::"));  // no kernel
  EXPECT_FALSE(is_compiled_kernel_name("aten::relu"));
  EXPECT_FALSE(is_compiled_kernel_name("inductor::_reinterpret_tensor"));  // a real dispatcher op
}

TEST(CompiledKernelName, TheSourceHashIsTheOverload) {
  using Split = std::pair<std::string, std::string>;
  EXPECT_EQ(split_compiled_kernel_name("compiled::triton_poi_fused_relu_0.h0123456789ab"),
            (Split{"compiled::triton_poi_fused_relu_0", "h0123456789ab"}));
  EXPECT_EQ(split_compiled_kernel_name("compiled::triton_poi_fused_relu_0"),
            (Split{"compiled::triton_poi_fused_relu_0", ""}));
  EXPECT_EQ(compiled_kernel_arg_name(0), "arg0");
  EXPECT_EQ(compiled_kernel_arg_name(12), "arg12");
}

}  // namespace opcost
