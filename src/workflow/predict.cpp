// predict / validate / model: a model step's time and energy from the operator database,
// checked against a measurement of the whole step.
#include "workflow/predict.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>

#include "core/predict/float_scalar_match.h"
#include "core/predict/op_weight.h"
#include "core/report/report.h"
#include "core/spec/op_call.h"
#include "core/spec/spec_file.h"
#include "core/stats/summary.h"
#include "core/store/database.h"
#include "core/text/text.h"
#include "torch/kernel_trace.h"
#include "torch/model_call.h"
#include "torch/replay.h"
#include "workflow/measure.h"

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
  // Most models' operators each hold a few percent of the step: short loops from the start.
  o.short_loops_after = 0;
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

void PredictOptions::check() const {
  check_measure_config(op_config);
  check_option_number(step_config.time.max_seconds, "step_max_time", "--step-max-time", 0, false, kMaxBudgetSeconds,
                      " seconds");
  check_option_number(short_loops_after, "short_loops_after", "--short-loops-after", 0, true, 1);
  check_option_number(ops_energy_rel_ci95, "ops_energy_ci", "--ops-energy-ci", 0, true, 1);
  if (target != 0) check_option_number(target, "target", "--target", 0.01, true, 1);
}

MeasureConfig PredictOptions::short_op_config() const {
  // Each operator's interval may be several times the step's: n operators' independent
  // errors add in quadrature, so the step's interval is about theirs / √n.
  MeasureConfig c = op_config;
  c.time.max_seconds = op_config.time.max_seconds / 5;
  c.time.target_rel_ci95 = std::max(op_config.time.target_rel_ci95, 0.02);
  // The first ten calls warm an operator up (they pick its kernels), and ten samples of a
  // millisecond reach 2% for nearly every operator (the H100's resnet50 b32: 0.04–0.9% after
  // the 0.05 s minimum): 0.02 s of each is enough here.
  c.warmup_s = std::min(op_config.warmup_s, 0.02);
  c.time.min_seconds = std::min(op_config.time.min_seconds, 0.02);
  c.time_in_energy_settle = c.energy;
  c.energy_settle_s = std::min(op_config.energy_settle_s, 0.15);
  c.energy_min_windows = std::min<std::size_t>(op_config.energy_min_windows, 3);
  c.energy_target_rel_ci95 = std::max(op_config.energy_target_rel_ci95, 0.05);
  c.energy_max_s = op_config.energy_max_s / 2;
  c.energy_max_capped_s = op_config.energy_max_capped_s / 2;
  return c;
}

