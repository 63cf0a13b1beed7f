// opcost: what every PyTorch operator costs, in time and energy.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/option_checks.h"
#include "cli/parquet_export.h"
#include "cli/sweep_command.h"
#include "cli/trace_command.h"
#include "core/io/atomic_output_file.h"
#include "core/io/output_file.h"
#include "core/report/progress.h"
#include "core/report/report.h"
#include "core/spec/spec_file.h"
#include "core/store/database.h"
#include "core/store/database_copy.h"
#include "core/store/dataset_export.h"
#include "core/text/text.h"
#include "core/version.h"
#include "torch/models.h"
#include "torch/replay.h"
#include "torch/runner.h"
#include "workflow/measure.h"

namespace {

using namespace opcost;

constexpr long long kMaxWhole = 2147483647;  // counts and sizes: what an int holds

// What `opcost measure` takes beyond the workflow's options.
struct MeasureCliOptions {
  std::string op;
  std::vector<std::string> args;
  std::string spec;
  bool dry_run = false;  // list the calls and the device time they may take; measure nothing
  bool json = false;
  std::string power_trace;
  MeasureOptions measure;  // the workflow's, with its defaults
};

// Messages quote what they were given; however large that was, an error stays a few lines.
constexpr std::size_t kMaxErrorChars = 2000;

void error(const std::string& what) {
  fmt::print(stderr, "opcost: error: {}\n", user_message(elide(what, kMaxErrorChars)));
}

// Writes the power samples of every measurement; says why when there are none to write.
void write_power_trace(const std::string& path, const std::vector<Measurement>& ms, const std::string& energy_why) {
  nlohmann::json out = nlohmann::json::array();
  std::size_t samples = 0;
  for (const auto& m : ms) {
    const double t0 = m.power_trace.empty() ? 0 : m.power_trace.front().t_s;
    auto series = [&](const std::vector<PowerSample>& v) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& s : v) out.push_back({s.t_s - t0, s.watts});
      return out;
    };
    samples += m.power_trace.size();
    out.push_back({{"op", m.display_name()},
                   {"args", m.args},
                   {"db_id", m.db_id},
                   {"power_W", series(m.power_trace)},
                   {"sm_clock_MHz", series(m.sm_clock_trace)},
                   {"columns", {"t_s", "value"}}});
  }
  if (samples == 0) {
    fmt::print(stderr, "opcost: --power-trace {}: not written: no power samples were taken ({})\n", path,
               energy_why.empty() ? "the energy probe gives no power readings on this device" : energy_why);
    return;
  }
  write_file_atomically(path, out.dump() + "\n");
}

