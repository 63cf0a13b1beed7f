// predict / validate / model: a model step's time and energy from the operator database,
// checked against a measurement of the whole step.
#include "workflow/predict.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

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
#include "workflow/options.h"
#include "workflow/predict_estimates.h"
#include "workflow/predict_stages.h"
#include "workflow/predict_stages_database.h"
#include "workflow/session.h"

namespace opcost {

namespace {
// The short loops' warm-up, least timing and sample length (PredictOptions::short_op_config).
constexpr double kShortWarmupS = 0.005;
constexpr double kShortTimingMinS = 0.005;
constexpr double kShortSampleS = 0.0005;
}  // namespace

// The presets are data in the options registry (workflow/options.cpp): one place for them.
PredictOptions PredictOptions::predict_only() { return predict_preset(kPredictCommand); }

PredictOptions PredictOptions::validate() { return predict_preset(kValidateCommand); }

PredictOptions PredictOptions::model_to(double target) {
  PredictOptions o = predict_preset(kModelCommand);
  if (target != o.target) apply_option(o, "target", target);
  return o;
}

void PredictOptions::check() const { check_options(*this); }

MeasureConfig PredictOptions::short_op_config() const {
  // Each operator's interval may be several times the step's: n operators' independent
  // errors add in quadrature, so the step's interval is about theirs / √n.
  MeasureConfig c = op_config;
  c.time.max_seconds = op_config.time.max_seconds / 5;
  c.time.target_rel_ci95 = std::max(op_config.time.target_rel_ci95, 0.02);
  // The first ten calls warm an operator up (they pick its kernels; the warm-up runs at least
  // ten), and ten samples reach 2% for nearly every operator (the H100's resnet50 b32: 0.04–0.9%
  // after the 0.05 s minimum, with samples of a millisecond). Samples of half a millisecond and
  // 5 ms of warm-up and timing: against 20 ms and samples of a millisecond, with a view's shorter
  // loops (host_time_loop.cpp), DenseNet-121's training step validated in 96.2 s instead of
  // 115.1 s on one H100 (bench/results/2026-11-27-h100-short-timing/).
  c.warmup_s = std::min(op_config.warmup_s, kShortWarmupS);
  c.time.min_seconds = std::min(op_config.time.min_seconds, kShortTimingMinS);
  c.target_sample_s = std::min(op_config.target_sample_s, kShortSampleS);
  c.time_in_energy_settle = c.energy;
  c.energy_settle_s = std::min(op_config.energy_settle_s, 0.15);
  c.energy_min_windows = std::min<std::size_t>(op_config.energy_min_windows, 3);
  c.energy_target_rel_ci95 = std::max(op_config.energy_target_rel_ci95, 0.05);
  c.energy_max_s = op_config.energy_max_s / 2;
  c.energy_max_capped_s = op_config.energy_max_capped_s / 2;
  return c;
}

namespace {

std::optional<std::size_t> entry_of(const Inventory& inv, const std::string& row_name) {
  for (std::size_t e = 0; e < inv.entries.size(); ++e)
    if (inv.entries[e].row_name() == row_name) return e;
  return std::nullopt;
}

// The model's side of the stages (predict_stages.h): a RunnableModel on its device.
class TorchModelSteps final : public ModelSteps {
 public:
  TorchModelSteps(RunnableModel& model, const ModelInput& in) : model_(model), in_(in) {}
  Measurement measure_step(const MeasureConfig& config) override {
    Runner runner(model_.device_kind(), model_.device_index(), config);
    ModelCall call(model_, in_);
    return runner.measure(call);
  }
  HostRound time_host_round() override { return opcost::time_host_round(model_); }
  TracedStep trace_step() override {
    const CompiledKernelWatch watch(model_);  // generated kernels' launches are calls, as in the inventory
    uint64_t untied_ns = 0;
    TracedStep t;
    t.calls = trace_kernels([&] { model_.step(); }, &untied_ns);
    t.untied_device_us = double(untied_ns) * 1e-3;
    return t;
  }
  // Each signature replayed alone, as `measure` replays it. One that does not read back has no
  // kernels to compare (its measurement failed already, named with its layer).
  std::vector<std::optional<std::vector<std::string>>> kernels_alone(const Inventory& inv) override {
    std::vector<OpCall> calls;
    std::vector<std::size_t> entry_of_call;
    for (std::size_t i = 0; i < inv.entries.size(); ++i) {
      try {
        calls.push_back(parse_call_line(inv.entries[i].signature(), "inventory"));
        entry_of_call.push_back(i);
      } catch (const std::exception&) {}
    }
    ReplayOptions ro;
    ro.device = device_of(model_);
    ro.autocast = inv.autocast;
    auto replayed = isolation_kernels(calls, ro);
    std::vector<std::optional<std::vector<std::string>>> by_entry(inv.entries.size());
    for (std::size_t k = 0; k < entry_of_call.size(); ++k) by_entry[entry_of_call[k]] = std::move(replayed[k]);
    return by_entry;
  }
  std::optional<double> untraced_launch_latency_us(double sync_us) override {
    return launch_latency_untraced_us(model_.device_kind(), model_.device_index(), sync_us);
  }
  // Every stage works on the model's device, with its index: replay, NVML, look-ups.
  static std::string device_of(const RunnableModel& m) {
    return m.device_kind() == "cuda" ? fmt::format("cuda:{}", m.device_index()) : "cpu";
  }