namespace {

constexpr double kPairedSeconds = 1.0;
constexpr std::size_t kPairedMinRounds = 5, kPairedMaxRounds = 200;

// The op whose loop is almost all gaps between tiny kernels: its power is the GPU's power
// while it idles between kernels, which a model's gaps draw (not deep idle).
const char* kGapProbeOp = "aten::add";
const char* kGapProbeOverload = "Tensor";
const char* kGapProbeArgs = "self=f32[1] other=f32[1]";

// Rows of one operator compared by meaning when none matches a call's text (at most this many,
// newest first): a database of a large sweep must not make a prediction parse all of it.
constexpr std::size_t kMaxRowsComparedPerOp = 2000;

// An error as one line: without LibTorch's C++ backtrace, nor the Python traceback ("\n\nAt:\n"
// and its frames) a Python kernel's exception carries, its other lines joined by "; ".
std::string one_line(const std::string& what) {
  std::string_view text = what;
  if (const auto at = text.find("\n\nAt:\n"); at != std::string_view::npos) text = text.substr(0, at);
  const std::string message = user_message(text);
  std::string out;
  bool newline = false;
  for (char c : message) {
    if (c == '\n') {
      newline = true;
      continue;
    }
    if (newline && !(c == ' ' || c == '\t')) {
      out += !out.empty() && out.back() == ':' ? " " : "; ";  // "rejected the arguments x:" then the reason
      newline = false;
    }
    if (!newline) out += c;
  }
  return printable_one_line(out, 1000);
}

// What the user can do about a call that failed when replayed alone. `rebuilding`: the error
// came from making its arguments (the argument language or the schema's binding), not from
// running the operator on them.
std::string fix_for(const std::string& why, const std::string& signature, bool rebuilding) {
  if (why.find("unknown operator") != std::string::npos)
    return "register the operator in the process that runs opcost (import the package that defines it, or "
           "torch.ops.load_library its library) and run again";
  if (why.find("out of memory") != std::string::npos || why.find("use smaller shapes") != std::string::npos)
    return "free memory on the device (other processes, a smaller batch) and run again";
  if (rebuilding && why.find("rejected the arguments") == std::string::npos)
    return "opcost cannot rebuild this argument for a replay (opcost's limit, not the model's): report this line "
           "with the model's opcost and torch versions";
  return fmt::format(
      "the operator refused opcost's seeded random inputs; replay it alone to see the whole error (opcost.measure in "
      "Python, or `opcost measure {}`), giving an input that needs particular values a :range[low,high]",
      elide(signature, 300));
}

// The model, the layer and the call a failure belongs to, in one line with its fix.
std::string failure_line(const Inventory& inv, const InventoryEntry& e, const std::string& why,
                         const std::string& fix) {
  const std::string layer = e.layers.empty() || e.layers[0].empty() ? "(top)" : e.layers[0];
  const std::string more = e.layers.size() > 1 ? fmt::format(" (+{} more layers)", e.layers.size() - 1) : "";
  return fmt::format(
      "{}: layer {}{}: {}: {}; fix: {} (the rest of the model is measured and predicted, this call is listed as "
      "missing)",
      inv.model, layer, more, elide(e.signature(), 600), why, fix);
}

std::optional<std::size_t> entry_of(const Inventory& inv, const std::string& row_name) {
  for (std::size_t e = 0; e < inv.entries.size(); ++e)
    if (inv.entries[e].row_name() == row_name) return e;
  return std::nullopt;
}

// The kernels of every call in the model (`traced`: one step) against each signature replayed
// alone, as `measure` replays it.
KernelReport check_kernels(const std::vector<CallKernels>& traced, const Inventory& inv, const std::string& device,
                           const Notes& notes) {
  notes.say("tracing the kernels of each operator replayed alone");
  // A signature that does not read back has no kernels to compare (its measurement failed
  // already, named with its layer): the rest are still checked.
  std::vector<OpCall> calls;
  std::vector<std::size_t> entry_of_call;
  for (std::size_t i = 0; i < inv.entries.size(); ++i) {
    try {
      calls.push_back(parse_call_line(inv.entries[i].signature(), "inventory"));
      entry_of_call.push_back(i);
    } catch (const std::exception&) {}
  }
  ReplayOptions ro;
  ro.device = device;
  ro.autocast = inv.autocast;
  auto replayed = isolation_kernels(calls, ro);
  std::vector<std::optional<std::vector<std::string>>> by_entry(inv.entries.size());
  for (std::size_t k = 0; k < entry_of_call.size(); ++k) by_entry[entry_of_call[k]] = std::move(replayed[k]);
  return compare_kernels(inv, traced, by_entry);
}

// validate: rounds of the step with its host times observed. Each round that took the model's
// path is kept in `compared` with its plain steps' wall time, for predict_rounds; the rounds'
// medians become the inventory's host times.
PairedRounds paired_rounds(RunnableModel& model, Inventory& inv, std::vector<HostRound>& compared, const Notes& notes) {
  notes.say("timing the step and the host times of its calls in interleaved rounds");
  PairedRounds out;
  std::vector<HostRound> rounds;
  std::vector<double> plain_host;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed_s = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  while (rounds.size() < kPairedMinRounds || (elapsed_s() < kPairedSeconds && rounds.size() < kPairedMaxRounds)) {
    rounds.push_back(time_host_round(model));
    const HostRound& r = rounds.back();
    plain_host.push_back(r.plain_step_us);
    if (!same_calls(inv, r.observed)) continue;
    compared.push_back(r);
    out.measured_us.push_back(r.plain_wall_us);
  }
  out.seconds = elapsed_s();
  // The 10th to 90th percentile: one step held up by something else (a page fault, a
  // collection) is not the host's speed.
  std::sort(plain_host.begin(), plain_host.end());
  const std::size_t n = plain_host.size();
  out.host_drift = (plain_host[std::min(n - 1, 9 * n / 10)] - plain_host[n / 10]) / median_of(plain_host);
  take_host_times(inv, rounds);  // the prediction's host times: these rounds', next to the step
  return out;
}

// Each compared round predicted with the host times of its own round (and, with traced
// launches, as if every call launched as it returned), once the prediction's inputs are final.
void predict_rounds(PairedRounds& paired, const Inventory& inv, const std::vector<HostRound>& compared,
                    const std::map<std::size_t, OpCost>& costs, const PredictionInputs& pin) {
  for (const HostRound& r : compared) {
    Inventory own = inv;
    take_host_times(own, {r});
    const Prediction p = predict(own, costs, pin);
    paired.predicted_us.push_back(p.time_us);
    if (p.time_us_launched_at_return) paired.predicted_at_return_us.push_back(*p.time_us_launched_at_return);
  }
}

void pair_energy(PredictReport& r) {
  const StepMeasurement& step = *r.step;
  if (!step.energy_mJ || !step.energy_loop_time_us || !r.prediction.energy_mJ) {
    r.paired_energy_why = "no energy figure on one side";
    return;
  }
  const auto scale = host_scale_matching(r.inventory, r.costs, r.inputs, *step.energy_loop_time_us);
  if (!scale) {
    r.paired_energy_why = fmt::format(
        "no host speed within 1/4 to 4 times this one makes the predicted time {:.0f} µs, the step's in its energy "
        "loop (a GPU-bound step's time hardly depends on the host)",
        *step.energy_loop_time_us);
    return;
  }
  PredictionInputs at = r.inputs;
  at.host_scale = *scale;
  const Prediction p = predict(r.inventory, r.costs, at);
  r.paired_energy =
      PairedEnergy{*step.energy_loop_time_us,    *scale, *p.energy_mJ, *step.energy_mJ, p.energy_ci_mJ.value_or(0),
                   step.energy_ci_mJ.value_or(0)};
}

}  // namespace

