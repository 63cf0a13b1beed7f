#pragma once
// NVML, loaded at run time with dlopen: no build or link dependency, and one binary runs
// with and without an NVIDIA driver. Every reading is optional: a metric the driver does
// not support is "unavailable", never zero.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace opcost {

// Clock-event ("throttle") reason bits, as in nvml.h.
namespace throttle {
constexpr uint64_t kGpuIdle = 0x1, kAppClocks = 0x2, kSwPowerCap = 0x4, kHwSlowdown = 0x8, kSyncBoost = 0x10,
                   kSwThermal = 0x20, kHwThermal = 0x40, kHwPowerBrake = 0x80, kDisplayClocks = 0x100;
// Reasons that slow a measurement down (idle, app clocks and display clocks do not).
constexpr uint64_t kSlowing = kSwPowerCap | kHwSlowdown | kSwThermal | kHwThermal | kHwPowerBrake;
std::string describe(uint64_t reasons);  // "sw_power_cap,hw_thermal" or "none"
}  // namespace throttle

struct NvmlApi;  // the resolved function table (nvml.cpp)

class NvmlDevice {
 public:
  NvmlDevice(std::shared_ptr<const NvmlApi> api, void* handle) : api_(std::move(api)), h_(handle) {}
  std::optional<std::string> name() const;
  std::optional<std::string> uuid() const;
  std::optional<uint64_t> total_energy_mJ() const;  // counter since driver load
  std::optional<double> power_W() const;            // nvmlDeviceGetPowerUsage (1 s average)
  std::optional<double> instant_power_W() const;    // field 186, NVML_FI_DEV_POWER_INSTANT
  std::optional<unsigned> sm_clock_MHz() const;
  std::optional<unsigned> mem_clock_MHz() const;
  std::optional<unsigned> temperature_C() const;
  std::optional<double> power_limit_W() const;
  std::optional<uint64_t> throttle_reasons() const;
  // Compute processes on this GPU other than `self_pid`; nullopt when NVML cannot say.
  std::optional<std::vector<unsigned>> other_processes(unsigned self_pid) const;

 private:
  std::shared_ptr<const NvmlApi> api_;
  void* h_;
};

class Nvml {
 public:
  // Loads and initialises NVML once per process. The library name comes from
  // OPCOST_NVML_LIBRARY when set (tests point it at a missing file), else libnvidia-ml.so.1.
  static const Nvml& instance();

  bool available() const { return api_ != nullptr; }
  const std::string& unavailable_reason() const { return reason_; }
  std::optional<std::string> driver_version() const;
  std::optional<std::string> cuda_driver_version() const;  // "13.0"
  unsigned device_count() const;
  // The NVML device for a CUDA device ordinal, honouring CUDA_VISIBLE_DEVICES.
  std::optional<NvmlDevice> device_for_cuda_ordinal(int ordinal) const;

  // Loads from an explicit library name; used by instance() and by tests.
  explicit Nvml(const std::string& library);

 private:
  std::shared_ptr<NvmlApi> api_;
  std::string reason_;
};

}  // namespace opcost
