#pragma once
// What the energy monitor reads from a device: a cumulative energy counter, optionally an
// instantaneous power reading and the clock/thermal state. Implemented over NVML (GPUs) and
// Linux RAPL powercap (CPUs); unit tests implement it with a simulated sensor.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace opcost {

struct DeviceState {
  std::optional<unsigned> sm_clock_MHz, mem_clock_MHz, temperature_C;
  std::optional<double> power_limit_W;
  std::optional<uint64_t> throttle_reasons;
  std::optional<unsigned> other_processes;  // compute processes besides ours
};

class EnergyProbe {
 public:
  virtual ~EnergyProbe() = default;
  virtual std::string name() const = 0;           // "nvml", "rapl"
  virtual std::optional<double> energy_mJ() = 0;  // cumulative, monotonic
  virtual std::optional<double> power_W() { return std::nullopt; }
  // `with_processes`: also count other compute processes. That query is slow and is kept out
  // of the sampling loop (it is taken before and after each measurement).
  virtual DeviceState state(bool with_processes = false) {
    (void)with_processes;
    return {};
  }
};

// The NVML probe for a CUDA device ordinal, or nullptr with `why` set.
std::unique_ptr<EnergyProbe> make_nvml_probe(int cuda_ordinal, std::string* why);
// The RAPL package-energy probe (sum over packages), or nullptr with `why` set.
// `root` is the powercap directory (tests point it at a fixture tree).
std::unique_ptr<EnergyProbe> make_rapl_probe(std::string* why, const std::string& root = "/sys/class/powercap");

}  // namespace opcost
