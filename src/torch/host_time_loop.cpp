// The measurement of a call without device work on a GPU (core/measure/loop_plan.h): its host
// time is its whole cost to a step, so the host time is measured, with its interval, and
// nothing else: no CUDA events (there is no kernel to time) and no energy loop (there is no
// device energy beyond what the GPU draws idling, which the prediction's timeline charges as
// gap power over the host time).
#include <fmt/format.h>

#include <algorithm>

#include "core/stats/stopping.h"
#include "torch/runner.h"

namespace opcost {

namespace {
// The host time of such a call is a small share of any step: a loop of this length gives it an
// interval of about a percent, and the whole measurement stays near a tenth of a second.
constexpr double kHostOnlyMaxS = 0.1;
constexpr double kHostOnlyWarmupS = 0.02;
// Part of a model's step, its interval is sized to its share (core/stats/stopping.h), which a
// view meets in its first samples: then ten samples of a tenth of a millisecond (about twenty
// of a narrow's calls), after a warm-up of a hundred or so calls, decide. DenseNet-121's training
// step holds 597 distinct narrows and 671 views in all: 0.1 s each was a minute, 17 ms each
// (samples of a millisecond) 10 s, 6 ms each (2 ms of warm-up, 2.5 ms of samples of a quarter of
// a millisecond) 3.8 s on the H100.
constexpr double kHostOnlyPartMinS = 0.001;
constexpr double kHostOnlyPartWarmupS = 0.0005;
constexpr double kHostOnlyPartSampleS = 0.0001;
}  // namespace

void Runner::time_host_only(PreparedCall& call, Measurement& m, DeviceWork work) {
  StoppingCriterion rule = cfg_.time;
  rule.max_seconds = std::min(rule.max_seconds, kHostOnlyMaxS);
  rule.min_seconds = std::min(rule.min_seconds, kHostOnlyWarmupS);
  double warmup_s = std::min(cfg_.warmup_s, kHostOnlyWarmupS), sample_s = cfg_.target_sample_s;
  const bool part = is_part_of_whole(cfg_.part_of);
  if (part) {
    rule.share_of = {cfg_.part_of->time_us, cfg_.part_of->calls};
    rule.min_seconds = std::min(rule.min_seconds, kHostOnlyPartMinS);
    warmup_s = std::min(warmup_s, kHostOnlyPartWarmupS);
    sample_s = std::min(sample_s, kHostOnlyPartSampleS);
  }
  // No synchronisation after each batch: the call has no device work to wait for, and with
  // samples of 0.1 ms a synchronisation's few microseconds would read as its host time.
  time_cpu(call, m, rule, warmup_s, sample_s, false);
  m.time.host_us = m.time.per_call_us;
  // The GPU time is exactly 0, from as many samples as the host time: a figure with an
  // interval (of zero width), so that nothing takes it for a time from a single sample.
  Summary none;
  none.n = m.time.host_us.n;
  m.time.per_call_us = none;
  m.device_work = to_string(work);
  m.method = fmt::format("host wall clock, batches of {}; no device work ({}): GPU time 0", m.time.calls_per_sample,
                         device_work_reason(work));
  if (part) {
    const double mean_us = m.time.host_us.mean;  // as the stopping rule took it
    m.method += fmt::format("; host time to a ±{:.1f}% target ({:.3f}% of the whole's time)",
                            100 * share_sized_rel_ci95(rule, mean_us), 100 * share_of_whole(mean_us));
  }
  EnergyResult& e = m.energy;
  if (!probe_) {
    e.unavailable_reason = energy_why_;
    return;
  }
  e.available = true;
  e.source = "no-device-work";
  m.method +=
      "; energy 0 mJ above the GPU's gap power, no energy loop: its energy is the gap power over its host time, "
      "which the prediction's timeline charges";
}

}  // namespace opcost
