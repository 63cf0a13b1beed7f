#include "workflow/model_inventory.h"

#include <chrono>

#include "core/spec/arg_value.h"
#include "core/stats/summary.h"
#include "core/sys/cuda_cache.h"
#include "torch/observer.h"

namespace opcost {

namespace {
double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

HostRound time_host_round(RunnableModel& model) {
  HostRound r;
  // Plain, observed, plain: the plain steps' mean is what the host did around the observed one.
  auto plain = [&] {
    const double t0 = now_us();
    model.step();
    const double t1 = now_us();
    model.synchronize();
    r.plain_step_us += (t1 - t0) / 2;
    r.plain_wall_us += (now_us() - t0) / 2;
  };
  plain();
  ObserveOptions oo;
  oo.inputs = false;
  oo.host_times_only = true;
  {
    const CompiledKernelWatch watch(model, KernelRecords::kNamesOnly);  // the calls' names are all same_calls reads
    r.observed = observe([&] { model.step(); }, oo);
  }
  model.synchronize();
  plain();
  return r;
}

void take_host_times(Inventory& inv, const std::vector<HostRound>& rounds) {
  std::vector<Inventory> observed;
  std::vector<double> plain, with_observer;
  for (const auto& r : rounds) {
    plain.push_back(r.plain_step_us);
    if (!same_calls(inv, r.observed)) continue;  // a step that took another path
    observed.push_back(r.observed);
    with_observer.push_back(r.observed.host_step_us);
  }
  take_median_host_times(inv, observed, true);
  inv.host_calibration.rounds = int(observed.size());
  inv.host_calibration.plain_step_us = plain.empty() ? 0 : median_of(plain);
  inv.host_calibration.observed_step_us = with_observer.empty() ? 0 : median_of(with_observer);
}

std::uint64_t cache_bytes_to_class(const RunnableModel& model, std::uint64_t requested, std::string* why) {
  if (requested > 0) return requested;
  if (model.device_kind() != "cuda") {
    if (why) *why = "on the CPU every input is warm";
    return 0;
  }
  return cuda_l2_cache_bytes(model.device_index(), why).value_or(0);
}

Inventory take_inventory(RunnableModel& model, const ModelOptions& o, int host_rounds, std::uint64_t cache_bytes) {
  for (int i = 0; i < model.warmup_steps(); ++i) model.step();
  model.synchronize();
  ObserveOptions oo;
  oo.backward = o.in.train;
  oo.layer_source = model.layer_source();
  oo.cache_bytes = cache_bytes;
  // The calls, their signatures and layers come from one step observed with inputs. Its host
  // times are not used: asking for inputs makes the dispatcher box every op's arguments, and
  // naming layers may cost the model (Python's hooks), so host times come from timing rounds.
  model.name_layers(true);
  Inventory inv;
  try {
    const CompiledKernelWatch watch(model);
    inv = observe([&] { model.step(); }, oo);
  } catch (...) {
    model.name_layers(false);
    throw;
  }
  model.name_layers(false);
  model.synchronize();
  std::vector<HostRound> rounds;
  for (int i = 0; i < host_rounds; ++i) rounds.push_back(time_host_round(model));
  take_host_times(inv, rounds);
  inv.model = o.model;
  inv.input = model.input_signature();
  inv.device = model.device_kind();
  inv.dtype = o.in.dtype;
  inv.mode = o.in.train ? "train" : "inference";
  // As the measurements store it ("fp16" -> "f16"), so look-ups by an inventory match.
  inv.autocast = canonical_dtype(o.in.autocast).value_or(o.in.autocast);
  inv.parameters = model.parameter_count();
  return inv;
}

}  // namespace opcost
