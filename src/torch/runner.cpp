// Timing and energy loops. Device-generic ATen APIs (c10::Event, at::accelerator) keep this
// translation unit free of CUDA headers; at::cuda::sleep fills the GPU's queue ahead of a
// timed batch so that launch overhead never shows up as GPU time.
#include "torch/runner.h"

#include <ATen/DeviceAccelerator.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/Event.h>
#include <c10/core/InferenceMode.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/headeronly/version.h>
#include <unistd.h>
#if defined(OPCOST_TORCH_HAS_CUDA)
#include <ATen/cuda/Sleep.h>
#endif

#include <algorithm>
#include <cmath>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>

#include "core/energy/duty_cycle.h"
#include "core/energy/monitor.h"
#include "core/energy/nvml.h"
#include "core/measure/watchdog.h"
#include "core/spec/device_spec.h"
#include "core/spec/signature.h"
#include "core/version.h"
#include "torch/device.h"
#include "torch/graph_batch.h"

namespace opcost {

namespace {

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      auto p = line.find(':');
      if (p != std::string::npos) return line.substr(p + 2);
    }
  return "CPU";
}

std::string hostname() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

}  // namespace

Environment describe_environment(const std::string& kind, int index) {
  Environment e;
  e.device_kind = kind;
  const bool cuda = parse_device_spec(kind).is_cuda();
  e.opcost_version = kOpcostVersion;
  e.torch_version = fmt::format("{}.{}.{}", TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR, TORCH_VERSION_PATCH);
  e.host = hostname();
  if (cuda) {
    const long rt = at::detail::getCUDAHooks().versionCUDART();
    e.cuda_version = fmt::format("{}.{}", rt / 1000, (rt % 1000) / 10);
    const Nvml& nvml = Nvml::instance();
    e.driver_version = nvml.driver_version().value_or("unknown");
    if (auto dev = nvml.device_for_cuda_ordinal(index)) {
      e.device_name = dev->name().value_or(fmt::format("cuda:{}", index));
      e.device_uuid = dev->uuid().value_or("");
    } else {
      e.device_name = fmt::format("cuda:{}", index);
    }
  } else {
    e.device_name = cpu_model();
    e.cuda_version = "";
    e.driver_version = "";
  }
  return e;
}

std::string device_model_name(const std::string& device_spec) {
  const c10::Device device = resolve_device_option(device_spec);
  return describe_environment(device.is_cuda() ? "cuda" : "cpu", std::max<int>(0, device.index())).device_name;
}

Runner::Runner(const std::string& kind, int index, MeasureConfig cfg)
    : device_(parse_device_spec(kind)), index_(index), cfg_(cfg), env_(describe_environment(kind, index)) {
  if (!cfg_.energy) {
    energy_why_ = "energy measurement switched off (--no-energy; energy=False in Python)";
  } else if (device_.is_cuda()) {
    probe_ = make_nvml_probe(index_, &energy_why_);
  } else {
    probe_ = make_rapl_probe(&energy_why_);
  }
}

Runner::Runner(const std::string& kind, int index, MeasureConfig cfg, std::unique_ptr<EnergyProbe> probe)
    : device_(parse_device_spec(kind)), index_(index), cfg_(cfg), env_(describe_environment(kind, index)) {
  probe_ = std::move(probe);
  if (!probe_) energy_why_ = "no energy probe was given";
}

Runner::~Runner() = default;

std::optional<double> Runner::idle_power() {
  // Idle power is re-measured when older than a minute: it drifts with temperature.
  if (!probe_) return std::nullopt;
  if (now_s() - idle_at_s_ < 60) return idle_W_;
  if (device_.is_cuda()) at::accelerator::synchronizeDevice(index_);
  std::vector<CounterEdge> edges;
  idle_W_ = measure_idle_power_W(*probe_, device_.is_cuda() ? 3 : 50, 2.0, &idle_why_, &edges);
  if (auto period = update_period_s(edges)) counter_period_s_ = period;  // measure_group's choice
  idle_at_s_ = now_s();
  return idle_W_;
}

double Runner::warm_up_host(PreparedCall& call, Measurement& m, const StoppingCriterion& rule, double warmup_s,
                            bool sync_device) {
  // Three calls, or one when a call alone outlasts the timing budget, and at least warmup_s.
  const bool sync = sync_device && device_.is_cuda();
  const double t0 = now_s();
  std::size_t n = 0;
  while ((n < 3 && now_s() - t0 < rule.max_seconds) || now_s() - t0 < warmup_s) {
    call.call();
    if (sync) at::accelerator::synchronizeDevice(index_);
    ++n;
    watch_->check("warming up", n, "calls");
  }
  m.total_calls += n;
  return (now_s() - t0) / double(n);
}

