// The trace recorder: LibTorch's Kineto profiler over a schedule of steps. Apart from the
// kernel check's trace (kernel_trace.cpp), the only translation unit that touches the profiler.
#include "torch/trace_recorder.h"

#include <ATen/DeviceAccelerator.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <kineto/ActivityType.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "core/energy/monitor.h"
#include "core/inventory/compiled_kernel_name.h"
#include "core/spec/device_spec.h"
#include "core/trace/nvtx.h"
#include "torch/runner.h"

namespace opcost {

namespace {

constexpr const char* kStepPrefix = "ProfilerStep#";  // as torch.profiler names its steps
constexpr const char* kWarmupName = "opcost:warmup";
constexpr const char* kClockMarker = "opcost:clock";

std::string device_kind_of(uint8_t type) {
  using T = libkineto::ActivityType;
  if (type == uint8_t(T::CONCURRENT_KERNEL)) return "kernel";
  if (type == uint8_t(T::GPU_MEMCPY)) return "memcpy";
  if (type == uint8_t(T::GPU_MEMSET)) return "memset";
  return "";
}

std::string shapes_text(const torch::autograd::profiler::KinetoEvent& e) {
  if (!e.hasShapes()) return "";
  std::string out;
  for (const auto& s : e.shapes()) out += fmt::format("{}[{}]", out.empty() ? "" : ", ", fmt::join(s, ", "));
  return out;
}

}  // namespace

namespace {

// Each step and layer (USER_SCOPE records), operator call and backward function as an NVTX
// range on its thread; calls and backward functions named as torch's emit_nvtx() names them
// ("aten::linear, seq = 12"), so that nsys captures read back alike (core/trace/nsys_import.h).
std::unique_ptr<at::ObserverContext> push_nvtx_range(const at::RecordFunction& fn) {
  if (fn.scope() == at::RecordScope::USER_SCOPE || fn.seqNr() < 0)
    nvtx_push(fn.name());
  else
    nvtx_push(fmt::format("{}, seq = {}", fn.name(), fn.seqNr()).c_str());
  return nullptr;
}
void pop_nvtx_range(const at::RecordFunction&, at::ObserverContext*) { nvtx_pop(); }

}  // namespace

struct TraceRecorder::Impl {
  std::string device_kind;
  bool on_gpu = false;  // device_kind is "cuda" (parsed once)
  int device_index = 0;
  TraceRecordOptions options;
  torch::profiler::impl::ProfilerConfig config{torch::profiler::impl::ProfilerState::KINETO};
  std::set<torch::profiler::impl::ActivityType> activities;
  std::unordered_set<std::string> op_names;  // Kineto events carry no overload name
  bool profiling = false;
  std::optional<at::CallbackHandle> nvtx_callback;
  std::unique_ptr<at::RecordFunction> step_scope;  // the running step's
  TraceRun run;
  // Counter tracks: NVML polled beside the profiler. Its samples are on opcost's steady clock;
  // a marker record, timed on both clocks as the session starts, maps them onto Kineto's.
  std::unique_ptr<EnergyProbe> probe;
  std::unique_ptr<EnergyMonitor> monitor;
  double marker_s = 0;
  std::optional<double> energy_base_mJ;  // the counter's first reading of the run

