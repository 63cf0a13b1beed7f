#include "core/energy/probe.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "core/energy/nvml.h"

namespace opcost {

namespace {

class NvmlProbe : public EnergyProbe {
 public:
  explicit NvmlProbe(NvmlDevice dev) : dev_(std::move(dev)) {}
  std::string name() const override { return "nvml"; }
  std::optional<double> energy_mJ() override {
    auto e = dev_.total_energy_mJ();
    return e ? std::optional<double>(double(*e)) : std::nullopt;
  }
  std::optional<double> power_W() override { return dev_.instant_power_W(); }
  DeviceState state(bool with_processes) override {
    DeviceState s;
    s.sm_clock_MHz = dev_.sm_clock_MHz();
    s.mem_clock_MHz = dev_.mem_clock_MHz();
    s.temperature_C = dev_.temperature_C();
    s.power_limit_W = dev_.power_limit_W();
    s.throttle_reasons = dev_.throttle_reasons();
    if (with_processes)
      if (auto others = dev_.other_processes(unsigned(getpid()))) s.other_processes = unsigned(others->size());
    return s;
  }

 private:
  NvmlDevice dev_;
};

// Sums the package domains (intel-rapl:N) and unwraps each counter at max_energy_range_uj.
class RaplProbe : public EnergyProbe {
 public:
  struct Domain {
    std::string path;
    double range_uJ;
    double last_uJ = -1, offset_uJ = 0;
  };
  explicit RaplProbe(std::vector<Domain> d) : domains_(std::move(d)) {}
  std::string name() const override { return "rapl"; }
  std::optional<double> energy_mJ() override {
    double total = 0;
    for (auto& d : domains_) {
      std::ifstream in(d.path);
      double uj = 0;
      if (!(in >> uj)) return std::nullopt;
      if (d.last_uJ >= 0 && uj < d.last_uJ) d.offset_uJ += d.range_uJ;  // wrapped
      d.last_uJ = uj;
      total += uj + d.offset_uJ;
    }
    return total / 1000.0;
  }

 private:
  std::vector<Domain> domains_;
};

}  // namespace

std::unique_ptr<EnergyProbe> make_nvml_probe(int cuda_ordinal, std::string* why) {
  const Nvml& nvml = Nvml::instance();
  if (!nvml.available()) {
    *why = nvml.unavailable_reason();
    return nullptr;
  }
  auto dev = nvml.device_for_cuda_ordinal(cuda_ordinal);
  if (!dev) {
    *why = fmt::format("NVML has no device for CUDA device {}", cuda_ordinal);
    return nullptr;
  }
  if (!dev->total_energy_mJ()) {
    *why = "this GPU does not support the NVML total-energy counter (Volta or newer needed)";
    return nullptr;
  }
  return std::make_unique<NvmlProbe>(std::move(*dev));
}

std::unique_ptr<EnergyProbe> make_rapl_probe(std::string* why, const std::string& root) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    *why = fmt::format("no RAPL: {} does not exist (not Linux, or no powercap driver)", root);
    return nullptr;
  }
  std::vector<RaplProbe::Domain> domains;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const std::string name = entry.path().filename().string();
    // Package domains are intel-rapl:N (sub-domains are intel-rapl:N:M); AMD uses the same.
    if (name.rfind("intel-rapl:", 0) != 0 || name.find(':', 11) != std::string::npos) continue;
    RaplProbe::Domain d{(entry.path() / "energy_uj").string(), 0};
    std::ifstream range(entry.path() / "max_energy_range_uj");
    if (!(range >> d.range_uJ)) d.range_uJ = 0;
    std::ifstream probe(d.path);
    double v;
    if (!(probe >> v)) {
      *why = fmt::format("RAPL present but {} is not readable (needs root, or a udev rule)", d.path);
      return nullptr;
    }
    domains.push_back(d);
  }
  if (domains.empty()) {
    *why = fmt::format("no RAPL package domain (intel-rapl:N) under {}", root);
    return nullptr;
  }
  return std::make_unique<RaplProbe>(std::move(domains));
}

}  // namespace opcost