void Runner::time_cpu(PreparedCall& call, Measurement& m, const StoppingCriterion& rule, double warmup_s,
                      double sample_s, bool sync_device) {
  // After the warm-up, batches of about sample_s each. On CUDA (a call that synchronises
  // itself, or waits for the device) each batch ends with a synchronisation, so its kernels
  // are inside the sample.
  const bool cuda = device_.is_cuda();
  auto sync = [&] {
    if (cuda && sync_device) at::accelerator::synchronizeDevice(index_);
  };
  const double per_call = warm_up_host(call, m, rule, warmup_s, sync_device);
  const std::size_t batch = std::clamp<std::size_t>(std::size_t(sample_s / per_call), 1, 10000);
  AdaptiveStop stop(rule);
  std::vector<double> samples, cpu;
  const double start = now_s();
  while (!stop.done()) {
    const double c0 = thread_cpu_s(), w0 = now_s();
    for (std::size_t i = 0; i < batch; ++i) call.call();
    sync();
    const double w1 = now_s(), c1 = thread_cpu_s();
    samples.push_back((w1 - w0) * 1e6 / double(batch));
    cpu.push_back((c1 - c0) * 1e6 / double(batch));
    stop.add(samples.back(), w1 - start);
    watch_->check("timing", samples.size(), "samples");
  }
  m.time.per_call_us = summarize(samples);
  m.time.stop_reason = to_string(stop.reason());
  m.time.calls_per_sample = batch;
  // The call runs to completion on the host (the CPU, or a call that synchronises itself):
  // host time equals the measured time.
  m.time.host_us_per_call = m.time.per_call_us.median;
  m.time.host_cpu_us_per_call = median_of(cpu);
  m.total_calls += samples.size() * batch;
  m.method = cuda ? "wall clock, batches ending in a device synchronisation" : "cpu-wall-clock";
}

bool Runner::take_loop_wall_timing(const LoopWallTiming& t, Measurement& m) const {
  // The loop never ran (no idle power to measure against): a timing loop of its own. A loop
  // that ran stops only once the timing rule has, at its target or its budget: a step longer
  // than a tenth of the budget keeps fewer than min_samples, as a timing loop would.
  if (t.per_call_us.empty()) return false;
  m.time.per_call_us = summarize(t.per_call_us);
  m.time.stop_reason = to_string(t.stop.reason());
  m.time.calls_per_sample = t.calls_per_sample;
  m.time.host_us_per_call = m.time.per_call_us.median;  // the call holds the host throughout
  m.time.host_cpu_us_per_call = median_of(t.cpu_us);
  m.method = fmt::format("wall clock in its energy loop, batches of {} ending in the call's own synchronisation",
                         t.calls_per_sample);
  return true;
}

Runner::DeviceWait Runner::waits_for_device(PreparedCall& call) {
#if defined(OPCOST_TORCH_HAS_CUDA)
  // A call issued behind a GPU sleep returns at once, unless it waits for the GPU (.item(),
  // nonzero, a copy to the host): then it returns only when the sleep is over. Only a wait
  // grows with the sleep, which tells it from a call that is merely slow on the host.
  const c10::Stream stream = at::accelerator::getCurrentStream(index_);
  c10::Event start(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);
  c10::Event end(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);
  auto issue_behind = [&](double sleep_s) {
    gpu_sleep_s(sleep_s);
    start.record(stream);
    const double t0 = now_s();
    call.call();
    const double issue = now_s() - t0;
    end.record(stream);
    at::accelerator::synchronizeDevice(index_);
    return issue;
  };
  // 2 ms: every signature pays it (10 ms was 6 s of DenseNet-121's training step, 4 ms 2.4 s); a
  // host slower than half of it to issue one call is asked again behind the long sleep. A call
  // issued within half the sleep ran on the GPU after it: the events around it time its kernels,
  // which the check for kernels (gpu_us_per_call_behind_sleep) would otherwise time again.
  constexpr double kShortSleepS = 0.002;
  const double short_sleep = issue_behind(kShortSleepS);
  if (short_sleep < kShortSleepS / 2) return {false, double(start.elapsedTime(end)) * 1e3};
  return {issue_behind(0.05) - short_sleep > 0.02, std::nullopt};
#else
  (void)call;
  return {};
#endif
}