int run_measure(const MeasureCliOptions& o) {
  std::vector<OpCall> calls;
  std::vector<std::string> bad;  // entries that did not parse: reported with the rest
  if (!o.op.empty() && !o.spec.empty()) throw std::invalid_argument("give one of: an operator or --spec FILE");
  check_output_not_input(o.power_trace, "--power-trace", {{o.spec, "the spec file"}, {o.measure.db, "the database"}});
  if (!o.spec.empty()) {
    SpecEntries entries = load_spec_file(o.spec);
    calls = std::move(entries.calls);
    bad = std::move(entries.errors);
  } else {
    if (o.op.empty())
      throw std::invalid_argument("name an operator (e.g. aten::relu self=f32[1024]) or give --spec FILE");
    calls.push_back(parse_call(o.op, o.args));
    calls.back().origin = "command line";
  }
  check_measure_config(o.measure.config);
  if (o.dry_run) {
    const double most_s = measurement_budget_s(o.measure.config, o.measure.config.energy);
    for (const auto& call : calls) fmt::print("{} {}\n", call.display_name(), format_args(call.args));
    const std::string& device = o.measure.replay.device;
    const bool on_gpu = device != "cpu" && (device != "auto" || cuda_device_count() > 0);
    fmt::print(stderr, "opcost: --dry-run: {} calls, nothing measured; at most about {:.0f} {} at these budgets\n",
               calls.size(), most_s * double(calls.size()), on_gpu ? "GPU-seconds" : "seconds of the CPU");
    return bad.empty() ? kExitSuccess : kExitBadInput;
  }
  MeasureOptions mo = o.measure;
  mo.config.keep_power_trace = !o.power_trace.empty();
  const bool many = calls.size() + bad.size() > 1;
  const Notes notes = Notes::to_stderr();
  nlohmann::json json_out = nlohmann::json::array();
  MeasureEvents events;
  const auto run_start = std::chrono::steady_clock::now();
  events.starting = [&](std::size_t i, std::size_t n, const OpCall& c) {
    if (!many) return;
    // After the first call, the time so far and what is left at the pace so far.
    const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
    const std::string pace = i == 0 ? ""
                                    : fmt::format("  ({} in, about {} left)", format_duration(elapsed_s),
                                                  format_duration(elapsed_s / double(i) * double(n - i)));
    fmt::print(stderr, "[{}/{}] {} {}{}\n", i + 1, n, c.display_name(), format_args(c.args), pace);
  };
  events.done = [&](const MeasureOutcome& r) {
    if (r.kind == MeasureOutcome::Kind::kSkipped) {
      fmt::print(stderr, "  already measured (row {}), skipped (--resume)\n", r.existing_row);
      return;
    }
    if (!r.measurement) {
      notes.failed(r.error);
      if (o.json && r.call)
        json_out.push_back(
            {{"op", r.call->display_name()}, {"args", format_args(r.call->args)}, {"error", user_message(r.error)}});
      return;
    }
    if (o.json) {
      json_out.push_back(to_json(*r.measurement));
      if (!r.not_stored.empty()) json_out.back()["not_stored"] = r.not_stored;
    } else {
      fmt::print("{}", to_console(*r.measurement));
      if (many) fmt::print("\n");
    }
    std::fflush(stdout);  // a long run shows (and a killed one keeps) each result as it lands
    if (!r.not_stored.empty())
      notes.failed(fmt::format("{} (the measurement above was printed but not stored)", r.not_stored));
  };
  const MeasureRun run = measure_calls(calls, bad, mo, notes, events);
  if (o.json) {
    const nlohmann::json doc = many ? json_out : (json_out.empty() ? nlohmann::json() : json_out[0]);
    if (!doc.is_null()) fmt::print("{}\n", doc.dump(2));
  }
  if (!o.power_trace.empty()) {
    std::vector<Measurement> done;
    for (const auto& r : run.outcomes)
      if (r.measurement) done.push_back(*r.measurement);
    write_power_trace(o.power_trace, done, run.energy_why);
  }
  if (!run.stopped.empty())
    fmt::print(stderr, "opcost: stopped: nothing more can be stored; {} entries were not measured\n", run.not_reached);
  using Kind = MeasureOutcome::Kind;
  const std::size_t measured = run.count(Kind::kMeasured), skipped = run.count(Kind::kSkipped),
                    bad_input = run.count(Kind::kBadInput), failed = run.count(Kind::kFailed);
  const bool stored = mo.store && measured + failed + skipped > 0;
  if (many) {
    fmt::print(stderr, "opcost: {} measured, {} skipped, {} failed{}{}\n", measured, skipped, failed + bad_input,
               bad_input ? fmt::format(" ({} bad input)", bad_input) : "",
               stored ? fmt::format("; stored in {}", display_location(mo.db)) : "");
  } else if (mo.store && measured == 1) {
    fmt::print(stderr, "opcost: stored as row {} in {}\n", run.outcomes.back().measurement->db_id,
               display_location(mo.db));
  }
  if (failed) return kExitMeasurementFailed;
  return bad_input ? kExitBadInput : kExitSuccess;
}

int run_db_list(const std::string& path, const std::string& op, int limit) {
  Database db(path, Database::Access::kReadOnly);
  auto rows = db.list(op, limit);
  fmt::print("{:>5}  {:<20} {:<28} {:>12} {:>8} {:>12} {:>8}  {}\n", "id", "created", "op", "time_us", "±%",
             "energy_mJ", "±%", "args / flags");
  for (const auto& r : rows) {
    const std::string name = r.overload.empty() ? r.op : r.op + "." + r.overload;
    fmt::print("{:>5}  {:<20} {:<28} {:>12.4g} {:>8} {:>12} {:>8}  {}{}\n", r.id, r.created_at, name, r.time_us,
               r.time_rel_ci ? fmt::format("{:.2f}", 100 * *r.time_rel_ci) : "n/a",
               r.energy_mJ ? fmt::format("{:.4g}", *r.energy_mJ) : "n/a",
               r.energy_rel_ci ? fmt::format("{:.2f}", 100 * *r.energy_rel_ci) : "", fit_label(r.args, 60),
               r.flags.empty() ? "" : "  [" + r.flags + "]");
  }
  fmt::print(stderr, "{} of {} rows in {}\n", rows.size(), db.count(), db.path());  // without its password
  return kExitSuccess;
}

struct InventoryOptions {
  ModelOptions model;
  bool json = false;
  std::string output;
  std::uint64_t cache_bytes = 0;  // 0: the GPU's L2
};

