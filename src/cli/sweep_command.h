#pragma once
// `opcost sweep FILE` and `opcost sweep status FILE`: the sweep workflow (workflow/sweep.h)
// with a progress bar on a terminal and plain periodic lines otherwise.
#include <string>
#include <vector>

#include "workflow/sweep.h"

namespace opcost {

struct SweepCliOptions {
  std::string file;
  bool dry_run = false;
  bool force = false, retry_failed = false;
  bool worker = false;                  // internal: this process is a sweep's worker
  std::string sweep_name, sweep_scope;  // internal: the worker's sweep (SweepId)
  bool no_energy = false;
  double plain_every_s = 10;  // progress lines when standard error is not a terminal
  std::size_t workers = 1;    // worker processes at once (one per GPU)
  int64_t max_attempts = 2;   // workers that may die on one item before it is failed
  MeasureOptions measure;
};

// `argv`: this process's own command line; a worker is started with it and `--worker`.
int run_sweep_command(const SweepCliOptions& o, const std::vector<std::string>& argv);
int run_sweep_status(const SweepCliOptions& o);

}  // namespace opcost
