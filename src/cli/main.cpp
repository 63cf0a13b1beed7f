// opcost: what every PyTorch operator costs, in time and energy.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/inventory/inventory.h"
#include "core/report/report.h"
#include "core/spec/spec_file.h"
#include "core/store/database.h"
#include "core/version.h"
#include "torch/models.h"
#include "torch/replay.h"
#include "torch/runner.h"

namespace {

using namespace opcost;

struct MeasureOptions {
  std::string op;
  std::vector<std::string> args;
  std::string spec;
  bool json = false;
  std::string db;
  bool no_store = false;
  bool resume = false;
  std::string device = "auto";
  std::string cache = "warm";
  uint64_t seed = 0;
  double max_time = 1.0;
  double target_ci = 0.01;
  double energy_max = 2.0;
  double energy_settle = 0.3;
  double energy_max_capped = 3.5;
  double energy_target = 0.02;
  bool no_energy = false;
  std::string power_trace;
  std::string autocast;
};

void write_power_trace(const std::string& path, const std::vector<Measurement>& ms) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& m : ms) {
    const double t0 = m.power_trace.empty() ? 0 : m.power_trace.front().t_s;
    auto series = [&](const std::vector<PowerSample>& v) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& s : v) out.push_back({s.t_s - t0, s.watts});
      return out;
    };
    out.push_back({{"op", m.display_name()}, {"args", m.args}, {"db_id", m.db_id},
                   {"power_W", series(m.power_trace)}, {"sm_clock_MHz", series(m.sm_clock_trace)},
                   {"columns", {"t_s", "value"}}});
  }
  std::ofstream f(path);
  if (!f) throw std::runtime_error(fmt::format("{}: cannot write the power trace", path));
  f << out.dump() << "\n";
}

int run_measure(const MeasureOptions& o) {
  std::vector<OpCall> calls;
  if (!o.spec.empty()) {
    if (!o.op.empty()) throw std::invalid_argument("give either an operator or --spec FILE, not both");
    calls = load_spec_file(o.spec);
  } else {
    if (o.op.empty())
      throw std::invalid_argument("name an operator (e.g. aten::relu self=f32[1024]) or give --spec FILE");
    calls.push_back(parse_call(o.op, o.args));
    calls.back().origin = "command line";
  }
  ReplayOptions ropt;
  ropt.device = o.device;
  ropt.seed = o.seed;
  ropt.cache_mode = o.cache;
  ropt.autocast = o.autocast;
  // Resolve the device once, from the first call, and say so when falling back to the CPU.
  MeasureConfig cfg;
  cfg.time.max_seconds = o.max_time;
  cfg.time.target_rel_ci95 = o.target_ci;
  cfg.energy = !o.no_energy;
  cfg.energy_max_s = o.energy_max;
  cfg.energy_settle_s = o.energy_settle;
  cfg.energy_max_capped_s = o.energy_max_capped;
  cfg.energy_target_rel_ci95 = o.energy_target;
  cfg.keep_power_trace = !o.power_trace.empty();

  std::unique_ptr<Database> db;
  if (!o.no_store) db = std::make_unique<Database>(o.db.empty() ? Database::default_path() : o.db);
  std::unique_ptr<Runner> runner;
  std::vector<Measurement> done;
  nlohmann::json json_out = nlohmann::json::array();
  std::size_t failed = 0, skipped = 0;
  const bool many = calls.size() > 1;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const OpCall& c = calls[i];
    if (many) fmt::print(stderr, "[{}/{}] {} {}\n", i + 1, calls.size(), c.display_name(), format_args(c.args));
    try {
      ReplayOptions call_opt = ropt;
      if (!c.autocast.empty()) {
        if (!ropt.autocast.empty() && canonical_dtype(ropt.autocast) != canonical_dtype(c.autocast))
          throw std::invalid_argument(fmt::format("the spec's autocast {} contradicts --autocast {}", c.autocast, ropt.autocast));
        call_opt.autocast = c.autocast;
      }
      auto prepared = PreparedCall::prepare(c, call_opt);
      if (!runner) {
        runner = std::make_unique<Runner>(prepared->device_kind(), prepared->device_index(), cfg);
        if (o.device == "auto" && prepared->device_kind() == "cpu")
          fmt::print(stderr, "opcost: no CUDA GPU found; measuring on the CPU ({})\n",
                     runner->environment().device_name);
        if (!runner->energy_unavailable_reason().empty())
          fmt::print(stderr, "opcost: energy unavailable: {}\n", runner->energy_unavailable_reason());
      }
      if (o.resume && db) {
        Database::Key key{prepared->op(), prepared->overload(),
                          stable_hash(prepared->op() + "." + prepared->overload() + " " + prepared->canonical_args()),
                          runner->environment().device_name, o.cache, prepared->autocast()};
        if (auto row = db->lookup(key)) {
          fmt::print(stderr, "  already measured (row {}), skipped (--resume)\n", (*row)["db_id"].get<int64_t>());
          ++skipped;
          continue;
        }
      }
      Measurement m = runner->measure(*prepared);
      if (db) m.db_id = db->insert(m);
      if (o.json) json_out.push_back(to_json(m));
      else fmt::print("{}", to_console(m));
      if (many && !o.json) fmt::print("\n");
      std::fflush(stdout);  // a long run shows (and a killed one keeps) each result as it lands
      m.power_trace.shrink_to_fit();
      done.push_back(std::move(m));
    } catch (const std::exception& e) {
      // One bad entry never loses the others: report it and go on.
      ++failed;
      const std::string where = c.origin.empty() ? "" : c.origin + ": ";
      fmt::print(stderr, "opcost: error: {}{}\n", where, e.what());
      if (o.json) json_out.push_back({{"op", c.display_name()}, {"args", format_args(c.args)}, {"error", e.what()}});
    }
  }
  if (o.json) fmt::print("{}\n", (many ? json_out : (json_out.empty() ? nlohmann::json() : json_out[0])).dump(2));
  if (!o.power_trace.empty()) write_power_trace(o.power_trace, done);
  if (many)
    fmt::print(stderr, "opcost: {} measured, {} skipped, {} failed{}\n", done.size(), skipped, failed,
               db ? fmt::format("; stored in {}", db->path()) : "");
  else if (db && !done.empty())
    fmt::print(stderr, "opcost: stored as row {} in {}\n", done.back().db_id, db->path());
  return failed ? 1 : 0;
}

