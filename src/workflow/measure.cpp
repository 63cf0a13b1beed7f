#include "workflow/measure.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/store/database.h"

namespace opcost {

namespace {

// The options for one call: a call's own autocast (an inventory's) unless it contradicts.
ReplayOptions options_for(const OpCall& c, const ReplayOptions& given) {
  ReplayOptions out = given;
  // An inventory's cold inputs are rotated, unless every input is (--cache cold).
  if (!c.cache_mode.empty() && given.cache_mode == "warm") out.cache_mode = c.cache_mode;
  if (!c.autocast.empty()) {
    if (!given.autocast.empty() && canonical_dtype(given.autocast) != canonical_dtype(c.autocast))
      throw std::invalid_argument(
          fmt::format("the spec's autocast {} contradicts --autocast {}", c.autocast, given.autocast));
    out.autocast = c.autocast;
  }
  return out;
}

std::string located(const OpCall& c, const std::string& what, bool many) {
  return c.origin.empty() || !many ? what : fmt::format("{}: {}", c.origin, what);
}

MeasureOutcome bad_input(const OpCall* call, std::string error) {
  MeasureOutcome out;
  out.kind = MeasureOutcome::Kind::kBadInput;
  out.call = call;
  out.error = std::move(error);
  return out;
}

}  // namespace

void check_option_number(double value, const char* python_name, const char* option, double low, bool low_included,
                         double high, const char* unit) {
  const bool in_range = std::isfinite(value) && (low_included ? value >= low : value > low) && value <= high;
  if (!in_range)
    throw std::invalid_argument(fmt::format("{} ({}) must be a finite number {} {} {} {}{}, not {}", python_name,
                                            option, low_included ? "from" : "above", low,
                                            low_included ? "to" : "and at most", high, unit, value));
}

void check_measure_config(const MeasureConfig& c) {
  check_option_number(c.time.max_seconds, "max_time", "--max-time", 0, false, kMaxBudgetSeconds, " seconds");
  check_option_number(c.time.target_rel_ci95, "target_ci", "--target-ci", 0, false, 1, "");
  check_option_number(c.energy_max_s, "energy_max_time", "--energy-max-time", 0, false, kMaxBudgetSeconds, " seconds");
  check_option_number(c.energy_max_capped_s, "energy_max_time_capped", "--energy-max-time-capped", 0, false,
                      kMaxBudgetSeconds, " seconds");
  check_option_number(c.energy_settle_s, "energy_settle", "--energy-settle", 0, true, kMaxBudgetSeconds, " seconds");
  check_option_number(c.energy_target_rel_ci95, "energy_target_ci", "--energy-target-ci", 0, false, 1, "");
  if (c.energy_min_windows < 2 || c.energy_min_windows > 100)
    throw std::invalid_argument(
        fmt::format("energy_min_windows (--energy-min-windows) must be a whole number from 2 to 100, not {}",
                    c.energy_min_windows));
}

std::size_t MeasureRun::count(MeasureOutcome::Kind kind) const {
  return std::size_t(std::count_if(outcomes.begin(), outcomes.end(), [&](const auto& o) { return o.kind == kind; }));
}

MeasureRun measure_calls(const std::vector<OpCall>& calls, const std::vector<std::string>& bad_entries,
                         const MeasureOptions& o, const Notes& notes, const MeasureEvents& events) {
  check_measure_config(o.config);  // before anything is opened or measured
  MeasureRun run;
  const bool many = calls.size() + bad_entries.size() > 1;
  auto record = [&](MeasureOutcome outcome) {
    run.outcomes.push_back(std::move(outcome));
    if (events.done) events.done(run.outcomes.back());
  };
  // Every entry is checked against its schema first (no tensor is made): all the bad ones
  // are reported at once, and the good ones still run.
  for (const auto& b : bad_entries) record(bad_input(nullptr, b));
  std::vector<const OpCall*> good;
  for (const auto& c : calls) {
    try {
      PreparedCall::check(c, options_for(c, o.replay));
      good.push_back(&c);
    } catch (const std::exception& e) {
      record(bad_input(&c, located(c, e.what(), many)));
    }
  }
  if (const std::size_t bad = run.count(MeasureOutcome::Kind::kBadInput); bad && many && !good.empty())
    notes.say(fmt::format("{} of {} entries cannot run (above); measuring the other {}", bad, bad + good.size(),
                          good.size()));
  // The database is opened (and checked writable) before anything is measured.
  std::optional<Database> db;
  if (o.store && !good.empty()) db.emplace(o.db, Database::Access::kReadWrite, o.db_create_parent);
  MeasureConfig cfg = o.config;
  cfg.progress = notes.progress;
  std::optional<Runner> runner;
  for (std::size_t i = 0; i < good.size(); ++i) {
    const OpCall& c = *good[i];
    if (events.starting) events.starting(i, good.size(), c);
    MeasureOutcome out;
    out.kind = MeasureOutcome::Kind::kMeasured;
    out.call = &c;
    try {
      const ReplayOptions replay = options_for(c, o.replay);
      auto prepared = PreparedCall::prepare(c, replay);
      out.resolution_note = prepared->resolution_note();
      if (!out.resolution_note.empty()) notes.say(out.resolution_note);
      if (!runner) {
        runner.emplace(prepared->device_kind(), prepared->device_index(), cfg);
        run.device_name = runner->environment().device_name;
        run.energy_why = runner->energy_unavailable_reason();
        if (o.replay.device == "auto" && prepared->device_kind() == "cpu")
          notes.say(fmt::format("no CUDA GPU found; measuring on the CPU ({})", run.device_name));
        if (!run.energy_why.empty()) notes.say("energy unavailable: " + run.energy_why);
      }
      if (o.resume && db) {
        const auto key = Database::Key::of(prepared->op(), prepared->overload(), prepared->canonical_args(),
                                           run.device_name, replay.cache_mode, prepared->autocast());
        if (auto row = db->lookup(key)) {
          out.kind = MeasureOutcome::Kind::kSkipped;
          out.existing_row = (*row)["db_id"].get<int64_t>();
          record(std::move(out));
          continue;
        }
      }
      out.measurement = runner->measure(*prepared);
      notes.done();
    } catch (const std::exception& e) {  // one failure never loses the others
      notes.done();
      // The op rejecting its arguments (shapes, memory) is bad input, not a failed measurement.
      out.kind = dynamic_cast<const ReplayError*>(&e) ? MeasureOutcome::Kind::kBadInput : MeasureOutcome::Kind::kFailed;
      out.error = located(c, e.what(), many);
      record(std::move(out));
      continue;
    }
    // Stored as it lands; a measurement the database refuses is still returned, never lost.
    if (db) {
      try {
        out.measurement->db_id = db->insert(*out.measurement);
      } catch (const DatabaseError& e) {
        out.kind = MeasureOutcome::Kind::kFailed;
        out.not_stored = e.what();
        if (e.stops_writing()) {
          run.stopped = e.what();
          run.not_reached = good.size() - i - 1;
        }
      }
    }
    record(std::move(out));
    if (!run.stopped.empty()) break;
  }
  return run;
}

}  // namespace opcost
