// predict / validate / model: a model step's time and energy from the operator database,
// checked against a measurement of the whole step.
#include "workflow/predict.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "core/report/report.h"
#include "core/spec/op_call.h"
#include "core/spec/spec_file.h"
#include "core/stats/summary.h"
#include "core/store/database.h"
#include "torch/kernel_trace.h"
#include "torch/model_call.h"

namespace opcost {

PredictOptions PredictOptions::predict_only() { return PredictOptions{}; }

PredictOptions PredictOptions::validate() {
  PredictOptions o;
  o.measure = true;
  o.set_budgets(1.0, 2.0, 3.5, 3.0, false);
  return o;
}

PredictOptions PredictOptions::model_to(double target) {
  PredictOptions o;
  o.measure = true;
  o.target = target;
  o.set_budgets(0.5, 1.0, 1.5, 3.0, false);
  return o;
}

void PredictOptions::set_budgets(double op_time_s, double op_energy_s, double op_energy_capped_s, double step_time_s,
                                 bool no_energy) {
  for (MeasureConfig* c : {&op_config, &step_config}) c->energy = !no_energy;
  op_config.time.max_seconds = op_time_s;
  op_config.energy_max_s = op_energy_s;
  op_config.energy_max_capped_s = op_energy_capped_s;
  step_config.synchronous_calls = true;  // a step synchronises itself: timed by wall clock
  step_config.time.max_seconds = step_time_s;
}

namespace {

constexpr double kHostPassSeconds = 1.0;
constexpr std::size_t kHostPassMaxBytes = std::size_t(8) << 30;

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
KernelReport check_kernels(RunnableModel& model, const Inventory& inv, const std::string& device, const Notes& notes) {
  notes.say("tracing the kernels of the model and of each operator replayed alone");
  const auto traced = trace_kernels([&] { model.step(); });
  std::vector<OpCall> calls;
  for (const auto& e : inv.entries) calls.push_back(parse_call_line(e.signature(), "inventory"));
  ReplayOptions ro;
  ro.device = device;
  ro.autocast = inv.autocast;
  return compare_kernels(inv, traced, isolation_kernels(calls, ro));
}

struct EntryHostPass {
  std::vector<std::size_t> entries;  // inventory entries, in the pass's order
  HostPass pass;
};

// The host issue costs of every measured entry, measured together (see interleaved_host_costs).
EntryHostPass remeasure_host_costs(const Inventory& inv, const std::string& device,
                                   const std::map<std::size_t, OpCost>& costs, PreparedCall& step, const Notes& notes) {
  notes.say("measuring the operators' host costs together, beside the step");
  EntryHostPass out;
  std::vector<std::unique_ptr<PreparedCall>> prepared;
  std::vector<PreparedCall*> calls;
  ReplayOptions ro;
  ro.device = device;
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

PredictReport run_predict(const PredictOptions& o, const Notes& notes) {
  auto model = make_model(o.model.model, o.model.inputs, o.model.in);
  return run_predict(o, *model, notes);
}

PredictReport run_predict(const PredictOptions& o, RunnableModel& runnable, const Notes& notes) {
  RunnableModel* model = &runnable;
  const std::string kind = model->device_kind();
  const int index = model->device_index();
  // Every step works on the model's device, with its index: replay, NVML, look-ups.
  const std::string device = kind == "cuda" ? fmt::format("cuda:{}", index) : "cpu";
  const bool on_gpu = kind == "cuda";
  if (o.model.in.device == "auto" && !on_gpu)
    notes.say(fmt::format("no CUDA GPU found; predicting {} on the CPU", o.model.model));
  PredictReport report;
  report.cache = o.cache;
  report.inventory = take_inventory(*model, o.model);
  const Inventory& inv = report.inventory;
  report.env = describe_environment(kind, index);
  const Environment& env = report.env;
  // predict only reads: it never creates a database, and a missing one is an empty one.
  std::optional<Database> db;
  if (o.measure)
    db.emplace(o.db, Database::Access::kReadWrite, o.db_create_parent);
  else if (std::filesystem::exists(o.db))
    db.emplace(o.db, Database::Access::kReadOnly);
  else
    notes.say(fmt::format("no database at {} yet: nothing is measured (run `opcost validate` to measure)", o.db));
  MeasureConfig op_config = o.op_config, step_config = o.step_config;
  op_config.progress = step_config.progress = notes.progress;
  std::unique_ptr<Runner> op_runner;
  std::size_t& failures = report.failures;
  std::string stopped;  // the database stopped taking rows: measure nothing more
  auto runner = [&]() -> Runner& {
    if (!op_runner) {
      op_runner = std::make_unique<Runner>(kind, index, op_config);
      if (!op_runner->energy_unavailable_reason().empty())
        notes.say("energy unavailable: " + op_runner->energy_unavailable_reason());
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
      notes.failed(fmt::format("{} (the measurement is used, but not stored)", e.what()));
      if (e.stops_writing()) stopped = e.what();
      return to_json(m);
    }
  };
  auto measure_one = [&](const std::string& signature, const std::string& autocast,
                         const std::string& cache) -> std::optional<nlohmann::json> {
    try {
      ReplayOptions ro;
      ro.device = device;
      ro.autocast = autocast;
      ro.cache_mode = cache;
      auto prepared = PreparedCall::prepare(parse_call_line(signature, "inventory"), ro);
      Measurement m = runner().measure(*prepared);
      notes.done();
      return store(m);
    } catch (const std::exception& e) {  // one bad op never stops the rest
      notes.done();
      ++failures;
      notes.failed(fmt::format("{}: {}", signature, e.what()));
      return std::nullopt;
    }
  };

  // Costs already in the database.
  std::map<std::size_t, OpCost>& costs = report.costs;
  for (std::size_t i = 0; i < inv.entries.size(); ++i) {
    const auto& e = inv.entries[i];
    if (auto doc = lookup(e.op, e.overload, e.args, inv.autocast, o.cache))
      costs[i] = op_cost_from_document(*doc, on_gpu);
  }
  PredictionInputs& pin = report.inputs;
  pin.on_gpu = on_gpu;
  pin.sync_us = synchronize_latency_us(kind, index);
  // Always a warm loop: it measures the GPU between kernels, not the op.
  const std::string gap_probe = fmt::format("{}.{} {}", kGapProbeOp, kGapProbeOverload, kGapProbeArgs);
  auto gap_doc = on_gpu ? lookup(kGapProbeOp, kGapProbeOverload, kGapProbeArgs, "", "warm") : std::nullopt;
  // A stored probe without an energy figure (a loop too short for the counter) is no gap power.
  const auto has_power = [](const std::optional<nlohmann::json>& d) {
    return d && (*d)["power_W"]["average"].is_number();
  };
  if (on_gpu && !has_power(gap_doc) && o.measure) {
    notes.say(fmt::format("measuring the GPU's power between kernels ({})", gap_probe));
    gap_doc = measure_one(gap_probe, "", "warm");
  }
  auto use_gap_power = [&] {
    if (on_gpu && gap_doc && (*gap_doc)["power_W"]["average"].is_number())
      pin.gap_power_W = (*gap_doc)["power_W"]["average"].get<double>();
    else if (on_gpu && gap_doc)  // measured, but without energy (a budget too short, NVML missing)
      pin.gap_power_why = fmt::format("the probe {} has no energy figure: {}", gap_probe,
                                      gap_doc->value("energy_unavailable", std::string("unknown")));
    else if (on_gpu)
      pin.gap_power_why = fmt::format("measure it with `opcost measure {}` or run `opcost validate`", gap_probe);
  };
  use_gap_power();

  // The whole step, measured first in `model` (it decides when enough operators are measured).
  std::optional<StepMeasurement>& step = report.step;
  auto measure_step = [&] {
    notes.say(fmt::format("measuring the whole step of {} ({})", inv.model, inv.input));
    Runner r(kind, index, step_config);
    ModelCall call(*model, o.model.in);
    Measurement m = r.measure(call);
    notes.done();
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

  bool& target_met = report.target_met;  // `model` stopped measuring because the target was reached
  if (o.measure) {
    std::vector<std::size_t> todo;
    for (std::size_t i = 0; i < inv.entries.size(); ++i)
      if (!costs.count(i)) todo.push_back(i);
    std::stable_sort(todo.begin(), todo.end(),
                     [&](auto a, auto b) { return expected_weight(inv.entries[a]) > expected_weight(inv.entries[b]); });
    std::size_t done = 0;
    for (std::size_t i : todo) {
      if (!stopped.empty()) {
        notes.say("stopped measuring: " + stopped);
        break;
      }
      if (o.target > 0 && step) {  // `model`: stop once the measured operators explain enough
        Prediction p = predict(inv, costs, pin);
        const bool time_ok = p.time_us >= o.target * step->time_us;
        const bool energy_ok = !step->energy_mJ || (p.energy_mJ && *p.energy_mJ >= o.target * *step->energy_mJ);
        if (time_ok && energy_ok) {
          notes.say(fmt::format("measured operators explain {:.1f}% of the step's time (target {:.0f}%); stopping",
                                100 * p.time_us / step->time_us, 100 * o.target));
          target_met = true;
          break;
        }
      }
      const auto& e = inv.entries[i];
      notes.say(fmt::format("[{}/{}] {} ×{}", ++done, todo.size(), e.signature(), e.count));
      if (auto doc = measure_one(e.signature(), inv.autocast, o.cache)) costs[i] = op_cost_from_document(*doc, on_gpu);
    }
  }
  // validate: the host costs of all operators again, interleaved, just before the final step
  // measurement, so that the CPU side of the prediction sees the host as the step does.
  std::optional<EntryHostPass> host_pass;
  std::map<std::size_t, OpCost> stored_costs;
  if (o.measure && o.target == 0 && !costs.empty()) {
    ModelCall step_call(*model, o.model.in);
    host_pass = remeasure_host_costs(inv, device, costs, step_call, notes);
    stored_costs = costs;
    for (std::size_t k = 0; k < host_pass->entries.size(); ++k)
      costs[host_pass->entries[k]].cpu_us = host_pass->pass.host_us[k];
    // The GPU's power between kernels moves with its temperature and clocks: measured again too.
    if (on_gpu) {
      notes.say("measuring the GPU's power between kernels again, beside the step");
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

  report.prediction = predict(inv, costs, pin);
  report.prediction.unmeasured_by_choice = target_met;
  // Last, after every timed loop: the profiler's tracing must not touch a measurement.
  report.kernels_why = on_gpu ? "" : "kernels are traced on a GPU only";
  if (on_gpu) {
    try {
      report.kernels = check_kernels(*model, inv, device, notes);
    } catch (const std::exception& e) {
      report.kernels_why = e.what();
    }
  }
  if (host_pass) {
    // With the host pass, the prediction from the stored host costs is reported beside it.
    report.host_pass = HostPassSummary{host_pass->pass.rounds, host_pass->pass.seconds, host_pass->pass.paired_us};
    report.stored_host_costs = predict(inv, stored_costs, pin);
  }
  return report;
}

nlohmann::json to_json(const PredictReport& r) {
  const Inventory& inv = r.inventory;
  const StepMeasurement* m = r.step ? &*r.step : nullptr;
  nlohmann::json j = to_json(r.prediction, inv, m);
  j["kernels"] =
      r.kernels ? to_json(*r.kernels, inv, r.costs) : nlohmann::json{{"checked", false}, {"why", r.kernels_why}};
  if (r.host_pass && r.stored_host_costs) {
    const Prediction& stored = *r.stored_host_costs;
    j["host_costs"] = {
        {"source", "interleaved pass beside the step"},
        {"rounds", r.host_pass->rounds},
        {"seconds", r.host_pass->seconds},
        {"step_during_pass_us",
         r.host_pass->step_during_pass_us ? nlohmann::json(*r.host_pass->step_during_pass_us) : nlohmann::json()},
        {"stored_host_costs_prediction", {{"time_us", stored.time_us}, {"cpu_us", stored.timeline.cpu_us}}}};
    if (m) j["host_costs"]["stored_host_costs_prediction"]["time_error"] = (stored.time_us - m->time_us) / m->time_us;
  }
  for (auto& row : j["ops"]) {
    const auto e = entry_of(inv, row["name"].get<std::string>());
    if (r.kernels && e && r.kernels->entries[*e]) row["kernels"] = to_json(*r.kernels->entries[*e]);
  }
  j["sync_us"] = r.inputs.sync_us;
  j["gap_power_W"] = r.inputs.gap_power_W ? nlohmann::json(*r.inputs.gap_power_W) : nlohmann::json(nullptr);
  j["gpu"] = r.env.device_name;
  j["cache"] = r.cache;
  j["target_met"] = r.target_met;
  j["failures"] = r.failures;
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
  return j;
}

std::string to_text(const PredictReport& r) {
  const StepMeasurement* m = r.step ? &*r.step : nullptr;
  std::string out = to_table(r.prediction, r.inventory, m);
  out += r.kernels ? to_table(*r.kernels, r.inventory, r.costs)
                   : fmt::format("kernels: not checked ({})\n", r.kernels_why);
  if (r.host_pass && r.stored_host_costs) {
    const double stored_us = r.stored_host_costs->time_us;
    out += fmt::format(
        "host costs: re-measured beside the step ({} interleaved rounds, {:.2f} s); with the stored ones the "
        "prediction is {:.2f} µs{}\n",
        r.host_pass->rounds, r.host_pass->seconds, stored_us,
        m ? fmt::format(" (error {:+.2f}%)", 100 * (stored_us - m->time_us) / m->time_us) : "");
  }
  if (r.inputs.on_gpu && r.inputs.gap_power_W)
    out += fmt::format("GPU power between kernels: {:.0f} W; host sync {:.1f} µs\n", *r.inputs.gap_power_W,
                       r.inputs.sync_us);
  return out;
}

}  // namespace opcost
