#include "cli/trace_command.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "cli/exit_codes.h"
#include "core/io/atomic_output_file.h"
#include "core/io/output_file.h"
#include "core/trace/step_selection.h"
#include "core/trace/table.h"
#include "core/trace/trace_file.h"
#include "core/trace/trace_import.h"
#include "workflow/report_html.h"
#include "workflow/reporters/reporter.h"

namespace opcost {

int run_trace_command(TraceCliOptions o) {
  if (o.group_by == "shape") o.record.shapes = true;
  if (!o.layers.empty()) check_layer_pattern(o.layers);  // before anything runs
  if (o.import_path.empty() && o.model.model.empty())
    throw std::invalid_argument("trace: name a model (opcost trace resnet50), or a trace to read with --import FILE");
  if (!o.import_path.empty() && !o.model.model.empty())
    throw std::invalid_argument(
        fmt::format("trace: both a model ({}) and --import {}: a trace is either recorded or read; give one",
                    o.model.model, o.import_path));
  std::optional<StepRange> steps;
  if (!o.only_steps.empty()) steps = parse_step_range(o.only_steps);  // before anything runs
  if (steps && o.energy)
    throw std::invalid_argument(
        "trace: --only-steps with --energy: the energy is checked over every kept step; choose the steps with "
        "--wait, --warmup and --steps instead");
  if (o.energy && !o.import_path.empty())
    throw std::invalid_argument("trace: --energy measures a model's steps; an imported trace has none to run");
  // Before anything is read: -o onto the imported file would replace the profiler's trace.
  check_output_not_input(o.output, "-o",
                         {{o.import_path, "the trace"},
                          {o.model.model, "the model file"},
                          {o.energy ? o.energy_options.db : std::string(), "the database"}});
  check_output_not_input(o.html, "--html",
                         {{o.import_path, "the trace"},
                          {o.model.model, "the model file"},
                          {o.energy ? o.energy_options.db : std::string(), "the database"}});
  TraceRun run = o.import_path.empty()
                     ? trace_model(o.model, o.record, o.energy ? &o.energy_options : nullptr, Notes::to_stderr())
                     : import_trace(o.import_path);
  if (steps) run = only_steps(run, *steps);
  const std::string what = o.import_path.empty() ? o.model.model : o.import_path;
  if (run.skipped_events > 0)
    fmt::print(stderr, "opcost: {}: {} malformed event{} skipped (the first, {})\n", o.import_path, run.skipped_events,
               run.skipped_events == 1 ? "" : "s", run.first_skipped);
  if (o.import_path.empty() && o.model.in.device == "auto" && run.device_activities.empty())  // as `inventory` says
    fmt::print(stderr, "opcost: traced on the CPU ({}): host ranges only, no device activity\n", run.device);
  if (!o.output.empty()) {
    save_trace(run, o.output, TraceFileOptions{o.min_duration_us, o.layers});
    fmt::print(stderr,
               "opcost: trace of {} written to {} ({} steps, {} layer ranges, {} operator calls, {} device "
               "activities{}); open it in https://ui.perfetto.dev\n",
               what, o.output, run.steps.size(), run.layers.size(), run.ops.size(), run.device_activities.size(),
               run.untied.empty() ? "" : fmt::format(", {} not tied to a call", [&] {
                 std::size_t n = 0;
                 for (const auto& [why, k] : run.untied) n += k;
                 return n;
               }()));
  }
  const bool table = o.table || (o.output.empty() && o.html.empty());
  if (table || !o.html.empty()) {
    const TraceTable t = trace_table(run, o.group_by, o.json || !o.html.empty());  // text: no timeline
    if (table)
      write_file("",
                 make_reporter(o.json ? ReportFormat::kJson : ReportFormat::kText)->trace_table(t, o.sort_by, o.limit));
    if (!o.html.empty()) {
      write_report_of(to_json(t), what, o.html);
      fmt::print(stderr, "opcost: report of {} written to {}\n", what, o.html);
    }
  }
  if (o.energy && !run.energy && !table)  // the table says it otherwise
    fmt::print(stderr, "opcost: no energy per {}: {}\n", o.group_by == "layer" ? "layer" : "operator", run.energy_why);
  if (!run.counters_unavailable.empty())
    fmt::print(stderr, "opcost: no power, clock or energy tracks in the trace: {}\n", run.counters_unavailable);
  for (const auto& [why, n] : run.untied)
    fmt::print(stderr, "opcost: {} device activities not tied to a call: {}\n", n, why);
  return kExitSuccess;
}

}  // namespace opcost
