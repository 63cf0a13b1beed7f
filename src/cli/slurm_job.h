#pragma once
// `opcost sweep FILE --db postgresql://… --slurm`: the sweep as a Slurm job array. Each task is
// this program again, `opcost sweep FILE` with one worker on the one GPU Slurm gives it: the
// same supervisor and worker as on one machine, sharing the queue in the database. Slurm
// schedules; opcost brings no scheduler of its own. The database reaches each task as
// $OPCOST_DB in the environment sbatch exports, never in the script or on a command line; every
// value written into the script is checked or quoted for its place (a #SBATCH line holds no
// newline).
#include <string>
#include <vector>

#include "cli/sweep_command.h"

namespace opcost {

// The sbatch script for `o`; `argv`: the command line given (its sweep and loop options go to
// every task, each word in its place), `self`: this program's absolute path. Throws
// std::invalid_argument for options that a job array cannot honour (a SQLite --db, --force,
// --device cuda:1) or that cannot go into a script (an --sbatch-option holding a newline).
std::string slurm_sweep_script(const SweepCliOptions& o, const std::vector<std::string>& argv, const std::string& self);

// Prints the script (--dry-run), or writes it (0600) as opcost-NAME.sbatch in the current
// directory and submits it with sbatch, $OPCOST_DB in sbatch's environment. The script holds no
// password, so it is kept when sbatch fails.
int run_slurm_sweep(const SweepCliOptions& o, const std::vector<std::string>& argv, const std::string& self);

}  // namespace opcost