int run_db_list(const std::string& path, const std::string& op, int limit) {
  Database db(path);
  auto rows = db.list(op, limit);
  fmt::print("{:>5}  {:<20} {:<28} {:>12} {:>8} {:>12} {:>8}  {}\n", "id", "created", "op", "time_us", "±%",
             "energy_mJ", "±%", "args / flags");
  for (const auto& r : rows) {
    const std::string name = r.overload.empty() ? r.op : r.op + "." + r.overload;
    fmt::print("{:>5}  {:<20} {:<28} {:>12.4g} {:>8.2f} {:>12} {:>8}  {}{}\n", r.id, r.created_at, name, r.time_us,
               100 * r.time_rel_ci, r.energy_mJ ? fmt::format("{:.4g}", *r.energy_mJ) : "n/a",
               r.energy_rel_ci ? fmt::format("{:.2f}", 100 * *r.energy_rel_ci) : "",
               r.args.size() > 60 ? r.args.substr(0, 57) + "..." : r.args,
               r.flags.empty() ? "" : "  [" + r.flags + "]");
  }
  fmt::print(stderr, "{} of {} rows in {}\n", rows.size(), db.count(), path);
  return 0;
}

struct InventoryOptions {
  ModelOptions model;
  bool json = false;
  std::string output;
};

int run_inventory(const InventoryOptions& o) {
  auto model = make_model(o.model.model, o.model.inputs, o.model.in);
  if (o.model.in.device == "auto" && model->device_kind() == "cpu")
    fmt::print(stderr, "opcost: no CUDA GPU found; running {} on the CPU\n", o.model.model);
  Inventory inv = take_inventory(*model, o.model);
  const std::string text = o.json ? to_json(inv).dump(2) + "\n" : to_table(inv);
  if (o.output.empty()) {
    fmt::print("{}", text);
  } else {
    std::ofstream f(o.output);
    if (!(f << text)) throw std::runtime_error(fmt::format("{}: cannot write", o.output));
    fmt::print(stderr, "opcost: inventory of {} written to {} ({} calls, {} unique signatures)\n", o.model.model, o.output,
               inv.sequence.size(), inv.entries.size());
  }
  return 0;
}

// The options every model command takes.
void add_model_options(CLI::App* cmd, ModelOptions& m) {
  cmd->add_option("model", m.model, "built-in model (see opcost models) or a TorchScript file")->required();
  cmd->add_option("--input", m.inputs, "TorchScript: one tensor per forward argument, e.g. f32[1,3,224,224] "
                                       "or i64[1,128]:range[0,50257]");
  cmd->add_option("--batch", m.in.batch, "batch size (built-in models)")->capture_default_str();
  cmd->add_option("--seq", m.in.seq, "tokens per sequence (distilgpt2)")->capture_default_str();
  cmd->add_option("--dtype", m.in.dtype, "model dtype: fp32, bf16 or fp16")->capture_default_str();
  cmd->add_option("--device", m.in.device, "auto (CUDA when present), cpu, cuda")->capture_default_str();
  cmd->add_flag("--train", m.in.train, "forward and backward; backward ops attributed to their forward layer");
  cmd->add_option("--autocast", m.in.autocast, "run the fp32 model under autocast to bf16 or fp16");
}

