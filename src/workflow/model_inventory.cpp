#include "workflow/model_inventory.h"

#include "core/spec/arg_value.h"
#include "core/stats/summary.h"
#include "torch/observer.h"

namespace opcost {

namespace {
constexpr int kObservedSteps = 5;
}  // namespace

Inventory take_inventory(RunnableModel& model, const ModelOptions& o) {
  for (int i = 0; i < model.warmup_steps(); ++i) model.step();
  model.synchronize();
  ObserveOptions oo;
  oo.backward = o.in.train;
  oo.layer_source = model.layer_source();
  auto observed_step = [&] {
    return observe(
        [&] {
          model.step();
          model.synchronize();
        },
        oo);
  };
  // The calls and their signatures come from one step observed with inputs. Host times vary
  // from step to step: they, and the observer's own share of each gap, are medians over a
  // few more steps observed without inputs, whose observer costs the host far less.
  Inventory inv = observed_step();
  oo.inputs = false;
  std::vector<Inventory> again;
  std::vector<double> floors;
  for (int i = 1; i < kObservedSteps; ++i) {
    again.push_back(observed_step());
    floors.push_back(observer_gap_floor_us(false));
  }
  take_median_host_times(inv, again, true);
  inv.observer_gap_us = median_of(floors);
  inv.layer_scope_us = model.layer_scope_cost_us();
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