PredictReport run_predict(const PredictOptions& o, const Notes& notes) {
  o.check();  // before the model is made
  auto model = make_model(o.model.model, o.model.inputs, o.model.in);
  return run_predict(o, *model, notes);
}

PredictReport run_predict(const PredictOptions& o, RunnableModel& runnable, const Notes& notes) {
  o.check();
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
  if (o.cache != "auto" && o.cache != "warm" && o.cache != "cold")
    throw std::invalid_argument(fmt::format("cache '{}' is not one of auto, warm, cold", o.cache));
  const std::uint64_t cache_bytes =
      o.cache == "auto" ? cache_bytes_to_class(*model, o.cache_bytes, &report.cache_why) : 0;
  report.inventory = take_inventory(*model, o.model, 8, cache_bytes);
  const Inventory& inv = report.inventory;
  report.env = describe_environment(kind, index);
  const Environment& env = report.env;
  // predict only reads: it never creates a database, and a missing one is an empty one.
  std::optional<Database> db;
  if (o.measure)
    db.emplace(o.db, Database::Access::kReadWrite, o.db_create_parent);
  else if (Database::exists(o.db))
    db.emplace(o.db, Database::Access::kReadOnly);
  else
    notes.say(fmt::format("no database at {} yet: nothing is measured (run `opcost validate` to measure)",
                          display_location(o.db)));
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
  // Why each inventory entry whose measurement failed did (one line, with its fix).
  std::map<std::size_t, std::string> failed_entries;
  // `entry`: the inventory entry measured (none for the gap probe), whose failure is noted with
  // the model and the layer, and kept in failed_entries.
  auto measure_one = [&](const std::string& signature, const std::string& autocast, const std::string& cache,
                         std::optional<std::size_t> entry = std::nullopt) -> std::optional<nlohmann::json> {
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
      const bool rebuilding =
          dynamic_cast<const ReplayError*>(&e) != nullptr || dynamic_cast<const std::invalid_argument*>(&e) != nullptr;
      std::string why = one_line(e.what());
      if (!entry) {
        notes.failed(why.rfind(signature, 0) == 0 ? why : fmt::format("{}: {}", signature, why));
        return std::nullopt;
      }
      // The replay's errors begin with the call (or its name) already: said once, by failure_line.
      const InventoryEntry& en = report.inventory.entries[*entry];
      for (const std::string& prefix : {en.signature() + ": ", en.display_name() + ": "})
        if (why.rfind(prefix, 0) == 0) {
          why.erase(0, prefix.size());
          break;
        }
      const std::string fix = fix_for(why, en.signature(), rebuilding);
      notes.failed(failure_line(report.inventory, en, why, fix));
      failed_entries[*entry] = fmt::format("{}; fix: {}", why, fix);
      return std::nullopt;
    }
  };

  // Each entry's inputs as the model reads them (auto), or all as asked.
  auto cache_mode_of = [&](const InventoryEntry& e) { return o.cache == "auto" ? e.cache_mode() : o.cache; };
  // A call no row matches exactly: the newest row of the same operator and overload whose
  // arguments differ only in floating-point scalar values (AdamW's step size changes every step;
  // core/predict/float_scalar_match.h says why the kernel's work stays the same, and for which
  // operators it does not). The stored row's arguments, or nothing.
  struct StoredRow {
    Database::StoredCall row;
    bool read = false;                          // its arguments parsed (on first use)
    std::optional<std::vector<NamedArg>> args;  // none: they do not read back (an older opcost's)
  };
  std::map<std::string, std::vector<StoredRow>> rows_by_op;  // by operator, overload and cache mode
  auto lookup_ignoring_floats = [&](const InventoryEntry& e,
                                    const std::string& cache) -> std::optional<std::pair<nlohmann::json, std::string>> {
    if (!db || float_scalars_may_change_work(e.op)) return std::nullopt;
    std::optional<OpCall> call;
    try {
      call = parse_call_line(e.signature(), "inventory");
    } catch (const std::exception&) {
      return std::nullopt;  // measure_one says why, with its layer
    }
    if (!has_float_scalars(call->args)) return std::nullopt;
    auto [at, fresh] = rows_by_op.try_emplace(fmt::format("{}\n{}\n{}", e.op, e.overload, cache));
    std::vector<StoredRow>& rows = at->second;
    if (fresh)
      for (auto& row : db->calls_of(Database::Key::of(e.op, e.overload, "", env.device_name, cache, inv.autocast),
                                    kMaxRowsComparedPerOp))
        rows.push_back({std::move(row)});
    for (StoredRow& r : rows) {
      if (!r.read) {
        r.read = true;
        try {
          r.args = parse_call_line(fmt::format("{} {}", e.display_name(), r.row.args), "database").args;
        } catch (const std::exception&) {}
      }
      if (!r.args || !same_but_float_scalars(call->args, *r.args)) continue;
      if (auto doc = db->get(r.row.id)) return std::pair{*doc, r.row.args};
    }
    return std::nullopt;
  };
  // Costs already in the database.
  std::map<std::size_t, OpCost>& costs = report.costs;
  for (std::size_t i = 0; i < inv.entries.size(); ++i) {
    const auto& e = inv.entries[i];
    if (auto doc = lookup(e.op, e.overload, e.args, inv.autocast, cache_mode_of(e))) {
      costs[i] = op_cost_from_document(*doc, on_gpu);
    } else if (auto near = lookup_ignoring_floats(e, cache_mode_of(e))) {
      costs[i] = op_cost_from_document(near->first, on_gpu);
      costs[i].matched_args = near->second;
    }
  }
  PredictionInputs& pin = report.inputs;
  pin.on_gpu = on_gpu;
  pin.energy_off = !o.op_config.energy;  // --no-energy: said once, as the run's choice
  pin.sync_us = synchronize_latency_us(kind, index);
  pin.gpu_uuid = env.device_uuid;
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
    if (on_gpu && gap_doc && (*gap_doc)["power_W"]["average"].is_number()) {
      pin.gap_power_W = (*gap_doc)["power_W"]["average"].get<double>();
      // The average power comes from the same counter windows as the energy per call: the
      // same relative interval.
      const OpCost probe = op_cost_from_document(*gap_doc, true);
      if (probe.energy_mJ && *probe.energy_mJ > 0)
        pin.gap_power_ci_W = *pin.gap_power_W * probe.energy_ci_mJ.value_or(0) / *probe.energy_mJ;
    } else if (on_gpu && gap_doc)  // measured, but without energy (a budget too short, NVML missing)
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
    step = step_measurement_of(m);
  };
  // `model` measures the step first (it decides when enough operators are measured);
  // `validate` measures it before and after the operator loops, and reports the drift.
  const bool any_missing = costs.size() < inv.entries.size();
  if (o.measure && (o.target > 0 || any_missing)) measure_step();
  const std::optional<double> before_ops = o.target > 0 || !step ? std::nullopt : std::optional(step->time_us);

  report.target = o.target;
  bool stopped_at_target = false;  // `model` stopped measuring because the target was reached
  // What the measured operators explain of the step, time and energy both.
  auto explains = [&](const Prediction& p, double share) {
    // The model's own host code is in every prediction: at least one operator must be.
    const bool time_ok = p.measured_calls > 0 && p.time_us >= share * step->time_us;
    const bool energy_ok = !step->energy_mJ || (p.energy_mJ && *p.energy_mJ >= share * *step->energy_mJ);
    return time_ok && energy_ok;
  };
  if (o.measure) {
    std::vector<std::size_t> todo;
    for (std::size_t i = 0; i < inv.entries.size(); ++i)
      if (!costs.count(i)) todo.push_back(i);
    std::vector<double> weight(inv.entries.size());
    for (std::size_t i : todo) {
      try {
        weight[i] = expected_weight(parse_call_line(inv.entries[i].signature(), "inventory"), inv.entries[i].count);
      } catch (const std::exception&) {
        weight[i] = 0;  // a signature that does not read back fails in measure_one, with its layer and fix
      }
    }
    // Heaviest first (core/predict/op_weight.h): `model` then needs fewer to reach its target.
    std::stable_sort(todo.begin(), todo.end(), [&](auto a, auto b) { return weight[a] > weight[b]; });
    std::size_t done = 0;
    bool short_loops = false;
    MeasureConfig short_config;
    for (std::size_t i : todo) {
      if (!stopped.empty()) {
        notes.say("stopped measuring: " + stopped);
        break;
      }
      const bool may_switch = !short_loops && o.short_loops_after < 1;
      const Prediction p = step && (may_switch || o.target > 0) ? predict(inv, costs, pin) : Prediction{};
      // 0: short loops from the first operator (explains() needs one measured to say yes).
      if (step && may_switch && (o.short_loops_after == 0 || explains(p, o.short_loops_after))) {
        short_loops = true;
        short_config = o.short_op_config();
        short_config.progress = notes.progress;
        runner().reconfigure(short_config);
        notes.say(o.short_loops_after == 0
                      ? std::string("every operator gets short loops (--short-loops-after 0)")
                      : fmt::format("measured operators explain {:.0f}% of the step: the rest get short loops",
                                    100 * o.short_loops_after));
      }
      if (o.target > 0 && step) {  // `model`: stop once the measured operators explain enough
        if (explains(p, o.target)) {
          notes.say(fmt::format("measured operators explain {:.1f}% of the step's time (target {:.0f}%); stopping",
                                100 * p.time_us / step->time_us, 100 * o.target));
          stopped_at_target = true;
          break;
        }
      }
      const auto& e = inv.entries[i];
      if (short_loops && step && o.ops_energy_rel_ci95 > 0) {
        // Its energy interval as its share of the step allows (see ops_energy_rel_ci95).
        MeasureConfig c = short_config;
        c.part_of = MeasureConfig::Whole{step->time_us, double(e.count), o.ops_energy_rel_ci95};
        c.energy_min_windows = std::min<std::size_t>(c.energy_min_windows, 2);
        runner().reconfigure(c);
      }
      notes.say(fmt::format("[{}/{}] {} ×{}", ++done, todo.size(), e.signature(), e.count));
      if (auto doc = measure_one(e.signature(), inv.autocast, cache_mode_of(e), i))
        costs[i] = op_cost_from_document(*doc, on_gpu);
    }
  }
  // validate: the prediction's host times and the step in the same rounds, just before the
  // final step measurement, so that the prediction sees the host as the step does.
  std::vector<HostRound> paired_host_rounds;  // validate: the rounds compared with their steps
  if (o.measure && o.target == 0 && !costs.empty()) {
    // The GPU's power between kernels moves with its temperature and clocks: measured again.
    if (on_gpu) {
      if (op_runner) op_runner->reconfigure(op_config);  // the probe's loop is never a short one
      notes.say("measuring the GPU's power between kernels again, beside the step");
      if (auto doc = measure_one(gap_probe, "", "warm")) gap_doc = doc;
      use_gap_power();
    }
    report.paired = paired_rounds(*model, report.inventory, paired_host_rounds, notes);
  }
  if (o.measure && (!step || before_ops)) measure_step();
  // The host can change speed within seconds: the same step timed before the operator loops
  // and inside the host pass shows whether the prediction's inputs saw the host the step saw.
  auto flag_drift = [&](double other_us, const char* when) {
    const double change = step->time_us / other_us - 1;
    if (std::abs(change) > kStepDriftFlag)
      step->flags.push_back(fmt::format("drift: the step took {:.0f} µs {} and {:.0f} µs in its timing loop ({:+.1f}%)",
                                        other_us, when, step->time_us, 100 * change));
  };
  if (step && report.paired && report.paired->rounds() > 0)
    flag_drift(median_of(report.paired->measured_us), "in the paired rounds");
  if (step && before_ops) {
    step->before_ops_time_us = before_ops;
    flag_drift(*before_ops, "before the operator loops");
  }
  // The step's energy loop runs just after its timing loop, and the host can change speed
  // between them: its energy then belongs to another step time (see pair_energy).
  if (step && step->energy_loop_time_us) flag_drift(*step->energy_loop_time_us, "in its energy loop");

  // Last, after every timed loop: the profiler's tracing must not touch a measurement. One
  // traced step serves the kernel check and the launch points.
  report.kernels_why = !on_gpu ? "kernels are traced on a GPU only" : o.check_kernels ? "" : "not asked for";
  report.launches_why = !on_gpu ? "launches are traced on a GPU only" : o.trace_launches ? "" : "not asked for";
  if (on_gpu && (o.check_kernels || o.trace_launches)) {
    std::optional<std::vector<CallKernels>> traced;
    try {
      notes.say("tracing the kernels of one step of the model");
      traced = trace_kernels([&] { model->step(); });
    } catch (const std::exception& e) {
      report.kernels_why = report.launches_why = e.what();
    }
    if (traced && o.check_kernels) {
      try {
        report.kernels = check_kernels(*traced, inv, device, notes);
      } catch (const std::exception& e) {
        report.kernels_why = e.what();
      }
    }
    if (traced && o.trace_launches) {
      try {
        report.launches = launch_profiles(inv, *traced);
        report.launches->untraced_latency_us = launch_latency_untraced_us(kind, index, pin.sync_us);
        pin.launches_by_entry = report.launches->by_entry;
        pin.launch_latency_us = report.launches->timeline_latency_us();
      } catch (const std::exception& e) {
        report.launches_why = e.what();
      }
    }
  }
  if (report.paired) predict_rounds(*report.paired, inv, paired_host_rounds, costs, pin);
  report.prediction = predict(inv, costs, pin);
  report.prediction.failed = failed_entries;
  report.prediction.unmeasured_by_choice = stopped_at_target;
  // Judged on the final prediction too: the last operator measured may be the one that meets it.
  report.target_met = o.target > 0 && step && explains(report.prediction, o.target);
  if (step && o.target == 0) pair_energy(report);
  return report;
}

