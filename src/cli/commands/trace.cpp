// `opcost trace MODEL` (or --import FILE): the options; the run is cli/trace_command.cpp's.
#include "cli/command.h"
#include "cli/commands/factories.h"
#include "cli/commands/model_options.h"
#include "cli/option_checks.h"
#include "cli/trace_command.h"
#include "workflow/measure.h"

namespace opcost {

namespace {

class TraceCommand : public Command {
 public:
  void add_options(CLI::App& cmd) override {
    add_model_options(cmd, o_.model);
    cmd.get_option("model")->required(false);  // --import reads a trace instead
    cmd.add_option("--import", o_.import_path,
                   "read a torch.profiler Chrome trace (.json or .json.gz) or an nsys SQLite export instead")
        ->check(CLI::ExistingFile);
    cmd.add_option("-o,--output", o_.output,
                   "trace file to write, for Perfetto: Chrome JSON (.json), or Perfetto's protobuf (.pftrace); "
                   "gzip-compressed when it ends in .gz");
    cmd.add_flag("--table", o_.table, "print the table too (the default when neither --output nor --html is named)");
    cmd.add_option("--group-by", o_.group_by, "table rows: op, shape (operator and input shapes) or layer")
        ->check(CLI::IsMember({"op", "shape", "layer"}))
        ->capture_default_str();
    cmd.add_option("--sort-by", o_.sort_by, "table column to sort by")
        ->check(CLI::IsMember({"gpu", "gpu_total", "gpu_self", "cpu", "cpu_total", "cpu_self", "energy", "energy_total",
                               "energy_self", "calls", "name"}))
        ->capture_default_str();
    cmd.add_option("--limit", o_.limit, "table rows to show (0: all)")->capture_default_str();
    cmd.add_flag("--json", o_.json, "the table as JSON");
    cmd.add_option("--html", o_.html, "the table as a self-contained HTML page (as opcost report does)");
    add_schedule_options(cmd);
    cmd.add_flag("--flops", o_.record.flops, "the profiler's FLOP estimates (matmuls, convolutions)");
    cmd.add_flag("--nvtx", o_.record.nvtx,
                 "NVTX ranges for every step and layer, so that an nsys capture of the same run lines up with them");
    cmd.add_flag("--energy", o_.energy,
                 "energy per operator and layer: first measure, as validate does, what the database lacks and the "
                 "untraced step (on a GPU)");
    cmd.add_option("--min-duration", o_.min_duration_us,
                   "leave calls and kernels shorter than this many microseconds out of the trace file")
        ->check(number_between(0, 1e6 * kMaxBudgetSeconds));
    cmd.add_option("--only-steps", o_.only_steps,
                   "only these steps (counted from 1: 3, or 2-4) in the trace file and the tables");
    cmd.add_option("--layers", o_.layers,
                   "only layers matching this regular expression, and what runs inside them, in the trace file");
  }

  int run(const CommandContext& context) override {
    o_.energy_options.db = context.db;
    o_.energy_options.db_create_parent = context.db_create_parent;
    return run_trace_command(o_);
  }

 private:
  // torch.profiler's schedule: which steps run untraced, traced and dropped, and kept.
  void add_schedule_options(CLI::App& cmd) {
    cmd.add_option("--wait", o_.record.schedule.wait, "steps run untraced first, in each cycle")
        ->check(whole_number_between(0, kMaxWholeNumber))
        ->capture_default_str();
    cmd.add_option("--warmup", o_.record.schedule.warmup, "steps traced and dropped, in each cycle")
        ->check(whole_number_between(0, kMaxWholeNumber))
        ->capture_default_str();
    cmd.add_option("--steps", o_.record.schedule.active, "steps kept, in each cycle")
        ->check(whole_number_between(1, kMaxWholeNumber))
        ->capture_default_str();
    cmd.add_option("--repeat", o_.record.schedule.repeat, "cycles of wait, warmup and kept steps")
        ->check(whole_number_between(1, kMaxWholeNumber))
        ->capture_default_str();
  }

  TraceCliOptions o_;
};

}  // namespace

std::unique_ptr<Command> make_trace_command() { return std::make_unique<TraceCommand>(); }

}  // namespace opcost