Runner::CudaWarmUp Runner::warm_up_cuda(PreparedCall& call, Measurement& m) {
  auto sync = [&] { at::accelerator::synchronizeDevice(index_); };
  // Warm-up in synchronised chunks (the queue never grows unbounded).
  const double t0 = now_s();
  std::size_t n = 0;
  double per_call = 0;
  while (n < 3 || now_s() - t0 < cfg_.warmup_s) {
    const double c0 = now_s();
    for (int i = 0; i < 10; ++i) call.call();
    sync();
    per_call = (now_s() - c0) / 10;
    n += 10;
    watch_->check("warming up", n, "calls");
  }
  // Host issue cost estimate: ten calls behind a long sleep, so the queue never blocks.
  double issue_per_call = per_call, gpu_per_call = 0;
#if defined(OPCOST_TORCH_HAS_CUDA)
  {
    // Behind the sleep the ten calls also run back to back: events around them time their
    // kernels alone, the GPU time the energy loop's graph choice weighs the issue time against.
    const c10::Stream stream = at::accelerator::getCurrentStream(index_);
    c10::Event first(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);
    c10::Event last(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);
    // Long enough for ten issues, which the warm-up's synchronised batches bound from above
    // (each call's issue, its GPU time and a synchronisation's share), and at least 2 ms: 20 ms
    // for every call cost validate ~20 ms a signature, 12 s of DenseNet-121's training step's
    // 600, and 5 ms 3 s. A host held past the shorter sleep is asked once more behind the 20 ms
    // one: a GPU time left unknown would cost a host-bound call its CUDA graph in the energy
    // loop (Runner::energy_graph).
    for (double sleep_s = std::clamp(20 * per_call, 0.002, 0.02);; sleep_s = 0.02) {
      gpu_sleep_s(sleep_s);
      first.record(stream);
      const double i0 = now_s();
      for (int i = 0; i < 10; ++i) call.call();
      const double issue_s = now_s() - i0;
      issue_per_call = issue_s / 10;
      last.record(stream);
      sync();
      n += 10;
      // Calls issued after the sleep ended kept the GPU waiting: their GPU time is unknown.
      if (issue_s < sleep_s) {
        gpu_per_call = double(first.elapsedTime(last)) * 1e-3 / 10;
        break;
      }
      if (sleep_s >= 0.02) break;
    }
  }
#endif
  m.total_calls += n;
  return {per_call, issue_per_call, gpu_per_call};
}

void Runner::time_cuda(PreparedCall& call, Measurement& m, const CudaWarmUp& warm) {
  const c10::Stream stream = at::accelerator::getCurrentStream(index_);
  const double per_call = warm.per_call_s, issue_per_call = warm.issue_per_call_s;
  std::size_t n = 0;
  const std::size_t batch = std::clamp<std::size_t>(std::size_t(cfg_.target_sample_s / per_call), 1, 200);
  c10::Event start(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);
  c10::Event end(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);
  AdaptiveStop stop(cfg_.time);
  std::vector<double> samples, host, cpu;
  std::size_t late_prefill = 0, late_accepted = 0;
  // The prefill must outlast the batch's issue time, but never grows without bound: past
  // kMaxPrefillS a late batch is a host that cannot keep up, not a prefill too short.
  constexpr double kMaxPrefillS = 0.2;
  double prefill_s = std::min(kMaxPrefillS, 1.5 * issue_per_call * double(batch) + 20e-6);
  const double begin = now_s();
  while (!stop.done()) {
#if defined(OPCOST_TORCH_HAS_CUDA)
    // Keep the GPU busy while the batch is issued: the events then time GPU work alone.
    gpu_sleep_s(prefill_s);
#endif
    start.record(stream);
    const double w0 = now_s(), c0 = thread_cpu_s();
    for (std::size_t i = 0; i < batch; ++i) call.call();
    const double w1 = now_s(), c1 = thread_cpu_s();
    end.record(stream);
    end.synchronize();
    const double issue_s = w1 - w0;
    host.push_back(issue_s * 1e6 / double(batch));
    cpu.push_back((c1 - c0) * 1e6 / double(batch));
    n += batch;
    watch_->check("timing", samples.size(), "samples");
    if (issue_s > prefill_s) {
      // The sleep ended before the batch was issued, so the GPU may have waited on the
      // host: discard the sample and lengthen the prefill; after 50 tries keep such samples,
      // counted, and flag the measurement.
      prefill_s = std::min(kMaxPrefillS, 1.5 * issue_s);
      if (++late_prefill < 50) continue;
      ++late_accepted;
    }
    samples.push_back(start.elapsedTime(end) * 1e3 / double(batch));
    stop.add(samples.back(), now_s() - begin);
  }
  m.time.per_call_us = summarize(samples);
  m.time.stop_reason = to_string(stop.reason());
  m.time.calls_per_sample = batch;
  m.time.host_us_per_call = median_of(host);
  m.time.host_cpu_us_per_call = median_of(cpu);
  m.time.host_bound_samples = late_accepted;
  m.total_calls += n;
#if defined(OPCOST_TORCH_HAS_CUDA)
  m.method = fmt::format("cuda-events, batches of {} behind a sleep-kernel prefill", batch);
#else
  m.method = fmt::format("cuda-events, batches of {}", batch);
#endif
}