double PairedRounds::error_median() const { return error_median(predicted_us, measured_us); }

double PairedRounds::error_median(const std::vector<double>& predicted_us, const std::vector<double>& measured_us) {
  std::vector<double> e;
  for (std::size_t i = 0; i < measured_us.size(); ++i) e.push_back(predicted_us[i] / measured_us[i] - 1);
  return e.empty() ? 0 : median_of(e);
}

std::pair<double, double> PairedRounds::error_range() const {
  double low = 0, high = 0;
  for (std::size_t i = 0; i < rounds(); ++i) {
    const double e = predicted_us[i] / measured_us[i] - 1;
    low = i ? std::min(low, e) : e;
    high = i ? std::max(high, e) : e;
  }
  return {low, high};
}

bool PredictReport::paired_is_headline() const {
  if (!paired || paired->rounds() == 0) return false;
  if (paired->host_drift > kStepDriftFlag) return true;
  if (!step) return false;
  for (const auto& f : step->flags)
    if (f.rfind("drift", 0) == 0) return true;
  return false;
}

namespace {

std::size_t placed_signatures(const LaunchProfiles& l) {
  return std::count_if(l.by_entry.begin(), l.by_entry.end(), [](const auto& p) { return !p.empty(); });
}

std::string launch_latency_text(const LaunchProfiles& l) {
  const std::string traced = l.latency_us ? fmt::format("{:.1f} µs traced (median of {} launches onto an idle GPU)",
                                                        *l.latency_us, l.idle_launches)
                                          : fmt::format("none traced ({} kernels launched onto an idle GPU, {} needed)",
                                                        l.idle_launches, LaunchProfiles::kMinIdleLaunches);
  if (!l.untraced_latency_us) return fmt::format("; launch latency {}", traced);
  return fmt::format("; launch latency {:.1f} µs without the profiler ({})", *l.untraced_latency_us, traced);
}

nlohmann::json launches_json(const PredictReport& r) {
  if (!r.launches) return {{"traced", false}, {"why", r.launches_why}};
  const LaunchProfiles& l = *r.launches;
  return {
      {"traced", true},
      {"signatures_placed", placed_signatures(l)},
      {"latency_us", l.timeline_latency_us()},
      {"latency_traced_us", l.latency_us ? nlohmann::json(*l.latency_us) : nlohmann::json(nullptr)},
      {"latency_untraced_us", l.untraced_latency_us ? nlohmann::json(*l.untraced_latency_us) : nlohmann::json(nullptr)},
      {"idle_launches", l.idle_launches},
      {"traced_step_us", l.traced_step_us},
      {"traced_step_timeline_us", l.traced_step_timeline_us}};
}

}  // namespace

