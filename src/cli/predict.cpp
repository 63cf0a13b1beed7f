// opcost predict / validate / model: a model step's time and energy from the operator
// database, checked against a measurement of the whole step.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "core/predict/kernels.h"
#include "core/predict/prediction.h"
#include "core/report/progress.h"
#include "core/report/report.h"
#include "core/spec/op_call.h"
#include "core/spec/spec_file.h"
#include "core/stats/summary.h"
#include "core/store/database.h"
#include "core/text/text.h"
#include "torch/kernel_trace.h"
#include "torch/model_call.h"
#include "torch/observer.h"

namespace opcost {

namespace {
constexpr int kObservedSteps = 5;
constexpr double kHostPassSeconds = 1.0;
constexpr std::size_t kHostPassMaxBytes = std::size_t(8) << 30;
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
  // Host times vary from step to step: they, and the observer's own share of each gap, are
  // medians over a few observed steps (the calls themselves come from the first).
  Inventory inv = observed_step();
  std::vector<Inventory> again;
  std::vector<double> floors = {observer_gap_floor_us()};
  for (int i = 1; i < kObservedSteps; ++i) {
    again.push_back(observed_step());
    floors.push_back(observer_gap_floor_us());
  }
  take_median_host_times(inv, again);
  inv.observer_gap_us = median_of(floors);
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

namespace {

// The op whose loop is almost all gaps between tiny kernels: its power is the GPU's power
// while it idles between kernels, which a model's gaps draw (not deep idle).
const char* kGapProbeOp = "aten::add";
const char* kGapProbeOverload = "Tensor";
const char* kGapProbeArgs = "self=f32[1] other=f32[1]";

// Expected share of an entry before it is measured: tensor elements touched × calls. Cheap,
// and ranks convolutions and matmuls above views and small pointwise ops.
double expected_weight(const InventoryEntry& e) {
  double elements = 0;
  for (const auto& a : parse_call_line(e.signature(), "inventory").args)
    if (auto* t = std::get_if<TensorSpec>(&a.value.v)) {
      double n = 1;
      for (auto d : t->shape) n *= double(d);
      elements += n;
    }
  return (elements + 1000) * double(e.count);  // + a floor for the host cost every call has
}

std::optional<std::size_t> entry_of(const Inventory& inv, const std::string& signature) {
  for (std::size_t e = 0; e < inv.entries.size(); ++e)
    if (inv.entries[e].signature() == signature) return e;
  return std::nullopt;
}

// The kernels of every call in the model (one traced step) against each signature replayed
// alone, as `measure` replays it.
KernelReport check_kernels(RunnableModel& model, const Inventory& inv) {
  fmt::print(stderr, "opcost: tracing the kernels of the model and of each operator replayed alone\n");
  const auto traced = trace_kernels([&] { model.step(); });
  std::vector<OpCall> calls;
  for (const auto& e : inv.entries) calls.push_back(parse_call_line(e.signature(), "inventory"));
  ReplayOptions ro;
  ro.device = inv.device;
  ro.autocast = inv.autocast;
  return compare_kernels(inv, traced, isolation_kernels(calls, ro));
}

struct EntryHostPass {
  std::vector<std::size_t> entries;  // inventory entries, in the pass's order
  HostPass pass;
};

// The host issue costs of every measured entry, measured together (see interleaved_host_costs).
EntryHostPass remeasure_host_costs(const Inventory& inv, const std::string& kind,
                                   const std::map<std::size_t, OpCost>& costs, PreparedCall& step) {
  fmt::print(stderr, "opcost: measuring the operators' host costs together, beside the step\n");
  EntryHostPass out;
  std::vector<std::unique_ptr<PreparedCall>> prepared;
  std::vector<PreparedCall*> calls;
  ReplayOptions ro;
  ro.device = kind;
  ro.autocast = inv.autocast;
  std::size_t bytes = 0;
  for (const auto& [e, cost] : costs) {
    if (bytes > kHostPassMaxBytes) break;  // the rest keep their stored host costs
    try {
      prepared.push_back(PreparedCall::prepare(parse_call_line(inv.entries[e].signature(), "inventory"), ro));
    } catch (const std::exception&) {
      continue;  // it was measured, so this is rare (memory); it keeps its stored host cost
    }
    bytes += prepared.back()->input_bytes();
    calls.push_back(prepared.back().get());
    out.entries.push_back(e);
  }
  out.pass = interleaved_host_costs(calls, kHostPassSeconds, &step);
  return out;
}

}  // namespace

int run_predict(const PredictOptions& o) {
  auto model = make_model(o.model.model, o.model.inputs, o.model.in);
  const std::string kind = model->device_kind();
  const bool on_gpu = kind == "cuda";
  if (o.model.in.device == "auto" && !on_gpu)
    fmt::print(stderr, "opcost: no CUDA GPU found; predicting {} on the CPU\n", o.model.model);
  Inventory inv = take_inventory(*model, o.model);
  const Environment env = describe_environment(kind, 0);
  // predict only reads: it never creates a database, and a missing one is an empty one.
  std::optional<Database> db;
  if (o.measure)
    db.emplace(o.db, Database::Access::kReadWrite, o.db_create_parent);
  else if (std::filesystem::exists(o.db))
    db.emplace(o.db, Database::Access::kReadOnly);
  else
    fmt::print(stderr, "opcost: no database at {} yet: nothing is measured (run `opcost validate` to measure)\n", o.db);
  ProgressLine progress;
  MeasureConfig op_config = o.op_config, step_config = o.step_config;
  op_config.progress = step_config.progress = [&progress](const std::string& line) { progress.update(line); };
  std::unique_ptr<Runner> op_runner;
  std::size_t failures = 0;
  std::string stopped;  // the database stopped taking rows: measure nothing more
  auto runner = [&]() -> Runner& {
    if (!op_runner) {
      op_runner = std::make_unique<Runner>(kind, 0, op_config);
      if (!op_runner->energy_unavailable_reason().empty())
        fmt::print(stderr, "opcost: energy unavailable: {}\n", op_runner->energy_unavailable_reason());
    }
    return *op_runner;
  };

  auto lookup = [&](const std::string& op, const std::string& overload, const std::string& args,
                    const std::string& autocast, const std::string& cache) {
    return db ? db->lookup(Database::Key::of(op, overload, args, env.device_name, cache, autocast), true)
              : std::nullopt;
  };
  // Stored, and returned as stored; a measurement the database refuses is still used.
  auto store = [&](Measurement& m) -> nlohmann::json {
    try {
      m.db_id = db->insert(m);  // each its own transaction: an interrupted run keeps what it measured
      return *db->get(m.db_id);
    } catch (const DatabaseError& e) {
      ++failures;
      fmt::print(stderr, "opcost: error: {} (the measurement is used, but not stored)\n", e.what());
      if (e.stops_writing()) stopped = e.what();
      return to_json(m);
    }
  };
  auto measure_one = [&](const std::string& signature, const std::string& autocast,
                         const std::string& cache) -> std::optional<nlohmann::json> {
    try {
      ReplayOptions ro;
      ro.device = kind;
      ro.autocast = autocast;
      ro.cache_mode = cache;
      auto prepared = PreparedCall::prepare(parse_call_line(signature, "inventory"), ro);
      Measurement m = runner().measure(*prepared);
      progress.clear();
      return store(m);
    } catch (const std::exception& e) {  // one bad op never stops the rest
      progress.clear();
      ++failures;
      fmt::print(stderr, "opcost: error: {}: {}\n", signature, user_message(e.what()));
      return std::nullopt;
    }
  };

  // Costs already in the database.
  std::map<std::size_t, OpCost> costs;
  for (std::size_t i = 0; i < inv.entries.size(); ++i) {
    const auto& e = inv.entries[i];
    if (auto doc = lookup(e.op, e.overload, e.args, inv.autocast, o.cache))
      costs[i] = op_cost_from_document(*doc, on_gpu);
  }
  PredictionInputs pin;
  pin.on_gpu = on_gpu;
  pin.sync_us = synchronize_latency_us(kind, 0);
  // Always a warm loop: it measures the GPU between kernels, not the op.
  const std::string gap_probe = fmt::format("{}.{} {}", kGapProbeOp, kGapProbeOverload, kGapProbeArgs);
  auto gap_doc = on_gpu ? lookup(kGapProbeOp, kGapProbeOverload, kGapProbeArgs, "", "warm") : std::nullopt;
  if (on_gpu && !gap_doc && o.measure) {
    fmt::print(stderr, "opcost: measuring the GPU's power between kernels ({})\n", gap_probe);
    gap_doc = measure_one(gap_probe, "", "warm");
  }
  auto use_gap_power = [&] {
    if (on_gpu && gap_doc && (*gap_doc)["power_W"]["average"].is_number())
      pin.gap_power_W = (*gap_doc)["power_W"]["average"].get<double>();
    else if (on_gpu)
      pin.gap_power_why = fmt::format("measure it with `opcost measure {}` or run `opcost validate`", gap_probe);
  };
  use_gap_power();

  // The whole step, measured first in `model` (it decides when enough operators are measured).
  std::optional<StepMeasurement> step;
  auto measure_step = [&] {
    fmt::print(stderr, "opcost: measuring the whole step of {} ({})\n", o.model.model, inv.input);
    Runner r(kind, 0, step_config);
    ModelCall call(*model, o.model.in);
    Measurement m = r.measure(call);
    progress.clear();
    store(m);
    StepMeasurement s;
    s.time_us = m.time.per_call_us.mean;
    s.time_ci_us = (m.time.per_call_us.ci95_high - m.time.per_call_us.ci95_low) / 2;
    if (m.energy.available) {
      s.energy_mJ = m.energy.per_call_mJ.mean;
      s.energy_ci_mJ = (m.energy.per_call_mJ.ci95_high - m.energy.per_call_mJ.ci95_low) / 2;
    } else {
      s.energy_why = m.energy.unavailable_reason;
    }
    s.flags = m.flags;
    s.db_id = m.db_id;
    step = s;
  };
  // `model` measures the step first (it decides when enough operators are measured);
  // `validate` measures it before and after the operator loops, and reports the drift.
  const bool any_missing = costs.size() < inv.entries.size();
  if (o.measure && (o.target > 0 || any_missing)) measure_step();
  const std::optional<double> before_ops = o.target > 0 || !step ? std::nullopt : std::optional(step->time_us);

  bool target_met = false;  // `model` stopped measuring because the target was reached
  if (o.measure) {
    std::vector<std::size_t> todo;
    for (std::size_t i = 0; i < inv.entries.size(); ++i)
      if (!costs.count(i)) todo.push_back(i);
    std::stable_sort(todo.begin(), todo.end(),
                     [&](auto a, auto b) { return expected_weight(inv.entries[a]) > expected_weight(inv.entries[b]); });
    std::size_t done = 0;
    for (std::size_t i : todo) {
      if (!stopped.empty()) {
        fmt::print(stderr, "opcost: stopped measuring: {}\n", stopped);
        break;
      }
      if (o.target > 0 && step) {  // `model`: stop once the measured operators explain enough
        Prediction p = predict(inv, costs, pin);
        const bool time_ok = p.time_us >= o.target * step->time_us;
        const bool energy_ok = !step->energy_mJ || (p.energy_mJ && *p.energy_mJ >= o.target * *step->energy_mJ);
        if (time_ok && energy_ok) {
          fmt::print(stderr,
                     "opcost: measured operators explain {:.1f}% of the step's time (target {:.0f}%); stopping\n",
                     100 * p.time_us / step->time_us, 100 * o.target);
          target_met = true;
          break;
        }
      }
      const auto& e = inv.entries[i];
      fmt::print(stderr, "[{}/{}] {} ×{}\n", ++done, todo.size(), e.signature(), e.count);
      if (auto doc = measure_one(e.signature(), inv.autocast, o.cache)) costs[i] = op_cost_from_document(*doc, on_gpu);
    }
  }
  // validate: the host costs of all operators again, interleaved, just before the final step
  // measurement, so that the CPU side of the prediction sees the host as the step does.
  std::optional<EntryHostPass> host_pass;
  std::map<std::size_t, OpCost> stored_costs;
  if (o.measure && o.target == 0 && !costs.empty()) {
    ModelCall step_call(*model, o.model.in);
    host_pass = remeasure_host_costs(inv, kind, costs, step_call);
    stored_costs = costs;
    for (std::size_t k = 0; k < host_pass->entries.size(); ++k)
      costs[host_pass->entries[k]].cpu_us = host_pass->pass.host_us[k];
    // The GPU's power between kernels moves with its temperature and clocks: measured again too.
    if (on_gpu) {
      fmt::print(stderr, "opcost: measuring the GPU's power between kernels again, beside the step\n");
      if (auto doc = measure_one(gap_probe, "", "warm")) gap_doc = doc;
      use_gap_power();
    }
  }
  if (o.measure && (!step || before_ops)) measure_step();
  // The host can change speed within seconds: the same step timed before the operator loops
  // and inside the host pass shows whether the prediction's inputs saw the host the step saw.
  auto flag_drift = [&](double other_us, const char* when) {
    const double change = step->time_us / other_us - 1;
    if (std::abs(change) > kStepDriftFlag)
      step->flags.push_back(
          fmt::format("drift: the step took {:.0f} µs {} and {:.0f} µs in its "
                      "measurement ({:+.1f}%)",
                      other_us, when, step->time_us, 100 * change));
  };
  if (step && host_pass && host_pass->pass.paired_us)
    flag_drift(*host_pass->pass.paired_us, "during the host-cost pass");
  if (step && before_ops) {
    step->before_ops_time_us = before_ops;
    flag_drift(*before_ops, "before the operator loops");
  }

  Prediction p = predict(inv, costs, pin);
  p.unmeasured_by_choice = target_met;
  const StepMeasurement* m = step ? &*step : nullptr;
  // Last, after every timed loop: the profiler's tracing must not touch a measurement.
  std::optional<KernelReport> kernels;
  std::string kernels_why = on_gpu ? "" : "kernels are traced on a GPU only";
  if (on_gpu) {
    try {
      kernels = check_kernels(*model, inv);
    } catch (const std::exception& e) {
      kernels_why = e.what();
    }
  }
  // With the host pass, the prediction from the stored host costs is shown beside it.
  const std::optional<Prediction> stored = host_pass ? std::optional(predict(inv, stored_costs, pin)) : std::nullopt;
  if (o.json) {
    nlohmann::json j = to_json(p, inv, m);
    j["kernels"] = kernels ? to_json(*kernels, inv, costs) : nlohmann::json{{"checked", false}, {"why", kernels_why}};
    if (host_pass) {
      j["host_costs"] = {
          {"source", "interleaved pass beside the step"},
          {"rounds", host_pass->pass.rounds},
          {"seconds", host_pass->pass.seconds},
          {"step_during_pass_us",
           host_pass->pass.paired_us ? nlohmann::json(*host_pass->pass.paired_us) : nlohmann::json()},
          {"stored_host_costs_prediction", {{"time_us", stored->time_us}, {"cpu_us", stored->timeline.cpu_us}}}};
      if (m)
        j["host_costs"]["stored_host_costs_prediction"]["time_error"] = (stored->time_us - m->time_us) / m->time_us;
    }
    for (auto& row : j["ops"]) {
      const auto e = entry_of(inv, row["name"].get<std::string>());
      if (kernels && e && kernels->entries[*e]) row["kernels"] = to_json(*kernels->entries[*e]);
    }
    j["sync_us"] = pin.sync_us;
    j["gap_power_W"] = pin.gap_power_W ? nlohmann::json(*pin.gap_power_W) : nlohmann::json(nullptr);
    j["gpu"] = env.device_name;
    j["cache"] = o.cache;
    double host = 0, gaps = 0, model_code = 0;
    for (const auto& c : inv.sequence) {
      host += c.host_us;
      gaps += c.host_gap_us;
    }
    for (double g : model_code_us(inv)) model_code += g;
    j["inventory_run"] = {{"host_us_in_calls", host},
                          {"host_us_between_calls", gaps},
                          {"observer_us_per_gap", inv.observer_gap_us},
                          {"model_code_us", model_code}};
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("{}", to_table(p, inv, m));
    fmt::print("{}",
               kernels ? to_table(*kernels, inv, costs) : fmt::format("kernels: not checked ({})\n", kernels_why));
    if (host_pass) {
      fmt::print(
          "host costs: re-measured beside the step ({} interleaved rounds, {:.2f} s); with the stored ones the "
          "prediction is {:.2f} µs{}\n",
          host_pass->pass.rounds, host_pass->pass.seconds, stored->time_us,
          m ? fmt::format(" (error {:+.2f}%)", 100 * (stored->time_us - m->time_us) / m->time_us) : "");
    }
    if (on_gpu && pin.gap_power_W)
      fmt::print("GPU power between kernels: {:.0f} W; host sync {:.1f} µs\n", *pin.gap_power_W, pin.sync_us);
  }
  std::fflush(stdout);
  if (failures) return kExitMeasurementFailed;
  return p.complete() || target_met ? kExitSuccess : kExitIncomplete;
}

}  // namespace opcost