  void close_step() { step_scope.reset(); }
  void open_step(const std::string& name) {
    step_scope = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
    if (step_scope->isActive()) step_scope->before(name);
  }
  void start() {
    torch::autograd::profiler::prepareProfiler(config, activities);
    torch::autograd::profiler::enableProfiler(config, activities);
    profiling = true;
    if (!probe) return;
    monitor = std::make_unique<EnergyMonitor>(*probe);
    monitor->start();
    at::RecordFunction marker(at::RecordScope::USER_SCOPE);
    marker_s = now_s();
    if (marker.isActive()) marker.before(kClockMarker);
  }
  // Ends a cycle: every kernel done, the profiler off, its events into the run.
  void stop() {
    close_step();
    if (!profiling) return;
    profiling = false;
    if (on_gpu) at::accelerator::synchronizeDevice(c10::DeviceIndex(device_index));
    if (monitor) monitor->stop();
    collect(*torch::autograd::profiler::disableProfiler());
    monitor.reset();
  }
  void collect(torch::autograd::profiler::ProfilerResult& result);
  void add_counters(int64_t marker_ns, int64_t keep_from);
};

TraceRecorder::TraceRecorder(std::string device_kind, int device_index, TraceRecordOptions options)
    : impl_(std::make_unique<Impl>()) {
  namespace impl = torch::profiler::impl;
  const TraceSchedule& s = options.schedule;
  if (s.active < 1 || s.repeat < 1 || s.wait < 0 || s.warmup < 0)
    throw std::invalid_argument(fmt::format(
        "trace schedule wait={} warmup={} active={} repeat={}: active and repeat must be 1 or more, wait and warmup "
        "0 or more",
        s.wait, s.warmup, s.active, s.repeat));
  if (options.nvtx && !nvtx_built())
    throw std::invalid_argument(
        "--nvtx: this opcost was built without the NVTX headers (nvtx3/nvToolsExt.h); install the CUDA toolkit, or "
        "torch's nvidia nvtx package, and build again");
  Impl& m = *impl_;
  if (options.nvtx)
    m.nvtx_callback = at::addGlobalCallback(
        at::RecordFunctionCallback(push_nvtx_range, pop_nvtx_range)
            .scopes({at::RecordScope::USER_SCOPE, at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
  m.device_kind = std::move(device_kind);
  m.on_gpu = parse_device_spec(m.device_kind).is_cuda();
  m.device_index = device_index;
  m.options = options;
  m.config = impl::ProfilerConfig(impl::ProfilerState::KINETO, options.shapes, /*profile_memory=*/false,
                                  /*with_stack=*/false, options.flops, /*with_modules=*/false);
  m.activities = {impl::ActivityType::CPU};
  if (m.on_gpu)
    m.activities.insert(impl::ActivityType::CUDA);
  else  // Kineto's start-up logs that it finds no GPU: expected here (a user's own level wins)
    setenv("KINETO_LOG_LEVEL", "5", /*overwrite=*/0);
  for (const auto& n : c10::Dispatcher::singleton().getAllOpNames()) m.op_names.insert(n.name);
  if (m.on_gpu) {
    m.probe = make_nvml_probe(device_index, &m.run.counters_unavailable);
    if (m.probe) m.run.counters_unavailable.clear();
  }
  m.run.source = "opcost (Kineto)";
}

TraceRecorder::~TraceRecorder() {
  if (impl_->nvtx_callback) at::removeCallback(*impl_->nvtx_callback);
  if (!impl_->profiling) return;
  impl_->close_step();
  torch::autograd::profiler::disableProfiler();
}

void TraceRecorder::next_step() {
  Impl& m = *impl_;
  m.close_step();
  ++step_;
  const TraceSchedule& s = m.options.schedule;
  const int cycle_length = s.wait + s.warmup + s.active;
  if (step_ >= s.total_steps()) {  // past the schedule: untraced
    m.stop();
    return;
  }
  const int in_cycle = step_ % cycle_length;
  if (in_cycle == 0) m.stop();  // each cycle is a profiling session of its own
  if (in_cycle < s.wait) {
    m.stop();
    return;
  }
  if (!m.profiling) m.start();
  m.open_step(in_cycle < s.wait + s.warmup ? kWarmupName : kStepPrefix + std::to_string(step_));
}

TraceRun TraceRecorder::finish() {
  impl_->stop();
  TraceRun run = std::move(impl_->run);
  impl_->run = TraceRun{};
  run.device = describe_environment(impl_->device_kind, impl_->device_index).device_name;
  tie_activities(run);
  return run;
}

void TraceRecorder::Impl::collect(torch::autograd::profiler::ProfilerResult& result) {
  // The warm-up's end: what started before it is dropped, host and device alike.
  int64_t keep_from = INT64_MIN;
  std::optional<int64_t> marker_ns;
  std::vector<HostRange> layers;
  std::vector<OpActivity> calls;
  std::vector<DeviceActivity> device;
  std::vector<TraceRun::BackwardRange> backward;
  for (const auto& e : result.events()) {
    if (e.deviceType() == c10::DeviceType::CPU && e.scope() == uint8_t(at::RecordScope::BACKWARD_FUNCTION)) {
      backward.push_back({e.startThreadId(), int64_t(e.startNs()), int64_t(e.endNs()), e.sequenceNr()});
      continue;
    }
    if (e.deviceType() == c10::DeviceType::CPU && e.scope() == uint8_t(at::RecordScope::USER_SCOPE)) {
      const std::string name = e.name();
      HostRange r{name, e.startThreadId(), int64_t(e.startNs()), int64_t(e.endNs())};
      if (name == kWarmupName)
        keep_from = std::max(keep_from, r.end_ns);
      else if (name == kClockMarker)
        marker_ns = r.start_ns;
      else if (name.rfind(kStepPrefix, 0) == 0)
        run.steps.push_back(r);
      else
        layers.push_back(r);
    } else if (e.deviceType() == c10::DeviceType::CPU &&
               (op_names.count(e.name()) || is_compiled_kernel_name(e.name()))) {  // a generated kernel's launch too
      OpActivity op{e.name(), shapes_text(e), e.startThreadId(), int64_t(e.startNs()), int64_t(e.endNs())};
      op.correlations.push_back(e.correlationId());
      op.flops = e.flops();
      if (e.sequenceNr() >= 0) {  // an autograd node made (forward) or run (backward: its forward thread is set)
        if (e.fwdThreadId() > 0)
          op.backward_of = e.sequenceNr();
        else
          op.forward_sequence.push_back(e.sequenceNr());
      }
      calls.push_back(std::move(op));
    } else if (e.deviceType() == c10::DeviceType::CUDA) {
      const std::string kind = device_kind_of(e.activityType());
      if (kind.empty()) continue;
      device.push_back(DeviceActivity{e.name(), kind, e.deviceIndex(), e.deviceResourceId(), int64_t(e.startNs()),
                                      int64_t(e.endNs()), e.linkedCorrelationId()});
    }
  }
  // The warm-up's calls go, and so do the device activities they launched (which may run
  // after the warm-up's end).
  std::unordered_set<uint64_t> dropped;
  std::erase_if(layers, [&](const HostRange& r) { return r.start_ns < keep_from; });
  std::erase_if(calls, [&](const OpActivity& c) {
    if (c.start_ns >= keep_from) return false;
    dropped.insert(c.correlations.front());
    return true;
  });
  std::erase_if(device, [&](const DeviceActivity& a) {
    return a.start_ns < keep_from || dropped.count(a.linked_correlation) > 0;
  });
  std::erase_if(backward, [&](const TraceRun::BackwardRange& r) { return r.start_ns < keep_from; });
  run.layers.insert(run.layers.end(), layers.begin(), layers.end());
  run.backward_ranges.insert(run.backward_ranges.end(), backward.begin(), backward.end());
  for (auto& c : fold_nested_calls(std::move(calls))) run.ops.push_back(std::move(c));
  run.device_activities.insert(run.device_activities.end(), device.begin(), device.end());
  if (monitor && marker_ns) add_counters(*marker_ns, keep_from);
}

void TraceRecorder::Impl::add_counters(int64_t marker_ns, int64_t keep_from) {
  auto track = [&](const std::string& name) -> CounterTrack& {
    for (auto& c : run.counters)
      if (c.name == name) return c;
    run.counters.push_back(CounterTrack{name, device_index, {}});
    return run.counters.back();
  };
  auto at = [&](double t_s) { return marker_ns + int64_t(std::llround((t_s - marker_s) * 1e9)); };
  for (const auto& p : monitor->power_trace())
    if (at(p.t_s) >= keep_from) track("GPU power (W)").samples.emplace_back(at(p.t_s), p.watts);
  for (const auto& p : monitor->sm_clock_trace())
    if (at(p.t_s) >= keep_from) track("SM clock (MHz)").samples.emplace_back(at(p.t_s), p.watts);
  for (const auto& p : monitor->temperature_trace())
    if (at(p.t_s) >= keep_from) track("GPU temperature (C)").samples.emplace_back(at(p.t_s), p.watts);
  // The energy counter as it updated (about every 100 ms on an H100), from its first reading.
  for (const auto& e : monitor->edges()) {
    if (!energy_base_mJ) energy_base_mJ = e.energy_mJ;
    if (at(e.t_s) >= keep_from)
      track("GPU energy counter (J)").samples.emplace_back(at(e.t_s), (e.energy_mJ - *energy_base_mJ) / 1000);
  }
}

TraceRun record_trace(const std::function<void()>& step, const std::string& device_kind, int device_index,
                      const TraceRecordOptions& options) {
  TraceRecorder recorder(device_kind, device_index, options);
  for (int i = 0; i < options.schedule.total_steps(); ++i) {
    recorder.next_step();
    step();
  }
  return recorder.finish();
}

}  // namespace opcost