nlohmann::json to_json(const PredictReport& r) {
  const Inventory& inv = r.inventory;
  const StepMeasurement* m = r.step ? &*r.step : nullptr;
  nlohmann::json j = to_json(r.prediction, inv, m);
  j["kernels"] =
      r.kernels ? to_json(*r.kernels, inv, r.costs) : nlohmann::json{{"checked", false}, {"why", r.kernels_why}};
  j["launches"] = launches_json(r);
  if (r.paired && r.paired->rounds() > 0) {
    const PairedRounds& pr = *r.paired;
    const auto [low, high] = pr.error_range();
    j["paired"] = {
        {"rounds", pr.rounds()},           {"seconds", pr.seconds},        {"time_error_median", pr.error_median()},
        {"time_error_low", low},           {"time_error_high", high},      {"host_drift", pr.host_drift},
        {"predicted_us", pr.predicted_us}, {"measured_us", pr.measured_us}};
    if (!pr.predicted_at_return_us.empty())
      j["paired"]["time_error_median_launched_at_return"] =
          PairedRounds::error_median(pr.predicted_at_return_us, pr.measured_us);
    if (j.contains("error")) j["error"]["headline"] = r.paired_is_headline() ? "paired" : "unpaired";
  }
  if (r.paired_energy) {
    const PairedEnergy& pe = *r.paired_energy;
    j["paired_energy"] = {{"step_us", pe.step_us},           {"host_scale", pe.host_scale},
                          {"predicted_mJ", pe.predicted_mJ}, {"predicted_ci95_mJ", pe.predicted_ci_mJ},
                          {"measured_mJ", pe.measured_mJ},   {"measured_ci95_mJ", pe.measured_ci_mJ},
                          {"energy_error", pe.error()}};
  } else if (!r.paired_energy_why.empty()) {
    j["paired_energy"] = {{"why", r.paired_energy_why}};
  }
  for (auto& row : j["ops"]) {
    const auto e = entry_of(inv, row["name"].get<std::string>());
    if (r.kernels && e && r.kernels->entries[*e]) row["kernels"] = to_json(*r.kernels->entries[*e]);
    // The operator's own loop, for a reader who checks how its energy entered the prediction.
    if (const auto c = e ? r.costs.find(*e) : r.costs.end(); c != r.costs.end() && c->second.energy_mJ)
      row["loop"] = {{"db_id", c->second.db_id},
                     {"gpu_us", c->second.gpu_us},
                     {"energy_mJ", *c->second.energy_mJ},
                     {"wall_us", c->second.loop_wall_us}};
  }
  j["sync_us"] = r.inputs.sync_us;
  j["gap_power_W"] = r.inputs.gap_power_W ? nlohmann::json(*r.inputs.gap_power_W) : nlohmann::json(nullptr);
  j["gpu"] = r.env.device_name;
  j["gpu_uuid"] = r.env.device_uuid;
  j["cache"] = r.cache;
  if (r.cache == "auto") {
    std::size_t cold = 0;
    for (const auto& e : inv.entries) cold += e.cold_args.empty() ? 0 : 1;
    j["cache_auto"] = inv.cache_bytes > 0
                          ? nlohmann::json{{"l2_bytes", inv.cache_bytes}, {"signatures_with_cold_inputs", cold}}
                          : nlohmann::json{{"why", r.cache_why}};
  }
  if (r.target > 0) j["target"] = {{"share", r.target}, {"met", r.target_met}};
  j["target_met"] = r.target_met;
  j["failures"] = r.failures;
  const ModelHostTimes host = model_host_times(inv);
  double in_calls = 0, before = 0;
  for (std::size_t i = 0; i < inv.sequence.size(); ++i) {
    in_calls += host.in_call_us[i];
    before += host.before_us[i];
  }
  const HostCalibration& cal = inv.host_calibration;
  j["host"] = {{"in_calls_us", in_calls},
               {"between_calls_us", before},
               {"after_last_call_us", host.after_last_us},
               {"plain_step_us", cal.plain_step_us},
               {"observed_step_us", cal.observed_step_us},
               {"observer_scale", cal.scale()},
               {"rounds", cal.rounds}};
  return j;
}