int run_inventory(const InventoryOptions& o) {
  check_output_not_input(o.output, "-o", {{o.model.model, "the model file"}});
  auto model = make_model(o.model.model, o.model.inputs, o.model.in);
  if (o.model.in.device == "auto" && model->device_kind() == "cpu")
    fmt::print(stderr, "opcost: no CUDA GPU found; running {} on the CPU\n", o.model.model);
  std::string not_classed_why;
  Inventory inv = take_inventory(*model, o.model, 8, cache_bytes_to_class(*model, o.cache_bytes, &not_classed_why));
  if (inv.cache_bytes == 0 && model->device_kind() == "cuda")
    fmt::print(stderr, "opcost: inputs not classed as read from L2 or memory: {}\n", not_classed_why);
  const std::string text = o.json ? to_json(inv).dump(2) + "\n" : to_table(inv);
  write_file_atomically(o.output, text);
  if (!o.output.empty())
    fmt::print(stderr, "opcost: inventory of {} written to {} ({} calls, {} unique signatures)\n", o.model.model,
               o.output, inv.sequence.size(), inv.entries.size());
  return kExitSuccess;
}

// The options every model command takes.
void add_model_options(CLI::App* cmd, ModelOptions& m) {
  cmd->add_option("model", m.model, "built-in model (see opcost models) or a TorchScript file")->required();
  cmd->add_option("--input", m.inputs,
                  "TorchScript: one tensor per forward argument, e.g. f32[1,3,224,224] "
                  "or i64[1,128]:range[0,50257]");
  cmd->add_option("--batch", m.in.batch, "batch size (built-in models)")
      ->check(whole_number_between(1, kMaxWhole))
      ->capture_default_str();
  cmd->add_option("--seq", m.in.seq, "tokens per sequence (distilgpt2)")
      ->check(whole_number_between(1, kMaxWhole))
      ->capture_default_str();
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
  return kExitSuccess;
}

// The subcommand chain a command line names (app, measure; app, db, list), as far as it goes.
std::vector<CLI::App*> command_chain(CLI::App& app, int argc, char** argv) {
  std::vector<CLI::App*> chain = {&app};
  for (int i = 1; i < argc; ++i) {
    const std::string tok = argv[i];
    if (tok.empty() || tok[0] == '-') continue;
    auto subs = chain.back()->get_subcommands({});
    auto it = std::find_if(subs.begin(), subs.end(), [&](CLI::App* s) { return s->get_name() == tok; });
    if (it != subs.end()) chain.push_back(*it);
  }
  return chain;
}