double Runner::share_of_whole(double per_call_us) const {
  return cfg_.part_of->calls * per_call_us / cfg_.part_of->time_us;
}

double Runner::energy_target_rel_ci95(double per_call_us) const {
  if (!is_part_of_whole(cfg_.part_of)) return cfg_.energy_target_rel_ci95;
  return part_rel_ci95(cfg_.part_of->energy_rel_ci95, share_of_whole(per_call_us));
}

bool Runner::take_settle_timing(const SettleTiming& t, Measurement& m) const {
  // Too few samples: the GPU waited for the host (a launch-bound op); its own loop times it.
  if (t.per_call_us.size() < cfg_.time.min_samples) return false;
  m.time.per_call_us = summarize(t.per_call_us);
  const bool converged = m.time.per_call_us.rel_ci95() <= cfg_.time.target_rel_ci95;
  m.time.stop_reason = to_string(converged ? StopReason::kConverged : StopReason::kTimeBudget);
  m.time.calls_per_sample = t.calls_per_sample;
  m.time.host_us_per_call = median_of(t.host_us);
  m.time.host_cpu_us_per_call = median_of(t.cpu_us);
  m.time.host_bound_samples = 0;
  m.method = fmt::format("cuda-events, batches of {} back to back in the energy loop's settle", t.calls_per_sample);
  return true;
}

// The energy loop's batches as they complete: the timeline the counter's windows are cut from
// and, on CUDA during the settle, each batch's GPU time. On CUDA two batches are in flight, so
// the GPU never waits for the host unless the op itself is launch-bound.
class Runner::EnergyLoop {
 public:
  // `graph`, when given, is the batch (its calls() of them): each batch is one replay.
  EnergyLoop(bool cuda, c10::DeviceIndex index, std::size_t batch, SettleTiming* timing, GraphBatch* graph = nullptr)
      : cuda_(cuda),
        index_(index),
        batch_(graph ? graph->calls() : batch),
        timing_(timing),
        graph_(graph),
        time_settle_(cuda && timing),
        stream_(cuda ? at::accelerator::getCurrentStream(index)
                     : c10::Stream(c10::Stream::DEFAULT, c10::Device(c10::kCPU))) {
    // Timing the settle needs events that keep time, and the one before the last (a ring of 3).
    const auto flag = time_settle_ ? c10::EventFlag::BACKEND_DEFAULT : c10::EventFlag::PYTORCH_DEFAULT;
    if (cuda_)
      for (auto& ev : events_) ev.emplace(c10::DeviceType::CUDA, flag);
    if (timing_) timing_->calls_per_sample = batch_;
  }

  // Issues one batch and records when the one before it completed (on the CPU: this one).
  void issue_batch(PreparedCall& call, double settle_end) {
    const double w0 = now_s();
    const bool timing_this = time_settle_ && w0 < settle_end;  // a batch of the settle, timed
    const double c0 = timing_this ? thread_cpu_s() : 0;
    if (graph_)
      graph_->replay();
    else
      for (std::size_t i = 0; i < batch_; ++i) call.call();
    issued_ += batch_;
    if (!cuda_) {
      timeline_.push_back({now_s(), double(issued_)});
      return;
    }
    const std::size_t slot = k_ % 3;
    events_[slot]->record(stream_);
    if (timing_this) {
      timing_->host_us.push_back((now_s() - w0) * 1e6 / double(batch_));
      timing_->cpu_us.push_back((thread_cpu_s() - c0) * 1e6 / double(batch_));
    }
    if (k_ > 0)
      previous_done(slot, timing_this);
    else
      timeline_.push_back({now_s(), 0.0});
    ++k_;
  }

  // Waits for the last batch: the timeline's end.
  void finish() {
    if (cuda_) at::accelerator::synchronizeDevice(index_);
    timeline_.push_back({now_s(), double(issued_)});
  }

  const std::vector<CompletionPoint>& timeline() const { return timeline_; }
  std::size_t issued() const { return issued_; }

 private:
  void previous_done(std::size_t slot, bool timing_this) {
    c10::Event& previous = *events_[(k_ - 1) % 3];
    queued_while_busy_[slot] = timing_this && !previous.query();
    previous.synchronize();
    timeline_.push_back({now_s(), double(issued_ - batch_)});
    // Batch k-1 is done. Its events time its kernels alone when it was queued while batch
    // k-2 still ran: the GPU then never waited for the host between them.
    const std::size_t done = (k_ - 1) % 3;
    if (k_ >= 2 && queued_while_busy_[done])  // set only for the settle's batches
      timing_->per_call_us.push_back(double(events_[(k_ - 2) % 3]->elapsedTime(previous)) * 1e3 / double(batch_));
  }

