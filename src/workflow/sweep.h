#pragma once
// sweep as a workflow: a grid file (or a model list) expands to calls, each call is
// identified (its canonical signature, settings and GPU make its key), enrolled in the
// database's sweep state, and measured by worker processes that claim pending items one at a
// time, or several measured together (--energy-group: their energies in shared counter
// windows), each holding leases on its items that a heartbeat renews. A worker is this program
// again (`worker_command`). One that dies in an item (a crash, a CUDA error that breaks the
// context, kill -9) gets the item retried by a fresh worker (items it held together, each
// alone); an item that kills its worker again is failed with what happened, and the sweep goes
// on. A failure inside an item (shapes
// the op rejects, out of memory, an error in the op) is recorded by the worker itself, which
// goes on. Torch-free header.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/store/sweep_state.h"
#include "core/sweep/model_list.h"
#include "workflow/measure.h"
#include "workflow/notes.h"

namespace opcost {

// What a sweep file is: its items, identified, in order.
struct SweepPlan {
  std::string name, file;
  std::vector<SweepItem> items;                             // measurable
  std::vector<std::pair<SweepItem, std::string>> rejected;  // the op's schema refuses them: why
  std::size_t filtered_out = 0;                             // combinations a `where` dropped
  std::size_t duplicates = 0;  // combinations that make a call an earlier one makes (one item)
  std::string device_name;     // the GPU model (or CPU) of the key
  std::string settings;        // the measurement settings of the key
  std::string scope;           // the device model, cache mode and settings, hashed (SweepId)
  std::size_t total() const { return items.size() + rejected.size(); }
  SweepId id() const { return {name, scope}; }
};

// A grid (core/sweep/grid.h) or a model list (core/sweep/model_list.h: each model's inventory,
// its unique signatures, deduplicated across the models). Throws std::invalid_argument for a
// file that cannot be read or expanded, or a model that cannot run (naming the file, the item
// and the fix). `notes` hears of each model's inventory.
//
// Python models (core/sweep/model_list.h) need `python_models`: the Python package passes one
// that runs the model and returns its inventory's signatures; without it they are refused with
// that fix.
struct ModelSignatures {
  std::vector<std::pair<std::string, std::size_t>> calls;  // signature, calls per step
  std::string autocast;                                    // "" or the dtype the step ran under
};
using PythonModelSignatures = std::function<ModelSignatures(const ModelConfig&, const std::string& device)>;
SweepPlan plan_sweep(const std::string& file, const MeasureOptions& o, const Notes* notes = nullptr,
                     const PythonModelSignatures& python_models = {});

struct SweepOptions {
  MeasureOptions measure;  // replay, budgets, database (store is always on)
  SweepState::Reset reset = SweepState::Reset::kNone;
  // argv of a worker for this sweep (`opcost sweep FILE … --worker`, the same measurement
  // options, without --db); the sweep is appended as `--sweep-name NAME --sweep-scope SCOPE`
  // (SweepId). The database reaches the worker as $OPCOST_DB, never on its command line (which
  // `ps` shows every local user): a password in `measure.db` found in it is refused as a bug.
  std::vector<std::string> worker_command;
  std::size_t max_failed_starts = 3;  // workers in a row that die before taking an item: stop
  // Worker processes at once. On GPUs, one per GPU: worker i sees only the i-th GPU
  // (CUDA_VISIBLE_DEVICES); on the CPU they share it.
  std::size_t workers = 1;
  // How long an item stays a worker's without a heartbeat, and the workers that may die on one
  // item before it is failed: a worker killed from outside (or on a lost node) gets its item
  // retried; an item that crashes the process each time is isolated.
  SweepState::Lease lease;
  PythonModelSignatures python_models;  // a model list's Python models (plan_sweep)
};

// How far a sweep got, as the supervisor saw it.
struct SweepRun {
  SweepPlan plan;
  SweepCounts before, after;  // the sweep's items in the database, at start and end
  std::size_t measured = 0;   // items done by this run
  std::size_t failed = 0;     // items that failed in this run
  std::size_t crashes = 0;    // workers that died
  std::size_t requeued = 0;   // running items of dead workers put back to pending at start
  double seconds = 0;
  std::string stopped;  // why it stopped before every item was tried ("" if it did not)
};

// Progress of the supervisor: called as each item starts or ends.
struct SweepEvents {
  std::function<void(const SweepPlan&)> planned;  // the file is expanded, nothing measured yet
  // `done` counts the items done or failed before this run too (`done_before` of them).
  std::function<void(std::size_t done, std::size_t done_before, std::size_t total, double elapsed_s,
                     const std::string& current)>
      progress;
};

// A run stopped from outside (Ctrl-C in Python: core/sys/interrupt.h, checked at least every
// quarter second) or by an error in a callback kills its workers and puts the items they held
// back to pending before the exception goes on to the caller.
SweepRun run_sweep(const SweepOptions& o, const std::string& file, const Notes& notes, const SweepEvents& events = {});

// The worker: claims the sweep's pending items one at a time until none is left and no other
// worker holds one (an item whose worker stops renewing its lease comes back to the queue),
// writing one JSON line per event to `events_out` (start, done, failed, lost, note). Returns 0,
// or 1 when the database stopped taking rows.
int run_sweep_worker(const MeasureOptions& o, const SweepId& sweep, const SweepState::Lease& lease,
                     std::FILE* events_out);

// `sweep status`: the sweep's items in the database at the options given (the file is expanded
// to know its name and items; the options, device included, make the scope of what is counted).
struct SweepStatus {
  SweepPlan plan;  // without items when `planned` is false
  bool planned = true;
  std::size_t items = 0;  // the sweep's items: the plan's, or those the database has
  SweepCounts counts;
  std::size_t not_enrolled = 0;      // items of the file never run at these options (none in this scope)
  std::vector<ItemState> failed;     // with their reasons
  std::vector<ItemState> running;    // with their workers
  double mean_seconds_per_item = 0;  // over done items measured in a sweep (0: none yet)
  std::size_t workers_seen = 0;      // distinct workers that measured its done items
  std::size_t elsewhere = 0;         // its items at other settings or on another device
};
// A model list is not planned (each of its models would run, Python files imported, for its
// inventory): its items are those the database has at these options, none when the list never
// ran at them, unless `need_items` (dry-run).
SweepStatus sweep_status(const MeasureOptions& o, const std::string& file,
                         const PythonModelSignatures& python_models = {}, bool need_items = false);

}  // namespace opcost
