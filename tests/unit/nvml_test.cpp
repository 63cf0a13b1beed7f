#include <gtest/gtest.h>

#include "core/energy/nvml.h"
#include "core/energy/probe.h"

using namespace opcost;

TEST(Nvml, MissingLibraryIsUnavailableWithAReason) {
  Nvml nvml("libnvidia-ml-does-not-exist.so.1");
  EXPECT_FALSE(nvml.available());
  EXPECT_NE(nvml.unavailable_reason().find("NVML not loaded"), std::string::npos) << nvml.unavailable_reason();
  EXPECT_EQ(nvml.device_count(), 0u);
  EXPECT_FALSE(nvml.driver_version());
  EXPECT_FALSE(nvml.device_for_cuda_ordinal(0));
}

TEST(Nvml, LibraryWithoutNvmlSymbolsIsUnavailable) {
  Nvml nvml("libm.so.6");  // loads, but is not NVML
  EXPECT_FALSE(nvml.available());
  EXPECT_NE(nvml.unavailable_reason().find("lacks nvmlInit"), std::string::npos) << nvml.unavailable_reason();
}

TEST(Nvml, ProcessInstanceIsCleanWithOrWithoutADriver) {
  const Nvml& nvml = Nvml::instance();
  std::string why;
  auto probe = make_nvml_probe(0, &why);
  if (nvml.available()) {
    GTEST_SKIP() << "an NVIDIA driver is present: the GPU tests cover this machine";
  }
  EXPECT_FALSE(probe);
  EXPECT_FALSE(why.empty());
}

TEST(Throttle, DescribesReasonBits) {
  EXPECT_EQ(throttle::describe(0), "none");
  EXPECT_EQ(throttle::describe(throttle::kSwPowerCap | throttle::kHwThermal), "sw_power_cap,hw_thermal");
}
