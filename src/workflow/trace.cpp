#include "workflow/trace.h"

#include <fmt/format.h>

#include "core/trace/energy_attribution.h"
#include "core/trace/inventory_layers.h"
#include "torch/model_call.h"
#include "torch/observer.h"

namespace opcost {

namespace {

// Each traced call's power, from the measurement of the inventory call it matches.
std::vector<CallPower> call_powers(const TraceRun& run, const PredictReport& r) {
  const std::vector<int> match = match_inventory_calls(run, r.inventory);
  std::vector<CallPower> power(run.ops.size());
  for (std::size_t i = 0; i < run.ops.size(); ++i) {
    CallPower& p = power[i];
    if (match[i] < 0) {
      p.why_none = "not a call of the model's inventory step";
      continue;
    }
    const std::size_t entry = r.inventory.sequence[std::size_t(match[i])].entry;
    const auto cost = r.costs.find(entry);
    if (cost == r.costs.end()) {
      p.why_none = "its operator is not measured";
    } else if (!cost->second.energy_mJ) {
      p.why_none = "its operator's measurement has no energy (" + cost->second.energy_why + ")";
    } else if (cost->second.gpu_us <= 0) {
      p.why_none = "its operator's measurement has no device time";
    } else {
      const OpCost& c = cost->second;
      p.active_W = active_energy_mJ(c, r.inputs) / c.gpu_us * 1e3;  // mJ / µs = kW
      p.active_ci_W = c.energy_ci_mJ.value_or(0) / c.gpu_us * 1e3;
      p.measurement = c.db_id >= 0 ? c.db_id : -int64_t(entry) - 2;  // unstored: one per entry
    }
  }
  return power;
}

// The energy of each call, or why there is none.
void attach_energy(TraceRun& run, const PredictReport& r) {
  run.measured_step = r.step;
  if (!r.step || !r.step->energy_mJ)
    run.energy_why = "the untraced step has no energy figure" + (r.step ? ": " + r.step->energy_why : std::string());
  else if (!r.inputs.gap_power_W)
    run.energy_why = "no power between kernels: " + r.inputs.gap_power_why;
  else if (run.steps.empty())
    run.energy_why = "no step was kept";
  else
    run.energy = attribute_energy(run, call_powers(run, r), *r.inputs.gap_power_W, r.inputs.gap_power_ci_W, *r.step);
}

}  // namespace

TraceRun trace_model(const ModelOptions& o, const TraceRecordOptions& options, const PredictOptions* energy,
                     const Notes& notes) {
  auto model = make_model(o.model, o.inputs, o.in);
  return trace_model(*model, o, options, energy, notes);
}

TraceRun trace_model(RunnableModel& model, const ModelOptions& o, const TraceRecordOptions& options,
                     const PredictOptions* energy, const Notes& notes) {
  const bool on_gpu = model.device_kind() == "cuda";
  // Every timed loop runs before the profiler starts: it must not touch a measurement.
  std::optional<PredictReport> validated;
  if (energy && on_gpu) {
    PredictOptions po = *energy;
    po.model = o;
    po.measure = true;
    po.check_kernels = false;  // the trace itself shows the kernels
    validated = run_predict(po, model, notes);
  }
  for (int i = 0; i < model.warmup_steps(); ++i) model.step();  // one-time set-up outside the trace
  model.synchronize();
  model.name_layers(true);
  // The model itself is the outermost layer, so that calls in its own forward (outside every
  // submodule) have a layer too, as Python's root module does.
  struct RootLayer {
    explicit RootLayer(const std::string& name) { open_layer_scope(name); }
    ~RootLayer() { close_layer_scope(); }
  };
  TraceRun run = record_trace(
      [&] {
        const RootLayer root(model.name());
        const CompiledKernelWatch watch(model);  // generated kernels as calls, in their layers
        model.step();
      },
      model.device_kind(), model.device_index(), options);
  model.name_layers(false);
  // TorchScript opens no layer records: its calls' layers come from the inventory's module
  // hierarchy, matched call by call.
  if (model.layer_source()) {
    const Inventory inv = validated ? validated->inventory : take_inventory(model, o, 0);
    add_inventory_layers(run, inv);
  }
  if (validated) {
    attach_energy(run, *validated);
  } else if (energy) {  // the CPU: the step as the user runs it, no profiler, no layer naming
    notes.say(fmt::format("measuring the untraced step of {}", o.model));
    Runner runner(model.device_kind(), model.device_index(), energy->step_config);
    ModelCall call(model, o.in);
    run.measured_step = step_measurement_of(runner.measure(call));
    run.energy_why = "energy per call is attributed on a GPU only (the CPU runs no kernels to charge)";
  }
  return run;
}

}  // namespace opcost
