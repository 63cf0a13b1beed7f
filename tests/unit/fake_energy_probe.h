#pragma once
// FakeEnergyProbe: a simulated power sensor for unit tests. It lives under tests/ only, so that
// neither the command line nor the Python package can ever measure with it.
#include <chrono>
#include <cmath>
#include <optional>
#include <string>

#include "core/energy/monitor.h"
#include "core/energy/nvml.h"
#include "core/energy/probe.h"

namespace opcost::fakes {

// A cumulative counter that, like the H100's, changes only every `period_s`, each time by the
// exact energy of the elapsed period at a constant `watts`.
class FakeEnergyProbe : public EnergyProbe {
 public:
  FakeEnergyProbe(double watts, double period_s) : watts_(watts), period_(period_s), t0_(now_s()) {}
  std::string name() const override { return "fake"; }
  std::optional<double> energy_mJ() override {
    const double whole = std::floor((now_s() - t0_) / period_) * period_;
    return 1e6 + watts_ * whole * 1000.0;
  }
  std::optional<double> power_W() override { return watts_; }
  DeviceState state(bool) override {
    DeviceState s;
    s.sm_clock_MHz = clock_;
    s.temperature_C = clock_ == 1980 ? 61 : 63;
    clock_ = clock_ == 1980 ? 1400 : 1980;  // alternate: a clock change
    s.throttle_reasons = throttle::kSwPowerCap;
    return s;
  }

 private:
  double watts_, period_, t0_;
  unsigned clock_ = 1980;
};

}  // namespace opcost::fakes