 private:
  RunnableModel& model_;
  const ModelInput& in_;
};

// predict only reads: it never creates a database, and a missing one is an empty one.
void open_database(std::optional<Database>& db, const PredictOptions& o, const Notes& notes) {
  if (o.measure)
    db.emplace(o.db, Database::Access::kReadWrite, o.db_create_parent);
  else if (Database::exists(o.db))
    db.emplace(o.db, Database::Access::kReadOnly);
  else
    notes.say(fmt::format("no database at {} yet: nothing is measured (run `opcost validate` to measure)",
                          display_location(o.db)));
}

}  // namespace

PredictReport run_predict(const PredictOptions& o, const Notes& notes) {
  o.check();  // before the model is made
  auto model = make_model(o.model.model, o.model.inputs, o.model.in);
  return run_predict(o, *model, notes);
}

PredictReport run_predict(const PredictOptions& o, RunnableModel& model, const Notes& notes) {
  o.check();
  const std::string kind = model.device_kind();
  const int index = model.device_index();
  const PredictContext ctx{o, kind == "cuda", TorchModelSteps::device_of(model), notes};
  if (o.model.in.device == "auto" && !ctx.on_gpu)
    notes.say(fmt::format("no CUDA GPU found; predicting {} on the CPU", o.model.model));
  PredictReport report;
  report.settings = settings_of(o);
  report.cache = o.cache;
  const std::uint64_t cache_bytes =
      o.cache == "auto" ? cache_bytes_to_class(model, o.cache_bytes, &report.cache_why) : 0;
  report.inventory = take_inventory(model, o.model, 8, cache_bytes);
  report.env = describe_environment(kind, index);
  std::optional<Database> db;
  open_database(db, o, notes);
  PredictionInputs& pin = report.inputs;
  pin.on_gpu = ctx.on_gpu;
  pin.energy_off = !o.op_config.energy;  // --no-energy: said once, as the run's choice
  pin.sync_us = synchronize_latency_us(kind, index);
  pin.gpu_uuid = report.env.device_uuid;
  DatabaseCosts database_costs(db ? &*db : nullptr, report.env.device_name);
  // --estimate: what the database lacks, the cost model estimates (marked; never stored).
  std::optional<CostModel> cost_model;
  std::optional<EstimatingCosts> estimating;
  if (o.estimate) {
    cost_model = cost_model_for(o, db ? &*db : nullptr, report.env.device_name);
    estimating.emplace(database_costs, *cost_model, report.env.device_name);
  }
  StoredCosts& stored = estimating ? static_cast<StoredCosts&>(*estimating) : database_costs;
  SessionOptions so;
  so.config = o.op_config;
  MeasuringSession session(db ? &*db : nullptr, so, notes);
  TorchModelSteps steps(model, o.model.in);
  run_predict_stages(ctx, report, stored, session, steps);
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
  // The settings it ran with, by the options registry's names (as a stored measurement's).
  j["settings"] = nlohmann::json::object();
  for (const auto& [name, value] : r.settings) j["settings"][name] = value;
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
    out += fmt::format(
        "target: {:.0f}% of the step's {}: {}\n", 100 * r.target, r.step->energy_mJ ? "time and energy" : "time",
        r.target_met                   ? "met"
        : r.prediction.missing.empty() ? "not met, with every operator measured (the rest of the step is "
                                         "time the operator loops do not see)"
                                       : "not met: measuring stopped before it was");
  if (r.inputs.on_gpu && r.inputs.gap_power_W)
    out += fmt::format("GPU power between kernels: {:.0f} W; host sync {:.1f} µs\n", *r.inputs.gap_power_W,
                       r.inputs.sync_us);
  return out;
}

}  // namespace opcost
