#include <gtest/gtest.h>

#include <cstdlib>

#include "core/energy/monitor.h"
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

// Runs for real on the GPU machine (tests/gpu/run sets OPCOST_TEST_DEVICE=cuda).
TEST(NvmlOnGpu, ReadsTheDevice) {
  const char* dev = std::getenv("OPCOST_TEST_DEVICE");
  if (!dev || std::string(dev) != "cuda") GTEST_SKIP() << "GPU-only (OPCOST_TEST_DEVICE=cuda)";
  const Nvml& nvml = Nvml::instance();
  ASSERT_TRUE(nvml.available()) << nvml.unavailable_reason();
  ASSERT_GE(nvml.device_count(), 1u);
  EXPECT_TRUE(nvml.driver_version());
  auto d = nvml.device_for_cuda_ordinal(0);
  ASSERT_TRUE(d);
  EXPECT_NE(d->name().value_or("").find("NVIDIA"), std::string::npos);
  EXPECT_EQ(d->uuid().value_or("").rfind("GPU-", 0), 0u);
  EXPECT_GT(d->power_limit_W().value_or(0), 50.0);
  EXPECT_GT(d->instant_power_W().value_or(0), 10.0);
  EXPECT_GT(d->sm_clock_MHz().value_or(0), 0u);
  EXPECT_TRUE(d->throttle_reasons());
  EXPECT_TRUE(d->other_processes(0));
  std::string why;
  auto probe = make_nvml_probe(0, &why);
  ASSERT_TRUE(probe) << why;
  auto idle = measure_idle_power_W(*probe, 3, 2.0, &why);
  ASSERT_TRUE(idle) << why;
  EXPECT_GT(*idle, 20.0);
  EXPECT_LT(*idle, 400.0);
}
