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

// The options that make an item's scope (SweepId), as the command line takes them: what status
// counts at, and what to pass to count at the options a sweep ran with.
std::string scope_options(const MeasureOptions& m, const std::string& device_name) {
  const MeasureConfig& c = m.config;
  return fmt::format(
      "--device {}{} --cache {} --seed {} --max-time {} --target-ci {}{} --energy-max-time {} --energy-target-ci {}",
      m.replay.device, m.replay.device == "auto" ? fmt::format(" ({})", device_name) : "", m.replay.cache_mode,
      m.replay.seed, c.time.max_seconds, c.time.target_rel_ci95, c.energy ? "" : " --no-energy", c.energy_max_s,
      c.energy_target_rel_ci95);
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
  if (o.worker) return run_sweep_worker(o.measure, {o.sweep_name, o.sweep_scope}, o.lease, stdout);
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
  const SweepCounts& c = s.counts;
  const std::size_t pending = c.pending + s.not_enrolled;
  // Every count is of the items at these options (they make an item's key): said first, so
  // that items at other options (elsewhere) never read as a contradiction.
  if (!s.planned && s.items == 0)
    fmt::print(
        "sweep {} ({}): a model list never run at these options, so its items are not known: a run takes each model's "
        "inventory for them (status runs no model)\n",
        s.plan.name, o.file);
  else
    fmt::print("sweep {} ({}): {} items{}\n", s.plan.name, o.file, s.items,
               s.planned ? "" : " (as the database has them: status runs no model of the list)");
  fmt::print("  at       {}\n", scope_options(o.measure, s.plan.device_name));
  fmt::print("  done     {}\n  failed   {}\n  pending  {}{}\n  running  {}\n", c.done, c.failed, pending,
             s.not_enrolled ? fmt::format(" ({} never run at these options)", s.not_enrolled) : "", c.running);
  if (s.workers_seen > 1) fmt::print("  workers  {} (measured the done items)\n", s.workers_seen);
  if (pending + c.running > 0)
    fmt::print("  left     {}\n",
               s.mean_seconds_per_item > 0
                   ? fmt::format("about {} at {:.2f} s an item so far",
                                 format_duration(s.mean_seconds_per_item * double(pending + c.running)),
                                 s.mean_seconds_per_item)
                   : std::string("no item done yet, so no pace to go by (`opcost sweep --dry-run` bounds it)"));
  if (s.elsewhere)
    fmt::print(
        "  elsewhere {} items of this sweep at other settings or on another device, not counted above (the counts are "
        "at the options after `at`: pass those the sweep ran with)\n",
        s.elsewhere);
  for (const auto& r : s.running) fmt::print("running: {} (worker {})\n", r.call, r.worker);
  for (const auto& f : s.failed) fmt::print("failed: {}\n  {}\n", f.call, f.reason);
  return kExitSuccess;
}

}  // namespace opcost