  bool cuda_;
  c10::DeviceIndex index_;
  std::size_t batch_;
  SettleTiming* timing_;
  GraphBatch* graph_;
  bool time_settle_;
  c10::Stream stream_;
  std::optional<c10::Event> events_[3];
  bool queued_while_busy_[3] = {false, false, false};  // queued before the batch ahead of it ended
  std::vector<CompletionPoint> timeline_;
  std::size_t issued_ = 0, k_ = 0;
};

namespace {

// The energy counter's windows over the loop so far, and the estimate from them.
struct EnergyWindows {
  std::vector<EnergyWindow> windows;
  EnergyEstimate estimate;
  double period_s = 0.1;
  std::size_t periods_per_window = 1;
  std::size_t edges_seen = 0;
  std::size_t stalled = 0;

  // `refit_period`: estimate the counter's update period again from the edges (not for the
  // final windows, which keep the period the loop stopped on).
  void update(const std::vector<CounterEdge>& edges, const std::vector<CompletionPoint>& timeline, double settle_end,
              double idle_W, bool refit_period = true) {
    edges_seen = edges.size();
    if (auto p = refit_period ? update_period_s(edges) : std::nullopt) {
      period_s = *p;
      // RAPL updates every ~1 ms: group its periods into windows of ~100 ms.
      periods_per_window = std::max<std::size_t>(1, std::size_t(std::lround(0.1 / period_s)));
    }
    windows = make_windows(edges, timeline, settle_end, periods_per_window);
    stalled = drop_stalled_windows(windows);
    estimate = estimate_energy(windows, idle_W);
  }
};

// The energy result from the final windows, or why there is none.
void store_energy(EnergyResult& e, const EnergyWindows& w, const std::string& probe_name, double looped_s,
                  double settle_s, double loop_start_s) {
  e.stalled_windows = w.stalled;
  if (w.windows.size() < 2) {
    e.unavailable_reason = fmt::format(
        "the {} energy counter gave {} usable window(s) in {:.2f} s of looping (it must update "
        "at least twice after the {:.2f} s settle)",
        probe_name, w.windows.size(), looped_s, settle_s);
    return;
  }
  const EnergyEstimate& est = w.estimate;
  e.available = true;
  e.source = probe_name + "-energy-counter";  // nvml-, rapl- (a unit test's fake-: never mislabelled)
  e.per_call_mJ = est.per_call_mJ;
  e.above_idle_mJ = est.above_idle_mJ;
  e.power_W = est.power_W;
  e.wall_us_per_call = est.wall_s_per_call * 1e6;
  e.counter_period_s = w.period_s * double(w.periods_per_window);
  e.windows = est.windows;
  e.effective_windows = est.effective_windows;
  e.seconds = est.seconds;
  e.window_list = w.windows;
  e.loop_start_s = loop_start_s;
}

}  // namespace

std::unique_ptr<GraphBatch> Runner::energy_graph(PreparedCall& call, Measurement& m, const CudaWarmUp* warm,
                                                 double& gpu_us) {
  // A call that waits for the device synchronises: it could not be captured, and is not issued
  // ahead of the GPU anyway.
  if (!device_.is_cuda() || cfg_.synchronous_calls || m.waits_for_device) return nullptr;
  // GPU and issue times per call: the timing loop's when it ran, else the warm-up's.
  const bool timed = m.time.per_call_us.n > 0;
  gpu_us = timed ? m.time.per_call_us.median : warm ? warm->gpu_per_call_s * 1e6 : 0;
  const double issue_us = timed ? m.time.host_us_per_call : warm ? warm->issue_per_call_s * 1e6 : 0;
  if (!energy_loop_replays_graph(cfg_.energy_graphs, gpu_us, issue_us)) return nullptr;
  const std::size_t calls = graph_batch_calls(gpu_us);
  std::string why;
  auto graph = GraphBatch::capture(call, calls, why);
  m.total_calls += 3;  // the capture stream's warm-up (the captured calls never ran)
  m.energy.loop_note =
      graph ? fmt::format("energy loop replayed from a CUDA graph of {} calls", calls)
            : fmt::format("energy loop issued call by call: a CUDA graph of the call could not be captured: {}", why);
  return graph;
}

