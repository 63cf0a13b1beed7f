#include "core/energy/monitor.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

namespace opcost {

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

static void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

namespace {

// Update edges from successive good reads of a cumulative counter. An update seen by a read
// happened after the previous good read began (the value then is no later than that) and before
// this read ended: the edge is the middle of that span, its blur half of it, however long
// either read took. A failed read is never given here, so it narrows nothing.
class EdgeDetector {
 public:
  std::optional<CounterEdge> read(double began_s, double value_mJ, double ended_s) {
    std::optional<CounterEdge> edge;
    if (have_last_ && value_mJ != last_mJ_)
      edge = CounterEdge{(last_began_s_ + ended_s) / 2, value_mJ, (ended_s - last_began_s_) / 2};
    have_last_ = true;
    last_mJ_ = value_mJ;
    last_began_s_ = began_s;
    return edge;
  }

 private:
  bool have_last_ = false;  // (a plain flag: GCC 12 misreads an optional<double> member here)
  double last_mJ_ = 0, last_began_s_ = 0;
};

}  // namespace

EnergyMonitor::EnergyMonitor(EnergyProbe& probe, MonitorConfig cfg) : probe_(probe), cfg_(cfg) {}

EnergyMonitor::~EnergyMonitor() { stop(); }

void EnergyMonitor::start() {
  stop_ = false;
  thread_ = std::thread([this] { run(); });
}

void EnergyMonitor::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void EnergyMonitor::run() {
  EdgeDetector detector;
  double next_power = 0, next_state = 0;
  while (!stop_) {
    const double t = now_s();
    if (auto e = probe_.energy_mJ())
      if (auto edge = detector.read(t, *e, now_s())) {
        std::lock_guard lock(mu_);
        edges_.push_back(*edge);
      }
    if (t >= next_power) {
      next_power = t + cfg_.power_every_s;
      if (auto w = probe_.power_W()) {
        std::lock_guard lock(mu_);
        power_.push_back({t, *w});
      }
    }
    if (t >= next_state) {
      next_state = t + cfg_.state_every_s;
      const DeviceState s = probe_.state();
      std::lock_guard lock(mu_);
      auto& a = state_;
      ++a.samples;
      if (s.sm_clock_MHz) {
        sm_clock_.push_back({t, double(*s.sm_clock_MHz)});
        a.sm_clock_min_MHz = std::min(a.sm_clock_min_MHz.value_or(*s.sm_clock_MHz), *s.sm_clock_MHz);
        a.sm_clock_max_MHz = std::max(a.sm_clock_max_MHz.value_or(*s.sm_clock_MHz), *s.sm_clock_MHz);
      }
      if (s.temperature_C) {
        temperature_.push_back({t, double(*s.temperature_C)});
        a.temperature_max_C = std::max(a.temperature_max_C.value_or(0), *s.temperature_C);
      }
      if (s.throttle_reasons) a.throttle_reasons_seen |= *s.throttle_reasons;
      if (s.other_processes) a.other_processes_max = std::max(a.other_processes_max, *s.other_processes);
    }
    sleep_s(cfg_.poll_s);
  }
}

std::vector<CounterEdge> EnergyMonitor::edges() const {
  std::lock_guard lock(mu_);
  return edges_;
}

std::size_t EnergyMonitor::edge_count() const {
  std::lock_guard lock(mu_);
  return edges_.size();
}

std::vector<PowerSample> EnergyMonitor::power_trace() const {
  std::lock_guard lock(mu_);
  return power_;
}

std::vector<PowerSample> EnergyMonitor::sm_clock_trace() const {
  std::lock_guard lock(mu_);
  return sm_clock_;
}

std::vector<PowerSample> EnergyMonitor::temperature_trace() const {
  std::lock_guard lock(mu_);
  return temperature_;
}

StateSummary EnergyMonitor::state_summary() const {
  std::lock_guard lock(mu_);
  return state_;
}

std::optional<double> measure_idle_power_W(EnergyProbe& probe, std::size_t count, double timeout_s, std::string* why,
                                           std::vector<CounterEdge>* edges_out) {
  std::vector<CounterEdge> edges;
  const double deadline = now_s() + timeout_s;
  EdgeDetector detector;
  while (edges.size() < count + 1 && now_s() < deadline) {
    const double t = now_s();
    auto e = probe.energy_mJ();
    if (!e) {
      *why = fmt::format("the {} energy counter stopped answering", probe.name());
      return std::nullopt;
    }
    if (auto edge = detector.read(t, *e, now_s())) edges.push_back(*edge);
    sleep_s(0.0005);
  }
  if (edges_out) *edges_out = edges;
  if (edges.size() < count + 1) {
    *why = fmt::format("the {} energy counter did not update {} times in {:.1f} s", probe.name(), count, timeout_s);
    return std::nullopt;
  }
  return average_power_W(edges);
}

}  // namespace opcost