int run_models() {
  fmt::print("{:<12} {:>12}  {:<20} {}\n", "model", "parameters", "default input", "description");
  for (const auto& info : builtin_models()) {
    ModelInput in;
    in.device = "cpu";
    const auto m = make_builtin_model(info.name, in);
    fmt::print("{:<12} {:>12}  {:<20} {}\n", info.name, m->parameter_count(), info.default_input, info.description);
  }
  fmt::print("\nAny TorchScript file (torch.jit.save) works too: opcost inventory model.pt --input f32[1,3,224,224]\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"opcost: what every PyTorch operator costs on your GPU, in time and energy"};
  app.set_version_flag("--version", std::string("opcost ") + kOpcostVersion);
  app.require_subcommand(1);
  app.fallthrough();  // --db is accepted after the subcommand too
  std::string db_path;
  app.add_option("--db", db_path, "SQLite database (default: $OPCOST_DB or ~/.local/share/opcost/opcost.db)");

  MeasureOptions mo;
  auto* measure = app.add_subcommand("measure", "Replay one ATen operator in a loop and measure its time and energy");
  measure->add_option("op", mo.op, "operator, e.g. aten::conv2d or aten::add.Tensor");
  measure->add_option("args", mo.args, "arguments as name=value: input=f32[32,64,56,56] padding=[1,1]");
  measure->add_option("--spec", mo.spec, "YAML/JSON file listing many operators")->check(CLI::ExistingFile);
  measure->add_flag("--json", mo.json, "print JSON instead of text");
  measure->add_flag("--no-store", mo.no_store, "do not write to the database");
  measure->add_flag("--resume", mo.resume, "skip operators that already have an unflagged row");
  measure->add_option("--device", mo.device, "auto (CUDA when present), cpu, cuda, cuda:N")->capture_default_str();
  measure->add_option("--cache", mo.cache, "warm: reuse inputs; cold: rotate inputs over 256 MiB")
      ->check(CLI::IsMember({"warm", "cold"}))->capture_default_str();
  measure->add_option("--seed", mo.seed, "seed of the random input data")->capture_default_str();
  measure->add_option("--max-time", mo.max_time, "timing budget per operator, seconds")->capture_default_str();
  measure->add_option("--target-ci", mo.target_ci, "stop timing when the 95% CI half-width is this fraction of the mean")
      ->capture_default_str();
  measure->add_option("--energy-max-time", mo.energy_max, "energy loop budget per operator, seconds")->capture_default_str();
  measure->add_option("--energy-max-time-capped", mo.energy_max_capped,
                      "energy loop budget when the GPU sits at its power cap, seconds")->capture_default_str();
  measure->add_option("--energy-settle", mo.energy_settle, "seconds of looping discarded before energy windows")
      ->capture_default_str();
  measure->add_option("--energy-target-ci", mo.energy_target, "stop the energy loop at this relative 95% CI")
      ->capture_default_str();
  measure->add_flag("--no-energy", mo.no_energy, "skip the energy loop");
  measure->add_option("--power-trace", mo.power_trace, "write the sampled power trace (JSON) to this file");
  measure->add_option("--autocast", mo.autocast, "replay under autocast to this dtype (bf16, fp16), as an autocast model runs");

  auto* dbcmd = app.add_subcommand("db", "Inspect and export the measurement database");
  dbcmd->require_subcommand(1);
  dbcmd->fallthrough();
  std::string list_op;
  int list_limit = 50;
  auto* dblist = dbcmd->add_subcommand("list", "List the newest measurements");
  dblist->add_option("--op", list_op, "only operators whose name contains this");
  dblist->add_option("--limit", list_limit, "rows to show")->capture_default_str();
  int64_t show_id = 0;
  auto* dbshow = dbcmd->add_subcommand("show", "Show one measurement in full (JSON)");
  dbshow->add_option("id", show_id, "row id")->required();
  bool as_csv = false, as_json = false;
  std::string export_out;
  auto* dbexport = dbcmd->add_subcommand("export", "Export every row as CSV or JSON");
  auto* csv_flag = dbexport->add_flag("--csv", as_csv, "CSV, one row per measurement");
  auto* json_flag = dbexport->add_flag("--json", as_json, "JSON array of full result documents");
  csv_flag->excludes(json_flag);
  dbexport->add_option("-o,--output", export_out, "file to write (default: standard output)");

  InventoryOptions io;
  auto* inventory = app.add_subcommand("inventory", "Run a model once and list every ATen operator it calls, by layer");
  add_model_options(inventory, io.model);
  inventory->add_flag("--json", io.json, "write JSON (ops, layers, nested ops, the call sequence)");
  inventory->add_option("-o,--output", io.output, "file to write (default: standard output)");

  // predict / validate / model share their options; each sets what it measures.
  PredictOptions po;
  struct Budgets {
    double op_time, op_energy, op_energy_capped, step_time;
    bool no_energy = false;
  };
  // `model` measures many operators to reach its target: shorter loops by default (the
  // benchmark's budgets, which keep the GPU-bound predictions within a few percent).
  Budgets validate_budgets{1.0, 2.0, 3.5, 3.0}, model_budgets{0.5, 1.0, 1.5, 3.0};
  auto add_predict = [&](const char* name, const char* help) {
    auto* c = app.add_subcommand(name, help);
    add_model_options(c, po.model);
    c->add_flag("--json", po.json, "print JSON");
    c->add_option("--cache", po.cache, "operator measurements with warm inputs, or cold (rotated over 256 MiB)")
        ->check(CLI::IsMember({"warm", "cold"}))->capture_default_str();
    return c;
  };
  auto add_measuring = [&](CLI::App* c, Budgets& b) {
    c->add_option("--max-time", b.op_time, "timing budget per operator, seconds")->capture_default_str();
    c->add_option("--energy-max-time", b.op_energy, "energy loop budget per operator, seconds")->capture_default_str();
    c->add_option("--energy-max-time-capped", b.op_energy_capped,
                  "energy loop budget per operator at the power cap, seconds")->capture_default_str();
    c->add_option("--step-max-time", b.step_time, "timing budget for the whole step, seconds")->capture_default_str();
    c->add_flag("--no-energy", b.no_energy, "skip the energy loops");
  };
  auto* predict = add_predict("predict", "Predict a model step's time and energy from the database (lists what is missing)");
  auto* validate = add_predict("validate", "Measure what the database lacks and the whole step; compare with the prediction");
  add_measuring(validate, validate_budgets);
  auto* modelcmd = add_predict("model", "Measure operators in order of expected share until they explain --target of the step");
  add_measuring(modelcmd, model_budgets);
  modelcmd->add_option("--target", po.target, "share of the step's time and energy to explain")
      ->check(CLI::Range(0.01, 1.0))->default_val(0.9)->capture_default_str();
  auto* models = app.add_subcommand("models", "List the built-in models with their parameter counts and inputs");

  CLI11_PARSE(app, argc, argv);
  // --db is accepted before or after the subcommand.
  const std::string path = db_path.empty() ? Database::default_path() : db_path;
  mo.db = path;
  try {
    if (measure->parsed()) return run_measure(mo);
    if (inventory->parsed()) return run_inventory(io);
    if (predict->parsed() || validate->parsed() || modelcmd->parsed()) {
      po.db = path;
      po.measure = !predict->parsed();
      if (!modelcmd->parsed()) po.target = 0;
      const Budgets& b = modelcmd->parsed() ? model_budgets : validate_budgets;
      for (MeasureConfig* c : {&po.op_config, &po.step_config}) c->energy = !b.no_energy;
      po.op_config.time.max_seconds = b.op_time;
      po.op_config.energy_max_s = b.op_energy;
      po.op_config.energy_max_capped_s = b.op_energy_capped;
      po.step_config.synchronous_calls = true;
      po.step_config.time.max_seconds = b.step_time;
      return run_predict(po);
    }
    if (models->parsed()) return run_models();
    if (dblist->parsed()) return run_db_list(path, list_op, list_limit);
    if (dbshow->parsed()) {
      Database db(path);
      auto row = db.get(show_id);
      if (!row) {
        fmt::print(stderr, "opcost: no row {} in {} (see `opcost db list`)\n", show_id, path);
        return 1;
      }
      fmt::print("{}\n", row->dump(2));
      return 0;
    }
    if (dbexport->parsed()) {
      if (!as_csv && !as_json) throw std::invalid_argument("db export needs --csv or --json");
      Database db(path);
      std::ofstream file;
      if (!export_out.empty()) {
        file.open(export_out);
        if (!file) throw std::runtime_error(fmt::format("{}: cannot write", export_out));
      }
      std::ostream& out = export_out.empty() ? std::cout : file;
      if (as_csv) db.export_csv(out);
      else db.export_json(out);
      return 0;
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "opcost: error: {}\n", e.what());
    return 2;
  }
  return 0;
}