// "Did you mean" for a mistyped subcommand or option.
std::string parse_error_hint(CLI::App& app, int argc, char** argv) {
  const auto chain = command_chain(app, argc, argv);
  std::vector<std::string> options;
  for (CLI::App* level : chain)
    for (const CLI::Option* opt : level->get_options()) {
      for (const auto& l : opt->get_lnames()) options.push_back("--" + l);
      for (const auto& s : opt->get_snames()) options.push_back("-" + s);
    }
  for (int i = 1; i < argc; ++i) {
    std::string tok = argv[i];
    if (tok.rfind("--", 0) == 0) {
      tok = tok.substr(0, tok.find('='));
      if (std::find(options.begin(), options.end(), tok) != options.end()) continue;
      const auto near = closest(tok, options, 1);
      return fmt::format("unknown option '{}' for {}{}", printable(elide(tok, 40)),
                         chain.back()->get_name().empty() ? "opcost" : "opcost " + chain.back()->get_name(),
                         near.empty() ? "" : fmt::format(" (did you mean {}?)", near.front()));
    }
  }
  // A first word that is no command, where a command is required: the likeliest typo. (Where
  // a command may take a word of its own, `sweep FILE`, a word is no typo.)
  if (chain.back()->get_require_subcommand_min() > 0) {
    CLI::App* level = chain.back();
    std::vector<std::string> names, on_chain;
    for (CLI::App* s : level->get_subcommands({})) names.push_back(s->get_name());
    for (CLI::App* c : chain) on_chain.push_back(c->get_name());
    for (int i = 1; i < argc; ++i) {
      const std::string tok = argv[i];
      if (tok.empty() || tok[0] == '-' || std::find(names.begin(), names.end(), tok) != names.end() ||
          std::find(on_chain.begin(), on_chain.end(), tok) != on_chain.end())
        continue;
      if (i > 1 && std::string(argv[i - 1]) == "--db") continue;  // the value of an option
      const auto near = closest(tok, names, 1);
      return fmt::format("unknown command '{}'{}; the commands are: {}", printable(elide(tok, 40)),
                         near.empty() ? "" : fmt::format(" (did you mean {}?)", near.front()), fmt::join(names, ", "));
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"opcost: what every PyTorch operator costs on your GPU, in time and energy"};
  app.set_version_flag("--version", std::string("opcost ") + kOpcostVersion);
  app.require_subcommand(1);
  app.fallthrough();  // --db is accepted after the subcommand too
  app.footer(
      "Exit status: 0 success; 1 some measurements failed (the rest were measured and stored); 2 bad input; "
      "3 incomplete prediction (some operators unmeasured).");
  std::string db_path;
  auto* db_option = app.add_option("--db", db_path,
                                   "SQLite file, or postgresql://USER@HOST[:PORT]/DBNAME (default: $OPCOST_DB or "
                                   "~/.local/share/opcost/opcost.db)");

  MeasureCliOptions mo;
  MeasureConfig& mc = mo.measure.config;  // options bind to the workflow's, whose defaults show
  bool no_store = false, no_energy = false;
  // The loops' options, shared by measure and sweep (they bind to the same workflow options).
  auto add_loop_options = [&](CLI::App* c, MeasureOptions& m, bool& skip_energy) {
    MeasureConfig& cfg = m.config;
    ReplayOptions& mr = m.replay;
    c->add_option("--device", mr.device, "auto (CUDA when present), cpu, cuda, cuda:N")->capture_default_str();
    c->add_option("--cache", mr.cache_mode,
                  "warm: reuse inputs; cold: rotate inputs over 256 MiB; cold:ARG,...: rotate those arguments only "
                  "(an inventory spec's entries rotate the inputs the model reads from memory, unless cold)")
        ->check(
            [](const std::string& v) {
              return v == "warm" || v == "cold" || v.rfind("cold:", 0) == 0 ? std::string()
                                                                            : "use warm, cold or cold:ARG,...";
            },
            "warm|cold|cold:ARG,...")
        ->capture_default_str();
    c->add_option("--seed", mr.seed, "seed of the random input data")->capture_default_str();
    c->add_option("--max-time", cfg.time.max_seconds, "timing budget per operator, seconds")
        ->check(number_above(0, kMaxBudgetSeconds))
        ->capture_default_str();
    c->add_option("--target-ci", cfg.time.target_rel_ci95,
                  "stop timing when the 95% CI half-width is this fraction of the mean")
        ->check(number_above(0, 1))
        ->capture_default_str();
    c->add_option("--energy-max-time", cfg.energy_max_s, "energy loop budget per operator, seconds")
        ->check(number_above(0, kMaxBudgetSeconds))
        ->capture_default_str();
    c->add_option("--energy-max-time-capped", cfg.energy_max_capped_s,
                  "energy loop budget when the GPU sits at its power cap, seconds")
        ->check(number_above(0, kMaxBudgetSeconds))
        ->capture_default_str();
    c->add_option("--energy-settle", cfg.energy_settle_s, "seconds of looping discarded before energy windows")
        ->check(number_between(0, kMaxBudgetSeconds))
        ->capture_default_str();
    c->add_option("--energy-target-ci", cfg.energy_target_rel_ci95, "stop the energy loop at this relative 95% CI")
        ->check(number_above(0, 1))
        ->capture_default_str();
    c->add_flag("--no-energy", skip_energy, "skip the energy loop");
    c->add_option("--autocast", mr.autocast,
                  "replay under autocast to this dtype (bf16, fp16), as an autocast model runs");
  };
  auto* measure = app.add_subcommand("measure", "Replay one ATen operator in a loop and measure its time and energy");
  measure->add_option("op", mo.op, "operator, e.g. aten::conv2d or aten::add.Tensor");
  measure->add_option("args", mo.args, "arguments as name=value: input=f32[32,64,56,56] padding=[1,1]");
  measure->add_option("--spec", mo.spec, "YAML/JSON file listing many operators")->check(CLI::ExistingFile);
  measure->add_flag("--dry-run", mo.dry_run,
                    "list the calls and the time (on the GPU, or the CPU) they may take; measure nothing");
  measure->add_flag("--json", mo.json, "print JSON instead of text");
  measure->add_flag("--no-store", no_store, "do not write to the database");
  measure->add_flag("--resume", mo.measure.resume, "skip operators that already have an unflagged row");
  add_loop_options(measure, mo.measure, no_energy);
  measure->add_option("--power-trace", mo.power_trace, "write the sampled power trace (JSON) to this file");

  SweepCliOptions so;
  auto* sweep = app.add_subcommand("sweep",
                                   "Measure every item of a grid or a model list, resumably, with its state in the "
                                   "database (docs/sweeps.md)");
  sweep->fallthrough();
  sweep->add_option("file", so.file, "YAML sweep file: a grid or a model list")->check(CLI::ExistingFile);
  sweep->add_flag("--dry-run", so.dry_run, "list the items and the GPU time they may take; measure nothing");
  auto* force = sweep->add_flag("--force", so.force, "measure every item again, done or failed");
  sweep->add_flag("--retry-failed", so.retry_failed, "measure the failed items again")->excludes(force);
  sweep
      ->add_option("--progress-every", so.plain_every_s,
                   "seconds between progress lines when standard error is not a terminal")
      ->check(number_between(0, kMaxBudgetSeconds))
      ->capture_default_str();
  sweep
      ->add_option("--max-items", so.measure.max_sweep_items,
                   "the items the sweep file may make, counted before any is made (a larger grid is refused)")
      ->check(whole_number_between(1, 1'000'000'000))
      ->capture_default_str();
  sweep->add_option("--workers", so.workers, "worker processes at once: one per GPU (on the CPU they share it)")
      ->check(whole_number_between(1, 1024))
      ->capture_default_str();
  sweep
      ->add_option("--max-attempts", so.lease.max_attempts,
                   "workers that may die on one item (a crash, kill -9, a lost node) before it is failed")
      ->check(whole_number_between(1, 100))
      ->capture_default_str();
  sweep
      ->add_option("--lease", so.lease.seconds,
                   "seconds an item stays a worker's without its heartbeat; then another worker takes it (a "
                   "killed worker, a lost node)")
      ->check(number_between(1, kMaxBudgetSeconds))
      ->capture_default_str();
  auto* slurm = sweep->add_flag("--slurm", so.slurm,
                                "submit an sbatch job array of workers (one GPU each) against a PostgreSQL --db; "
                                "with --dry-run, print the script");
  sweep->add_option("--array", so.slurm_tasks, "--slurm: tasks in the job array, each one worker on one GPU")
      ->check(whole_number_between(1, 100000))
      ->needs(slurm)
      ->capture_default_str();
  sweep
      ->add_option("--sbatch-option", so.sbatch_options,
                   "--slurm: one more #SBATCH line, e.g. --sbatch-option=--partition=gpu (repeatable)")
      ->allow_extra_args(false)
      ->needs(slurm);
  add_loop_options(sweep, so.measure, so.no_energy);
  sweep->add_flag("--worker", so.worker)->group("");  // internal: run_sweep starts its workers so
  sweep->add_option("--sweep-name", so.sweep_name)->group("");
  sweep->add_option("--sweep-scope", so.sweep_scope)->group("");
  auto* sweep_status_cmd = sweep->add_subcommand("status", "Done, pending and failed items of a sweep (with reasons)");
  std::string status_file;
  sweep_status_cmd->add_option("file", status_file, "YAML sweep file")->required()->check(CLI::ExistingFile);

  auto* dbcmd = app.add_subcommand("db", "Inspect and export the measurement database");
  dbcmd->require_subcommand(1);
  dbcmd->fallthrough();
  std::string list_op;
  int list_limit = 50;
  auto* dblist = dbcmd->add_subcommand("list", "List the newest measurements");
  dblist->add_option("--op", list_op, "only operators whose name contains this");
  dblist->add_option("--limit", list_limit, "rows to show")
      ->check(whole_number_between(1, kMaxWhole))
      ->capture_default_str();
  int64_t show_id = 0;
  auto* dbshow = dbcmd->add_subcommand("show", "Show one measurement in full (JSON)");
  dbshow->add_option("id", show_id, "row id")->required();
  bool as_csv = false, as_json = false;
  std::string export_out, export_parquet_path, export_sweep;
  auto* dbexport = dbcmd->add_subcommand(
      "export", "Export every row as CSV, JSON or Parquet, with a sweep's axes as columns (docs/sweeps.md)");
  auto* csv_flag = dbexport->add_flag("--csv", as_csv, "CSV, one row per measurement");
  auto* json_flag = dbexport->add_flag("--json", as_json, "JSON array of full result documents");
  auto* parquet_option =
      dbexport->add_option("--parquet", export_parquet_path, "Parquet file to write (through pyarrow)");
  csv_flag->excludes(json_flag);
  parquet_option->excludes(csv_flag)->excludes(json_flag);
  dbexport->add_option("-o,--output", export_out, "file to write (default: standard output)");
  dbexport->add_option("--sweep", export_sweep, "only the rows this sweep measured");

  std::string copy_from, copy_to;
  auto* dbcopy = dbcmd->add_subcommand(
      "copy", "Copy every measurement and the sweeps' state into another database (SQLite or PostgreSQL)");
  dbcopy->add_option("from", copy_from, "the database to read: a SQLite file or a postgresql:// URL")->required();
  dbcopy->add_option("to", copy_to, "the database to add to (made if missing); rows there already are kept once")
      ->required();

  TraceCliOptions to;
  auto* trace = app.add_subcommand(
      "trace", "Trace a model's steps: every kernel tied to its operator and layer, as a Chrome trace and tables");
  add_model_options(trace, to.model);
  trace->get_option("model")->required(false);  // --import reads a trace instead
  trace
      ->add_option("--import", to.import_path,
                   "read a torch.profiler Chrome trace (.json or .json.gz) or an nsys SQLite export instead")
      ->check(CLI::ExistingFile);
  trace->add_option("-o,--output", to.output,
                    "trace file to write, for Perfetto: Chrome JSON (.json), or Perfetto's protobuf (.pftrace); "
                    "gzip-compressed when it ends in .gz");
  trace->add_flag("--table", to.table, "print the table too (the default when no --output is named)");
  trace->add_option("--group-by", to.group_by, "table rows: op, shape (operator and input shapes) or layer")
      ->check(CLI::IsMember({"op", "shape", "layer"}))
      ->capture_default_str();
  trace->add_option("--sort-by", to.sort_by, "table column to sort by")
      ->check(CLI::IsMember({"gpu", "gpu_total", "gpu_self", "cpu", "cpu_total", "cpu_self", "energy", "energy_total",
                             "energy_self", "calls", "name"}))
      ->capture_default_str();
  trace->add_option("--limit", to.limit, "table rows to show (0: all)")->capture_default_str();
  trace->add_flag("--json", to.json, "the table as JSON");
  trace->add_option("--wait", to.record.schedule.wait, "steps run untraced first, in each cycle")
      ->check(whole_number_between(0, kMaxWhole))
      ->capture_default_str();
  trace->add_option("--warmup", to.record.schedule.warmup, "steps traced and dropped, in each cycle")
      ->check(whole_number_between(0, kMaxWhole))
      ->capture_default_str();
  trace->add_option("--steps", to.record.schedule.active, "steps kept, in each cycle")
      ->check(whole_number_between(1, kMaxWhole))
      ->capture_default_str();
  trace->add_option("--repeat", to.record.schedule.repeat, "cycles of wait, warmup and kept steps")
      ->check(whole_number_between(1, kMaxWhole))
      ->capture_default_str();
  trace->add_flag("--flops", to.record.flops, "the profiler's FLOP estimates (matmuls, convolutions)");
  trace->add_flag("--nvtx", to.record.nvtx,
                  "NVTX ranges for every step and layer, so that an nsys capture of the same run lines up with them");
  trace->add_flag("--energy", to.energy,
                  "energy per operator and layer: first measure, as validate does, what the database lacks and the "
                  "untraced step (on a GPU)");
  trace
      ->add_option("--min-duration", to.min_duration_us,
                   "leave calls and kernels shorter than this many microseconds out of the trace file")
      ->check(number_between(0, 1e6 * kMaxBudgetSeconds));
  trace->add_option("--only-steps", to.only_steps,
                    "only these steps (counted from 1: 3, or 2-4) in the trace file and the tables");
  trace->add_option("--layers", to.layers,
                    "only layers matching this regular expression, and what runs inside them, in the trace file");

  InventoryOptions io;
  auto* inventory = app.add_subcommand("inventory", "Run a model once and list every ATen operator it calls, by layer");
  add_model_options(inventory, io.model);
  inventory->add_flag("--json", io.json, "write JSON (ops, layers, nested ops, the call sequence)");
  inventory->add_option("-o,--output", io.output, "file to write (default: standard output)");
  inventory
      ->add_option("--cache-bytes", io.cache_bytes,
                   "class each call's inputs as read from L2 or memory against this cache, as 50MiB or bytes "
                   "(default: the GPU's L2; on the CPU, none)")
      ->transform(CLI::AsSizeValue(false));

  // predict / validate / model share their options; each sets what it measures. The defaults
  // are the workflow library's (PredictOptions::validate(), ::model_to()).
  PredictOptions po;
  bool predict_json = false;
  struct Budgets {
    double op_time, op_energy, op_energy_capped, step_time, short_loops_after, energy_settle, ops_energy_ci;
    std::size_t energy_min_windows;
    bool no_energy = false;
  };
  auto budgets_of = [](const PredictOptions& d) {
    return Budgets{d.op_config.time.max_seconds,   d.op_config.energy_max_s,      d.op_config.energy_max_capped_s,
                   d.step_config.time.max_seconds, d.short_loops_after,           d.op_config.energy_settle_s,
                   d.ops_energy_rel_ci95,          d.op_config.energy_min_windows};
  };
  Budgets validate_budgets = budgets_of(PredictOptions::validate()),
          model_budgets = budgets_of(PredictOptions::model_to());
  auto add_predict = [&](const char* name, const char* help) {
    auto* c = app.add_subcommand(name, help);
    add_model_options(c, po.model);
    c->add_flag("--json", predict_json, "print JSON");
    c->add_option("--cache", po.cache,
                  "operator inputs as the model reads them: auto (a weight read once a step from memory, an "
                  "activation just written from L2; by the GPU's L2 size), warm (all reused), cold (all rotated "
                  "over 256 MiB)")
        ->check(CLI::IsMember({"auto", "warm", "cold"}))
        ->capture_default_str();
    c->add_option("--cache-bytes", po.cache_bytes,
                  "--cache auto: the cache the inputs are classed against, as 50MiB or bytes (default: the GPU's L2; "
                  "on the CPU, none: all warm)")
        ->transform(CLI::AsSizeValue(false));
    return c;
  };
  auto add_measuring = [&](CLI::App* c, Budgets& b) {
    c->add_option("--max-time", b.op_time, "timing budget per operator, seconds")
        ->check(number_above(0, kMaxBudgetSeconds))
        ->capture_default_str();
    c->add_option("--energy-max-time", b.op_energy, "energy loop budget per operator, seconds")
        ->check(number_above(0, kMaxBudgetSeconds))
        ->capture_default_str();
    c->add_option("--energy-max-time-capped", b.op_energy_capped,
                  "energy loop budget per operator at the power cap, seconds")
        ->check(number_above(0, kMaxBudgetSeconds))
        ->capture_default_str();
    c->add_option("--step-max-time", b.step_time, "timing budget for the whole step, seconds")
        ->check(number_above(0, kMaxBudgetSeconds))
        ->capture_default_str();
    c->add_flag("--no-energy", b.no_energy, "skip the energy loops");
    c->add_option("--energy-settle", b.energy_settle,
                  "seconds an operator's energy loop runs before its windows count (short loops: at most 0.15)")
        ->check(number_between(0, kMaxBudgetSeconds))
        ->capture_default_str();
    c->add_option("--energy-min-windows", b.energy_min_windows,
                  "counter periods an operator's energy loop spans at least (short loops: at most 3)")
        ->check(whole_number_between(2, 100))
        ->capture_default_str();
    c->add_option("--ops-energy-ci", b.ops_energy_ci,
                  "with short loops, the relative 95% interval the operators' energies may add to the step's "
                  "(each stops at its share's: a 1% operator at 10 times it; 0: each at 5%)")
        ->check(number_between(0, 1))
        ->capture_default_str();
    c->add_option("--short-loops-after", b.short_loops_after,
                  "once the measured operators explain this share of the step, measure the rest with short loops "
                  "(1: never)")
        ->check(number_between(0, 1))
        ->capture_default_str();
  };
  auto* predict =
      add_predict("predict", "Predict a model step's time and energy from the database (lists what is missing)");
  auto* validate =
      add_predict("validate", "Measure what the database lacks and the whole step; compare with the prediction");
  add_measuring(validate, validate_budgets);
  auto* modelcmd =
      add_predict("model", "Measure operators in order of expected share until they explain --target of the step");
  add_measuring(modelcmd, model_budgets);
  modelcmd->add_option("--target", po.target, "share of the step's time and energy to explain")
      ->check(number_between(0.01, 1))
      ->default_val(PredictOptions::model_to().target)
      ->capture_default_str();
  auto* models = app.add_subcommand("models", "List the built-in models with their parameter counts and inputs");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    const std::string hint = parse_error_hint(app, argc, argv);
    error(hint.empty() ? e.what() : hint);
    fmt::print(stderr, "Run with --help for the commands and options.\n");
    return kExitBadInput;
  }
  // --db is accepted before or after the subcommand. An empty one is a mistake (an unset
  // variable in a script), never a request for the default.
  if (db_option->count() > 0 && db_path.empty()) {
    error(fmt::format("--db: the path is empty; give a file, or leave --db out for {}",
                      display_location(Database::default_path())));
    return kExitBadInput;
  }
  const char* env_db = std::getenv("OPCOST_DB");
  // Only opcost's own default location gets its directories made; a path the user typed
  // (or put in $OPCOST_DB) must exist up to its file, so a typo creates nothing.
  const bool create_parent = db_path.empty() && !(env_db && *env_db);
  const std::string path = db_path.empty() ? Database::default_path() : db_path;
  mo.measure.db = path;
  mo.measure.db_create_parent = create_parent;
  mo.measure.store = !no_store;
  if (no_energy) mc.energy = false;
  int rc = kExitSuccess;
  try {
    if (sweep->parsed()) {
      so.measure.db = path;
      so.measure.db_create_parent = create_parent;
      if (so.no_energy) so.measure.config.energy = false;  // part of an item's key: runs and status alike
      if (sweep_status_cmd->parsed()) {
        so.file = status_file;
        rc = run_sweep_status(so);
      } else if (so.file.empty()) {
        throw std::invalid_argument("sweep: name a grid file (opcost sweep grid.yaml), or `opcost sweep status FILE`");
      } else {
        rc = run_sweep_command(so, std::vector<std::string>(argv, argv + argc));
      }
    } else if (measure->parsed()) {
      rc = run_measure(mo);
    } else if (inventory->parsed()) {
      rc = run_inventory(io);
    } else if (trace->parsed()) {
      to.energy_options.db = path;
      to.energy_options.db_create_parent = create_parent;
      rc = run_trace_command(to);
    } else if (predict->parsed() || validate->parsed() || modelcmd->parsed()) {
      po.db = path;
      po.db_create_parent = create_parent;
      po.measure = !predict->parsed();
      if (!modelcmd->parsed()) po.target = 0;
      const Budgets& b = modelcmd->parsed() ? model_budgets : validate_budgets;
      po.set_budgets(b.op_time, b.op_energy, b.op_energy_capped, b.step_time, b.no_energy);
      po.short_loops_after = b.short_loops_after;
      po.op_config.energy_settle_s = b.energy_settle;
      po.op_config.energy_min_windows = b.energy_min_windows;
      po.ops_energy_rel_ci95 = b.ops_energy_ci;
      const PredictReport report = run_predict(po, Notes::to_stderr());
      fmt::print("{}", predict_json ? to_json(report).dump(2) + "\n" : to_text(report));
      std::fflush(stdout);
      if (report.failures)
        rc = kExitMeasurementFailed;
      else
        rc = report.prediction.complete() || report.target_met ? kExitSuccess : kExitIncomplete;
    } else if (models->parsed()) {
      rc = run_models();
    } else if (dblist->parsed()) {
      rc = run_db_list(path, list_op, list_limit);
    } else if (dbcopy->parsed()) {
      check_output_not_input(copy_to, "db copy: TO", {{copy_from, "the database"}});
      const Database from(copy_from, Database::Access::kReadOnly);
      Database into(copy_to);
      ProgressLine line(stderr, 10);
      const CopyCounts c = copy_database(from, into, [&](std::size_t rows) {
        if (rows % 100 == 0) line.update(fmt::format("db copy: {} rows", rows));
      });
      line.clear();
      fmt::print(stderr,
                 "opcost: copied {} measurements from {} into {} ({} were there already), and the state of {} sweep "
                 "items ({} sweep memberships)\n",
                 c.rows_added, from.path(), into.path(), c.rows_present, c.items, c.memberships);
    } else if (dbshow->parsed()) {
      Database db(path, Database::Access::kReadOnly);
      auto row = db.get(show_id);
      if (!row) {
        error(fmt::format("no row {} in {} (see `opcost db list`)", show_id, db.path()));
        return kExitBadInput;
      }
      fmt::print("{}\n", row->dump(2));
    } else if (dbexport->parsed()) {
      if (!as_csv && !as_json && export_parquet_path.empty())
        throw std::invalid_argument("db export needs --csv, --json or --parquet FILE");
      // Before anything is opened: an export onto the database would truncate what it reads.
      check_output_not_input(export_out, "-o", {{path, "the database"}});
      check_output_not_input(export_parquet_path, "--parquet", {{path, "the database"}});
      Database db(path, Database::Access::kReadOnly);
      if (!export_parquet_path.empty()) {
        export_parquet(export_parquet_path,
                       [&](OutputFile& csv) { export_dataset(db, ExportFormat::kCsv, csv, export_sweep); });
        fmt::print(stderr, "opcost: written to {}\n", export_parquet_path);
      } else {
        AtomicOutputFile out(export_out);  // the old file stays whole until the export is
        export_dataset(db, as_csv ? ExportFormat::kCsv : ExportFormat::kJson, out.file(), export_sweep);
        out.commit();
        if (!export_out.empty()) fmt::print(stderr, "opcost: written to {}\n", export_out);
      }
    }
    check_stdout();
  } catch (const std::invalid_argument& e) {  // also a spec, model or argument that cannot run
    error(e.what());
    return kExitBadInput;
  } catch (const ReplayError& e) {
    error(e.what());
    return kExitBadInput;
  } catch (const DatabaseError& e) {  // a file that cannot be opened, written or used: fix the path
    error(e.what());
    return e.kind() == DatabaseError::Kind::kReadOnly || e.kind() == DatabaseError::Kind::kUnusable
               ? kExitBadInput
               : kExitMeasurementFailed;
  } catch (const std::exception& e) {
    // A model too large for the host (--batch 100000): what it needed and what there is, not
    // LibTorch's "[enforce fail at alloc_cpu.cpp]". The GPU's own error says as much already.
    if (const auto oom = host_allocation_failure(e.what())) {
      error(*oom + "; use a smaller --batch or --seq (or smaller --input shapes)");
      return kExitBadInput;
    }
    error(e.what());
    return kExitMeasurementFailed;
  }
  return rc;
}