void Runner::measure_energy(PreparedCall& call, Measurement& m, double per_call_s, SettleTiming* timing,
                            const CudaWarmUp* warm, LoopWallTiming* wall) {
  auto& e = m.energy;
  if (!probe_) {
    e.unavailable_reason = energy_why_;
    return;
  }
  if (energy_deferred_) return;  // measure_group's shared loop measures it (shared_energy_loop.cpp)
  e.idle_power_W = idle_power();
  if (!e.idle_power_W) {
    e.unavailable_reason = idle_why_;
    return;
  }
  // Loop continuously in batches of ~2 ms; record when each batch is known complete.
  const std::size_t batch = std::clamp<std::size_t>(std::size_t(0.002 / std::max(per_call_s, 1e-7)), 1, 2000);
  double graph_gpu_us = 0;
  std::unique_ptr<GraphBatch> graph = energy_graph(call, m, warm, graph_gpu_us);
  // A graph's batches are not timed in the settle: the op keeps the timing loop a host-bound
  // op gets (behind a prefill, its calls issued as the model issues them).
  EnergyLoop loop(device_.is_cuda(), c10::DeviceIndex(index_), batch, graph ? nullptr : timing, graph.get());
  // The target follows the op's share of a whole, known from its time: from the timing loop
  // before, or from the settle's samples (fixed once the settle is over).
  std::optional<double> target_rel_ci95;
  EnergyMonitor monitor(*probe_);
  monitor.start();
  const double start = now_s();
  const double settle_end = start + cfg_.energy_settle_s;
  EnergyWindows w;
  if (wall) wall->calls_per_sample = batch;
  while (true) {
    const double w0 = wall ? now_s() : 0, c0 = wall ? thread_cpu_s() : 0;  // other loops read no clock here
    loop.issue_batch(call, settle_end);
    const double t = now_s();
    if (wall && !wall->stop.done()) {  // each batch ended in the call's own synchronisation
      wall->per_call_us.push_back((t - w0) * 1e6 / double(batch));
      wall->cpu_us.push_back((thread_cpu_s() - c0) * 1e6 / double(batch));
      wall->stop.add(wall->per_call_us.back(), t - start);
      watch_->check("timing in the energy loop", wall->per_call_us.size(), "samples");
    } else {
      watch_->check("measuring energy", w.windows.size(), "windows");
    }
    if (t < settle_end + 0.1) continue;
    // Timed here too: the loop runs until the timing has its samples as well.
    const bool timed = !wall || wall->stop.done();
    // Recompute the windows only when the counter has moved: the loop stays lean.
    const bool capped = monitor.state_summary().throttle_reasons_seen & throttle::kSwPowerCap;
    const bool over_budget = t - start > (capped ? cfg_.energy_max_capped_s : cfg_.energy_max_s);
    if (monitor.edge_count() == w.edges_seen && !(over_budget && timed)) continue;
    w.update(monitor.edges(), loop.timeline(), settle_end, *e.idle_power_W);
    if (!target_rel_ci95) {
      const double per_call_us = timing && !timing->per_call_us.empty() ? median_of(timing->per_call_us)
                                 : m.time.per_call_us.n > 0             ? m.time.per_call_us.median
                                 : graph                                ? graph_gpu_us
                                                                        : per_call_s * 1e6;
      target_rel_ci95 = energy_target_rel_ci95(per_call_us);
    }
    const bool enough =
        w.windows.size() >= cfg_.energy_min_windows && w.estimate.per_call_mJ.rel_ci95() <= *target_rel_ci95;
    // At the cap in a step below it, the call is measured again duty-cycled, whose figure replaces
    // this one (where it gives one: else this one stands, its interval from these windows): from
    // this loop it needs only its power (the busy share), which its first windows give. On the
    // H100 a duty-cycled row of resnet50 took 1.2 s whole before (timing, this loop, the duty
    // cycle), 1.0 s with this stop.
    const bool duty_cycle_follows =
        capped && w.windows.size() >= kWindowsBeforeDutyCycle && duty_cycle_will_run(m, w.estimate.power_W);
    if ((enough || over_budget || duty_cycle_follows) && timed) break;
  }
  loop.finish();
  monitor.stop();
  m.total_calls += loop.issued();
  if (graph) {
    graph->release();  // its memory pool back to the allocator (one eager call)
    m.total_calls += 1;
  }
  m.during = monitor.state_summary();
  if (cfg_.keep_power_trace) {
    m.power_trace = monitor.power_trace();
    m.sm_clock_trace = monitor.sm_clock_trace();
  }
  w.update(monitor.edges(), loop.timeline(), settle_end, *e.idle_power_W, false);
  store_energy(e, w, probe_->name(), now_s() - start, cfg_.energy_settle_s, start);
}

double measurement_budget_s(const MeasureConfig& cfg, bool with_energy) {
  const double energy =
      with_energy ? 2.0 + cfg.energy_settle_s + std::max(cfg.energy_max_s, cfg.energy_max_capped_s) : 0;
  // An op at the power cap in a step below it loops once more, duty-cycled (duty_cycle_loop.cpp).
  const double duty_cycled = with_energy && cfg.step_power ? cfg.energy_settle_s + cfg.energy_max_s : 0;
  return 2.0 + cfg.warmup_s + cfg.time.max_seconds + energy + duty_cycled;
}

