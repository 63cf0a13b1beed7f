// `opcost sweep FILE` and `opcost sweep status FILE`: the options; the runs are
// cli/sweep_command.cpp's.
#include "cli/command.h"
#include "cli/commands/factories.h"
#include "cli/commands/registry_options.h"
#include "cli/option_checks.h"
#include "cli/sweep_command.h"

namespace opcost {

namespace {

class SweepCommand : public Command {
 public:
  void add_options(CLI::App& cmd) override {
    cmd.fallthrough();
    cmd.add_option("file", o_.file, "YAML sweep file: a grid or a model list")->check(CLI::ExistingFile);
    cmd.add_flag("--dry-run", o_.dry_run, "list the items and the GPU time they may take; measure nothing");
    auto* force = cmd.add_flag("--force", o_.force, "measure every item again, done or failed");
    cmd.add_flag("--retry-failed", o_.retry_failed, "measure the failed items again")->excludes(force);
    cmd.add_option("--progress-every", o_.plain_every_s,
                   "seconds between progress lines when standard error is not a terminal")
        ->check(number_between(0, kMaxBudgetSeconds))
        ->capture_default_str();
    cmd.add_option("--max-items", o_.measure.max_sweep_items,
                   "the items the sweep file may make, counted before any is made (a larger grid is refused)")
        ->check(whole_number_between(1, 1'000'000'000))
        ->capture_default_str();
    cmd.add_option("--workers", o_.workers, "worker processes at once: one per GPU (on the CPU they share it)")
        ->check(whole_number_between(1, 1024))
        ->capture_default_str();
    cmd.add_option("--max-attempts", o_.lease.max_attempts,
                   "workers that may die on one item (a crash, kill -9, a lost node) before it is failed")
        ->check(whole_number_between(1, 100))
        ->capture_default_str();
    cmd.add_option("--lease", o_.lease.seconds,
                   "seconds an item stays a worker's without its heartbeat; then another worker takes it (a "
                   "killed worker, a lost node)")
        ->check(number_between(1, kMaxBudgetSeconds))
        ->capture_default_str();
    add_slurm_options(cmd);
    loops_.add(cmd, measure_option_specs(), kSweepCommand, o_.measure);
    cmd.add_flag("--worker", o_.worker)->group("");  // internal: run_sweep starts its workers so
    cmd.add_option("--sweep-name", o_.sweep_name)->group("");
    cmd.add_option("--sweep-scope", o_.sweep_scope)->group("");
    status_ = cmd.add_subcommand("status", "Done, pending and failed items of a sweep (with reasons)");
    status_->add_option("file", status_file_, "YAML sweep file")->required()->check(CLI::ExistingFile);
  }

  int run(const CommandContext& context) override {
    o_.measure.db = context.db;
    o_.measure.db_create_parent = context.db_create_parent;
    loops_.apply(o_.measure);  // part of an item's key: runs and status alike
    if (status_->parsed()) {
      o_.file = status_file_;
      return run_sweep_status(o_);
    }
    if (o_.file.empty())
      throw std::invalid_argument("sweep: name a grid file (opcost sweep grid.yaml), or `opcost sweep status FILE`");
    return run_sweep_command(o_, context.argv);
  }

 private:
  void add_slurm_options(CLI::App& cmd) {
    auto* slurm = cmd.add_flag("--slurm", o_.slurm,
                               "submit an sbatch job array of workers (one GPU each) against a PostgreSQL --db; "
                               "with --dry-run, print the script");
    cmd.add_option("--array", o_.slurm_tasks, "--slurm: tasks in the job array, each one worker on one GPU")
        ->check(whole_number_between(1, 100000))
        ->needs(slurm)
        ->capture_default_str();
    cmd.add_option("--sbatch-option", o_.sbatch_options,
                   "--slurm: one more #SBATCH line, e.g. --sbatch-option=--partition=gpu (repeatable)")
        ->allow_extra_args(false)
        ->needs(slurm);
  }

  SweepCliOptions o_;
  RegistryOptions<MeasureOptions> loops_;  // the registry's options of the loops
  std::string status_file_;
  CLI::App* status_ = nullptr;
};

}  // namespace

std::unique_ptr<Command> make_sweep_command() { return std::make_unique<SweepCommand>(); }

}  // namespace opcost