std::string to_text(const PredictReport& r) {
  const StepMeasurement* m = r.step ? &*r.step : nullptr;
  std::string out = to_table(r.prediction, r.inventory, m);
  out += r.kernels ? to_table(*r.kernels, r.inventory, r.costs)
                   : fmt::format("kernels: not checked ({})\n", r.kernels_why);
  if (r.launches) {
    const LaunchProfiles& l = *r.launches;
    out += fmt::format("launches:  placed within their calls as one traced step shows them ({} of {} signatures){}\n",
                       placed_signatures(l), l.by_entry.size(), launch_latency_text(l));
  } else {
    out += fmt::format("launches:  each call's kernels as it returns ({})\n", r.launches_why);
  }
  if (r.paired && r.paired->rounds() > 0) {
    const PairedRounds& pr = *r.paired;
    const auto [low, high] = pr.error_range();
    out += fmt::format(
        "paired:    time error {:+.2f}% (median of {} rounds, {:+.2f}% to {:+.2f}%), each round's prediction against "
        "its own steps; the host's speed moved {:.1f}% across the rounds{}\n",
        100 * pr.error_median(), pr.rounds(), 100 * low, 100 * high, 100 * pr.host_drift,
        r.paired_is_headline() ? ": the host drifted, so the paired error is the one to read" : "");
  }
  if (r.paired_energy)
    out += fmt::format(
        "paired:    energy error {:+.2f}%: predicted {:.4g} mJ ± {:.2g} mJ (95%) on a host as fast as in the step's "
        "energy loop ({:.0f} µs a step, host times ×{:.2f}), against the step's {:.4g} mJ ± {:.2g} mJ (95%)\n",
        100 * r.paired_energy->error(), r.paired_energy->predicted_mJ, r.paired_energy->predicted_ci_mJ,
        r.paired_energy->step_us, r.paired_energy->host_scale, r.paired_energy->measured_mJ,
        r.paired_energy->measured_ci_mJ);
  if (r.target > 0 && r.step)
    out += fmt::format("target: {:.0f}% of the step's {}: {}\n", 100 * r.target,
                       r.step->energy_mJ ? "time and energy" : "time",
                       r.target_met              ? "met"
                       : r.prediction.complete() ? "not met, with every operator measured (the rest of the step is "
                                                   "time the operator loops do not see)"
                                                 : "not met: measuring stopped before it was");
  if (r.inputs.on_gpu && r.inputs.gap_power_W)
    out += fmt::format("GPU power between kernels: {:.0f} W; host sync {:.1f} µs\n", *r.inputs.gap_power_W,
                       r.inputs.sync_us);
  return out;
}

}  // namespace opcost
