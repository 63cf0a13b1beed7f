#pragma once
// `opcost sweep FILE` and `opcost sweep status FILE`: the sweep workflow (workflow/sweep.h)
// with a progress bar on a terminal and plain periodic lines otherwise.
#include <string>
#include <vector>

#include "core/report/progress.h"
#include "workflow/sweep.h"

namespace opcost {

struct SweepCliOptions {
  std::string file;
  bool dry_run = false;
  bool force = false, retry_failed = false;
  bool worker = false;                                // internal: this process is a sweep's worker
  std::string sweep_name, sweep_scope;                // internal: the worker's sweep (SweepId)
  double plain_every_s = kPlainProgressEverySeconds;  // progress lines when standard error is not a terminal
  std::size_t workers = 1;                            // worker processes at once (one per GPU)
  SweepState::Lease lease;  // its length, and the workers that may die on one item before it is failed
  // --slurm: an sbatch job array of `slurm_tasks` tasks, each a sweep with one worker, instead of
  // local workers (cli/slurm_job.h).
  bool slurm = false;
  std::size_t slurm_tasks = 1;
  std::vector<std::string> sbatch_options;  // more #SBATCH lines: --partition=gpu, --time=2:00:00
  MeasureOptions measure;
};

// `argv`: this process's own command line; a worker is started with it, without --db (the
// database reaches it as $OPCOST_DB: workflow/sweep.h), and `--worker`.
int run_sweep_command(const SweepCliOptions& o, const std::vector<std::string>& argv);
int run_sweep_status(const SweepCliOptions& o);

// `argv` without the options named: each `--name VALUE` or `--name=VALUE` of `with_value`, each
// `--name` (or `--name=VALUE`) of `flags`, none after `--`. What a worker or a Slurm task runs of the command given.
// Options are found by their names, never by comparing values: every other word keeps its place.
std::vector<std::string> command_without(const std::vector<std::string>& argv,
                                         const std::vector<std::string>& with_value,
                                         const std::vector<std::string>& flags = {});

}  // namespace opcost
