// `opcost measure`: one operator from the command line, or every entry of a spec file, each
// replayed in a loop and measured, printed as it lands and stored.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/commands/factories.h"
#include "cli/commands/registry_options.h"
#include "cli/exit_codes.h"
#include "core/io/atomic_output_file.h"
#include "core/io/output_file.h"
#include "core/spec/spec_file.h"
#include "core/store/database.h"
#include "core/text/text.h"
#include "torch/replay.h"
#include "torch/runner.h"
#include "workflow/measure.h"
#include "workflow/reporters/reporter.h"

namespace opcost {

namespace {

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

// "[3/10] aten::relu self=f32[4]  (2.0 s in, about 6.0 s left)": after the first call, the
// time so far and what is left at the pace so far.
std::string starting_line(std::size_t i, std::size_t n, const OpCall& c, double elapsed_s) {
  const std::string pace = i == 0 ? ""
                                  : fmt::format("  ({} in, about {} left)", format_duration(elapsed_s),
                                                format_duration(elapsed_s / double(i) * double(n - i)));
  return fmt::format("[{}/{}] {} {}{}\n", i + 1, n, c.display_name(), format_args(c.args), pace);
}

class MeasureCommand : public Command {
 public:
  void add_options(CLI::App& cmd) override {
    cmd.add_option("op", op_, "operator, e.g. aten::conv2d or aten::add.Tensor");
    cmd.add_option("args", args_, "arguments as name=value: input=f32[32,64,56,56] padding=[1,1]");
    cmd.add_option("--spec", spec_, "YAML/JSON file listing many operators")->check(CLI::ExistingFile);
    cmd.add_flag("--dry-run", dry_run_,
                 "list the calls and the time (on the GPU, or the CPU) they may take; measure nothing");
    cmd.add_flag("--json", json_, "print JSON instead of text");
    cmd.add_flag("--no-store", no_store_, "do not write to the database");
    cmd.add_flag("--resume", measure_.resume, "skip operators that already have an unflagged row");
    loops_.add(cmd, measure_option_specs(), kMeasureCommand, measure_);
    cmd.add_option("--power-trace", power_trace_, "write the sampled power trace (JSON) to this file");
  }

  int run(const CommandContext& context) override {
    measure_.db = context.db;
    measure_.db_create_parent = context.db_create_parent;
    measure_.store = !no_store_;
    loops_.apply(measure_);
    if (!op_.empty() && !spec_.empty()) throw std::invalid_argument("give one of: an operator or --spec FILE");
    check_output_not_input(power_trace_, "--power-trace", {{spec_, "the spec file"}, {measure_.db, "the database"}});
    read_calls();
    check_options(measure_);
    if (dry_run_) return dry_run();
    return measure();
  }

 private:
  void read_calls() {
    if (!spec_.empty()) {
      SpecEntries entries = load_spec_file(spec_);
      calls_ = std::move(entries.calls);
      bad_ = std::move(entries.errors);
      return;
    }
    if (op_.empty())
      throw std::invalid_argument("name an operator (e.g. aten::relu self=f32[1024]) or give --spec FILE");
    calls_.push_back(parse_call(op_, args_));
    calls_.back().origin = "command line";
  }

  int dry_run() const {
    const double most_s = measurement_budget_s(measure_.config, measure_.config.energy);
    for (const auto& call : calls_) fmt::print("{} {}\n", call.display_name(), format_args(call.args));
    const std::string& device = measure_.replay.device;
    const bool on_gpu = device != "cpu" && (device != "auto" || cuda_device_count() > 0);
    fmt::print(stderr, "opcost: --dry-run: {} calls, nothing measured; at most about {:.0f} {} at these budgets\n",
               calls_.size(), most_s * double(calls_.size()), on_gpu ? "GPU-seconds" : "seconds of the CPU");
    return bad_.empty() ? kExitSuccess : kExitBadInput;
  }

  int measure() {
    MeasureOptions mo = measure_;
    mo.config.keep_power_trace = !power_trace_.empty();
    const bool many = calls_.size() + bad_.size() > 1;
    const Notes notes = Notes::to_stderr();
    const auto reporter = make_reporter(json_ ? ReportFormat::kJson : ReportFormat::kText);
    MeasureEvents events;
    const auto run_start = std::chrono::steady_clock::now();
    events.starting = [&](std::size_t i, std::size_t n, const OpCall& c) {
      const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
      if (many) fmt::print(stderr, "{}", starting_line(i, n, c, elapsed_s));
    };
    events.done = [&](const MeasureOutcome& r) {
      if (r.kind == MeasureOutcome::Kind::kSkipped) {
        fmt::print(stderr, "  already measured (row {}), skipped (--resume)\n", r.existing_row);
        return;
      }
      if (!r.measurement) {
        notes.failed(r.error);
        if (r.call) fmt::print("{}", reporter->measure_failed(*r.call, r.error));
        return;
      }
      fmt::print("{}", reporter->measured(*r.measurement, r.not_stored, many));
      std::fflush(stdout);  // a long run shows (and a killed one keeps) each result as it lands
      if (!r.not_stored.empty())
        notes.failed(fmt::format("{} (the measurement above was printed but not stored)", r.not_stored));
    };
    const MeasureRun run = measure_calls(calls_, bad_, mo, notes, events);
    fmt::print("{}", reporter->measure_end(many));
    if (!power_trace_.empty()) {
      std::vector<Measurement> done;
      for (const auto& r : run.outcomes)
        if (r.measurement) done.push_back(*r.measurement);
      write_power_trace(power_trace_, done, run.energy_why);
    }
    return summarize(run, many);
  }

  // The closing lines on standard error, and the exit status.
  int summarize(const MeasureRun& run, bool many) const {
    if (!run.stopped.empty())
      fmt::print(stderr, "opcost: stopped: nothing more can be stored; {} entries were not measured\n",
                 run.not_reached);
    using Kind = MeasureOutcome::Kind;
    const std::size_t measured = run.count(Kind::kMeasured), skipped = run.count(Kind::kSkipped),
                      bad_input = run.count(Kind::kBadInput), failed = run.count(Kind::kFailed);
    const bool stored = measure_.store && measured + failed + skipped > 0;
    if (many) {
      fmt::print(stderr, "opcost: {} measured, {} skipped, {} failed{}{}\n", measured, skipped, failed + bad_input,
                 bad_input ? fmt::format(" ({} bad input)", bad_input) : "",
                 stored ? fmt::format("; stored in {}", display_location(measure_.db)) : "");
    } else if (measure_.store && measured == 1) {
      fmt::print(stderr, "opcost: stored as row {} in {}\n", run.outcomes.back().measurement->db_id,
                 display_location(measure_.db));
    }
    if (failed) return kExitMeasurementFailed;
    return bad_input ? kExitBadInput : kExitSuccess;
  }

  std::string op_;
  std::vector<std::string> args_;
  std::string spec_;
  bool dry_run_ = false;  // list the calls and the device time they may take; measure nothing
  bool json_ = false;
  bool no_store_ = false;
  std::string power_trace_;
  MeasureOptions measure_;                 // the workflow's, with its defaults
  RegistryOptions<MeasureOptions> loops_;  // the registry's options of the loops
  std::vector<OpCall> calls_;
  std::vector<std::string> bad_;  // entries that did not parse: reported with the rest
};

}  // namespace

std::unique_ptr<Command> make_measure_command() { return std::make_unique<MeasureCommand>(); }

}  // namespace opcost
