#pragma once
// measure as a workflow: operator calls replayed alone in loops, each stored as it lands.
// Every entry is checked against its schema before anything is measured (all bad ones are
// reported at once); the database is opened, and checked writable, first; a failure is
// recorded and the run goes on; a database that stops taking rows stops the run without
// losing the measurement in hand. Torch-free header.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/measurement.h"
#include "core/spec/op_call.h"
#include "core/sweep/sweep_limits.h"
#include "torch/replay.h"
#include "torch/runner.h"
#include "workflow/notes.h"

namespace opcost {

// The longest budget any loop may be given, in seconds: a day. Longer ones are typing
// mistakes, and past about 10^9 s the watchdog's deadline would overflow its clock.
inline constexpr double kMaxBudgetSeconds = 86400;

struct MeasureOptions {
  ReplayOptions replay;           // device, seed, cache mode, autocast (a call's own autocast wins if it agrees)
  MeasureConfig config;           // budgets and targets (MeasureConfig's defaults are the command line's)
  bool store = true;              // write each measurement to the database
  std::string db;                 // its path
  bool db_create_parent = false;  // opcost's default location: its directories may be made
  bool resume = false;            // skip calls that already have an unflagged row
  // sweep: the items a sweep file may make, counted before any is made (core/sweep/sweep_limits.h)
  std::uint64_t max_sweep_items = kDefaultMaxSweepItems;
  // sweep: the items a worker measures together, their time loops one by one and their energies
  // split from one loop's shared counter windows (Runner::measure_group). 0: kSweepEnergyGroup
  // where the session shares counter windows (NVML's slow counter), else 1 (each its own loop).
  std::size_t energy_group = 0;
};
// The items a sweep worker measures together by default where the energy counter is slow: one
// shared loop of at most 16 split columns (shared_energy_loop.cpp).
inline constexpr std::size_t kSweepEnergyGroup = 16;
inline constexpr std::size_t kMaxSweepEnergyGroup = 64;

struct MeasureOutcome {
  enum class Kind { kMeasured, kSkipped, kBadInput, kFailed };
  Kind kind = Kind::kFailed;
  const OpCall* call = nullptr;            // the entry (nullptr for one that did not parse)
  std::optional<Measurement> measurement;  // kMeasured, and kFailed when only storing failed
  std::string error;                       // kBadInput / kFailed: the message, with the entry's origin
  std::string not_stored;                  // the database refused the measurement
  int64_t existing_row = -1;               // kSkipped: the row that made it unnecessary
  std::string resolution_note;             // how the overload was chosen, when the call named none
};

struct MeasureRun {
  std::vector<MeasureOutcome> outcomes;  // parse errors first, then every call in order
  std::size_t count(MeasureOutcome::Kind kind) const;
  std::string stopped;          // why the run stopped early ("" when it ran to the end)
  std::size_t not_reached = 0;  // calls left unmeasured by the stop
  std::string energy_why;       // why energy was unavailable, if it was
  std::string device_name;      // what was measured on
};

// Called as the run goes: `starting` before each call is prepared (index, count of the
// calls that passed the check), `done` as each outcome lands (the CLI prints it at once).
struct MeasureEvents {
  std::function<void(std::size_t, std::size_t, const OpCall&)> starting;
  std::function<void(const MeasureOutcome&)> done;
};

// `bad_entries`: entries that did not even parse (a spec file's), reported with the rest.
MeasureRun measure_calls(const std::vector<OpCall>& calls, const std::vector<std::string>& bad_entries,
                         const MeasureOptions& o, const Notes& notes, const MeasureEvents& events = {});

}  // namespace opcost
