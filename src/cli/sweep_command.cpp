#include "cli/sweep_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "cli/exit_codes.h"
#include "cli/slurm_job.h"
#include "core/report/progress.h"
#include "core/store/database.h"
#include "core/text/text.h"
#include "torch/runner.h"
#include "workflow/reporters/reporter.h"

namespace opcost {

namespace {

std::string self_executable(const std::string& fallback) {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? fallback : p.string();
}

int dry_run(const SweepCliOptions& o) {
  const SweepStatus s = sweep_status(o.measure, o.file, {}, true);
  for (const auto& item : s.plan.items) fmt::print("{}\n", item.call);
  for (const auto& [item, why] : s.plan.rejected) fmt::print(stderr, "opcost: cannot run: {}: {}\n", item.call, why);
  const std::size_t left = s.counts.pending + s.counts.running + s.not_enrolled;
  const double most_s = measurement_budget_s(o.measure.config, o.measure.config.energy);
  fmt::print(stderr,
             "opcost: --dry-run: sweep {}: {} items ({} combinations filtered out, {} the same call as another, {} the "
             "op's schema refuses; whether the op accepts the shapes shows as each item runs); {} done and {} failed "
             "in {}; {} to measure, at most about {} of GPU time at these budgets{}\n",
             s.plan.name, s.plan.total(), s.plan.filtered_out, s.plan.duplicates, s.plan.rejected.size(), s.counts.done,
             s.counts.failed, display_location(o.measure.db), left, format_duration(most_s * double(left)),
             s.mean_seconds_per_item > 0 ? fmt::format(" (about {} at this database's pace)",
                                                       format_duration(s.mean_seconds_per_item * double(left)))
                                         : "");
  return s.plan.rejected.empty() ? kExitSuccess : kExitBadInput;
}

}  // namespace

std::vector<std::string> command_without(const std::vector<std::string>& argv,
                                         const std::vector<std::string>& with_value,
                                         const std::vector<std::string>& flags) {
  auto named = [](const std::vector<std::string>& names, const std::string& n) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
  std::vector<std::string> out;
  bool options_end = false;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& word = argv[i];
    if (i == 0 || options_end || word.rfind("--", 0) != 0) {
      out.push_back(word);
      continue;
    }
    if (word == "--") {
      options_end = true;
      out.push_back(word);
      continue;
    }
    const std::string name = word.substr(0, word.find('='));
    if (named(flags, name)) continue;
    if (named(with_value, name)) {
      if (name == word) ++i;  // its value is the next word
      continue;
    }
    out.push_back(word);
  }
  return out;
}

int run_sweep_command(const SweepCliOptions& o, const std::vector<std::string>& argv) {
  if (o.worker) {
    MeasureOptions measure = o.measure;
    measure.resume = !o.force;  // --force measures every item again, stored or not
    return run_sweep_worker(measure, {o.sweep_name, o.sweep_scope}, o.lease, stdout);
  }
  if (o.slurm) return run_slurm_sweep(o, argv, self_executable(argv[0]));
  if (o.dry_run) return dry_run(o);
  SweepOptions so;
  so.measure = o.measure;
  so.reset = o.force ? SweepState::Reset::kAll : o.retry_failed ? SweepState::Reset::kFailed : SweepState::Reset::kNone;
  so.workers = o.workers;
  so.lease = o.lease;
  so.worker_command = command_without(argv, {"--db"});
  so.worker_command[0] = self_executable(argv[0]);
  so.worker_command.push_back("--worker");
  ProgressLine line(stderr, o.plain_every_s);
  Notes notes;
  notes.note = [&](const std::string& t) {
    line.clear();
    fmt::print(stderr, "opcost: {}\n", t);
  };
  notes.error = [&](const std::string& t) {
    line.clear();
    fmt::print(stderr, "opcost: failed: {}\n", user_message(t));
  };
  std::string label = std::filesystem::path(o.file).stem().string();
  SweepEvents events;
  events.planned = [&](const SweepPlan& plan) { label = plan.name; };
  events.progress = [&](std::size_t done, std::size_t before, std::size_t total, double elapsed_s,
                        const std::string& current) {
    std::string text = progress_text(label, done, total, elapsed_s, line.terminal(), before);
    if (line.terminal() && !current.empty()) text += " " + fit_label(current, 50);
    line.update(text);
  };
  const SweepRun run = run_sweep(so, o.file, notes, events);
  line.clear();
  const SweepCounts& c = run.after;
  if (run.before.pending > 0 && !line.terminal())  // the final plain line, whatever the period
    fmt::print(
        stderr, "{}\n",
        progress_text(label, c.done + c.failed, c.total(), run.seconds, false, run.before.done + run.before.failed));
  if (run.before.pending == 0)
    fmt::print(stderr,
               "opcost: sweep {}: nothing to measure: {} items done and {} failed in {} (--retry-failed retries the "
               "failed, --force measures everything again)\n",
               run.plan.name, c.done, c.failed, display_location(o.measure.db));
  else
    fmt::print(stderr,
               "opcost: sweep {}: {} measured and {} failed in this run ({}, {} worker {}); {} of {} items done, "
               "{} failed, {} pending in {}\n",
               run.plan.name, run.measured, run.failed, format_duration(run.seconds), run.crashes,
               run.crashes == 1 ? "crash" : "crashes", c.done, c.total(), c.failed, c.pending + c.running,
               display_location(o.measure.db));
  if (c.failed) fmt::print(stderr, "opcost: `opcost sweep status {}` lists the failures with their reasons\n", o.file);
  if (!run.stopped.empty()) {
    fmt::print(stderr, "opcost: error: stopped: {}\n", user_message(run.stopped));
    return kExitMeasurementFailed;
  }
  return run.failed || !run.plan.rejected.empty() ? kExitMeasurementFailed : kExitSuccess;
}

int run_sweep_status(const SweepCliOptions& o) {
  const SweepStatus s = sweep_status(o.measure, o.file);
  fmt::print("{}", make_reporter(ReportFormat::kText)->sweep_status({s, o.file, o.measure}));
  return kExitSuccess;
}

}  // namespace opcost