double Runner::budget_s() const { return measurement_budget_s(cfg_, probe_ != nullptr); }

Watchdog::Options Runner::watchdog_options() const {
  Watchdog::Options wo;
  wo.budget_s = budget_s();
  wo.abandon_factor = cfg_.abandon_factor;
  return wo;
}

Measurement Runner::measure(PreparedCall& call) {
  try {
    return measure_call(call);
  } catch (const c10::OutOfMemoryError& e) {
    // Typed for the caller (predict says what to do about it), in one line.
    const std::string what = e.what_without_backtrace();
    throw ReplayError(fmt::format("{}{}: {}", call.op(), call.overload().empty() ? "" : "." + call.overload(),
                                  what.substr(0, what.find('\n'))),
                      ReplayError::Kind::kOutOfMemory);
  }
}

Measurement Runner::measure_call(PreparedCall& call) {
  // Replayed operators run without autograd, as inference does. A model step (ModelCall) sets
  // its own modes in RunnableModel::step(): a training step leaves this inference mode.
  c10::InferenceMode guard;
  // The measured device is the current one: streams, events and the GPU sleep all use it.
  const c10::DeviceGuard device_guard(device_.is_cuda() ? c10::Device(c10::kCUDA, c10::DeviceIndex(index_))
                                                        : c10::Device(c10::kCPU));
  Measurement m;
  m.op = call.op();
  m.overload = call.overload();
  m.args = call.canonical_args();
  m.args_hash = signature_hash(m.op, m.overload, m.args);
  m.dtype = call.dtype();
  m.cache_mode = call.info().cache_mode;
  m.autocast = call.autocast();
  m.env = env_;
  m.created_at = utc_timestamp();
  Watchdog watch(fmt::format("{} {}", m.display_name(), m.args), watchdog_options(), cfg_.progress);
  watch_ = &watch;
  const double t0 = now_s();
  if (probe_) m.before = probe_->state(true);
  // A call without device work (a view; on CUDA, no kernel) is told apart first: on a GPU it
  // costs its host time alone. An op that waits for the device cannot run ahead of it: no
  // prefill can hide its issue time, so it is timed by wall clock, each batch ending in a
  // synchronisation.
  const WorkCheck checked = check_device_work(call);
  const LoopPlan plan = plan_loops(checked.work, device_);
  m.device_work = to_string(checked.work);
  const bool synchronous = checked.synchronous;
  auto estimate_s = [&] { return std::max(m.time.per_call_us.median, m.time.host_us_per_call) * 1e-6; };
  if (plan.host_time_only) {
    time_host_only(call, m, checked.work);
  } else if (device_.is_cuda() && !synchronous) {
    const CudaWarmUp warm = warm_up_cuda(call, m);
    if (cfg_.time_in_energy_settle && probe_) {
      SettleTiming settle;
      measure_energy(call, m, std::max(warm.per_call_s, warm.issue_per_call_s), &settle, &warm);
      if (!take_settle_timing(settle, m)) time_cuda(call, m, warm);
    } else {
      time_cuda(call, m, warm);
      measure_energy(call, m, estimate_s(), nullptr);
    }
    measure_energy_duty_cycled(call, m);  // at the power cap, in a step below it (duty_cycle_loop.cpp)
  } else if (cfg_.synchronous_calls && probe_ && !energy_deferred_) {
    // A whole step: timed in its energy loop, which runs until both have their samples, not in
    // a timing loop before it. Each of the loop's batches ends in the step's own synchronisation,
    // as a timing loop's would. On the H100 the timing loop and then the energy loop took 5.7 s
    // of DenseNet-121's training step's validation, twice; in one loop, 2.5 s and 3.5 s.
    LoopWallTiming wall(cfg_.time);
    const double per_call_s = warm_up_host(call, m, cfg_.time, cfg_.warmup_s, true);
    measure_energy(call, m, per_call_s, nullptr, nullptr, &wall);
    if (!take_loop_wall_timing(wall, m)) time_cpu(call, m, cfg_.time, cfg_.warmup_s, cfg_.target_sample_s, true);
  } else {
    time_cpu(call, m, cfg_.time, cfg_.warmup_s, cfg_.target_sample_s, true);
    if (device_.is_cuda() && !cfg_.synchronous_calls) {
      m.method += kWaitsForDeviceNote;
      m.waits_for_device = true;
    }
    measure_energy(call, m, estimate_s(), nullptr);
  }
  watch_ = nullptr;
  if (probe_) m.after = probe_->state(true);
  // On the CPU a view keeps its loops (the host is the device), and the method says what it is.
  if (!plan.host_time_only && checked.work != DeviceWork::kUnknown)
    m.method += fmt::format("; no device work beyond the host's ({})", device_work_reason(checked.work));
  if (m.energy.available && plan.energy_loop)
    m.method += fmt::format("; energy from {} over {} aligned windows{}", m.energy.source, m.energy.windows,
                            m.energy.loop_note.empty() ? "" : " (" + m.energy.loop_note + ")");
  if (m.energy.available && plan.energy_loop && is_part_of_whole(cfg_.part_of))
    m.method += fmt::format(" to a ±{:.1f}% target ({:.2f}% of the whole's time)",
                            100 * energy_target_rel_ci95(m.time.per_call_us.median),
                            100 * share_of_whole(m.time.per_call_us.median));
  m.flags = hygiene_flags(m.before, m.after, m.during);
  for (auto& f : measurement_flags(m, cfg_.step_power ? cfg_.step_power->gap_W : std::nullopt))
    m.flags.push_back(std::move(f));
  m.total_seconds = now_s() - t0;
  return m;
}

