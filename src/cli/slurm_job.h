#pragma once
// `opcost sweep FILE --db postgresql://… --slurm`: the sweep as a Slurm job array. Each task is
// this program again, `opcost sweep FILE --db URL` with one worker on the one GPU Slurm gives it:
// the same supervisor and worker as on one machine, sharing the queue in the database. Slurm
// schedules; opcost brings no scheduler of its own.
#include <string>
#include <vector>

#include "cli/sweep_command.h"

namespace opcost {

// The sbatch script for `o`; `argv`: the command line given (its sweep and loop options go to
// every task), `self`: this program's absolute path. Throws std::invalid_argument for options
// that a job array cannot honour (a SQLite --db, --force).
std::string slurm_sweep_script(const SweepCliOptions& o, const std::vector<std::string>& argv, const std::string& self);

// Prints the script (--dry-run), or writes it beside the sweep file's name in the current
// directory and submits it with sbatch.
int run_slurm_sweep(const SweepCliOptions& o, const std::vector<std::string>& argv, const std::string& self);

}  // namespace opcost