#if defined(OPCOST_TORCH_HAS_CUDA)
namespace {
// at::cuda::sleep spins for a number of SM clock cycles. Its rate is measured once per device
// with CUDA events, as the clock actually runs, rather than assumed.
double sleep_cycles_per_s(c10::DeviceIndex device) {
  static std::mutex mu;
  static std::map<c10::DeviceIndex, double> rates;
  std::lock_guard lock(mu);
  auto it = rates.find(device);
  if (it != rates.end()) return it->second;
  const c10::Stream stream = at::accelerator::getCurrentStream(device);
  c10::Event a(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);
  c10::Event b(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);
  constexpr int64_t kCycles = 20'000'000;  // ~10 ms at 2 GHz
  at::cuda::sleep(kCycles / 10);           // the clock ramps up before the timed sleep
  a.record(stream);
  at::cuda::sleep(kCycles);
  b.record(stream);
  b.synchronize();
  const double ms = a.elapsedTime(b);
  const double rate = ms > 0 ? double(kCycles) / (ms * 1e-3) : 2e9;
  rates[device] = rate;
  return rate;
}
}  // namespace
#endif

void gpu_sleep_s(double seconds) {
#if defined(OPCOST_TORCH_HAS_CUDA)
  at::cuda::sleep(int64_t(seconds * sleep_cycles_per_s(at::accelerator::getDeviceIndex())));
#else
  (void)seconds;
#endif
}

void synchronize_device(const std::string& device_kind, int device_index) {
  if (parse_device_spec(device_kind).is_cuda()) at::accelerator::synchronizeDevice(c10::DeviceIndex(device_index));
}

double synchronize_latency_us(const std::string& device_kind, int device_index) {
  if (!parse_device_spec(device_kind).is_cuda()) return 0;
  std::vector<double> us;
  at::accelerator::synchronizeDevice(device_index);
  for (int i = 0; i < 200; ++i) {
    const double t0 = now_s();
    at::accelerator::synchronizeDevice(device_index);
    us.push_back((now_s() - t0) * 1e6);
  }
  return median_of(us);
}

std::optional<double> launch_latency_untraced_us(const std::string& device_kind, int device_index, double sync_us) {
#if defined(OPCOST_TORCH_HAS_CUDA)
  if (!parse_device_spec(device_kind).is_cuda()) return std::nullopt;
  const auto device = c10::DeviceIndex(device_index);
  const c10::Stream stream = at::accelerator::getCurrentStream(device);
  c10::Event a(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);
  c10::Event b(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);
  // A kernel of ~2 µs: short, so that a clock that moves between the two halves of a round
  // moves its time by a fraction of a µs.
  const auto cycles = int64_t(2e-6 * sleep_cycles_per_s(device));
  std::vector<double> kernel_us, round_trip_us;
  for (int i = 0; i < 200; ++i) {
    // The kernel's own time: queued behind a prefill, nothing but it lies between the events.
    gpu_sleep_s(50e-6);
    a.record(stream);
    at::cuda::sleep(cycles);
    b.record(stream);
    b.synchronize();
    kernel_us.push_back(double(a.elapsedTime(b)) * 1e3);
    // The same kernel launched onto the idle GPU and waited for, as a step's last one is.
    at::accelerator::synchronizeDevice(device);
    const double t0 = now_s();
    at::cuda::sleep(cycles);
    at::accelerator::synchronizeDevice(device);
    round_trip_us.push_back((now_s() - t0) * 1e6);
  }
  return std::max(0.0, median_of(round_trip_us) - median_of(kernel_us) - sync_us);
#else
  (void)device_kind, (void)device_index, (void)sync_us;
  return std::nullopt;
#endif
}

}  // namespace opcost
