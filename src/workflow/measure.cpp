#include "workflow/measure.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/store/database.h"
#include "workflow/options.h"
#include "workflow/session.h"

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

std::size_t MeasureRun::count(MeasureOutcome::Kind kind) const {
  return std::size_t(std::count_if(outcomes.begin(), outcomes.end(), [&](const auto& o) { return o.kind == kind; }));
}

namespace {

// The entries that pass their schema's check (no tensor is made), in order; the others are
// recorded as bad input at once, so that all of them are reported together.
std::vector<const OpCall*> checked_calls(const std::vector<OpCall>& calls, const MeasureOptions& o, bool many,
                                         const std::function<void(MeasureOutcome)>& record) {
  std::vector<const OpCall*> good;
  for (const auto& c : calls) {
    try {
      PreparedCall::check(c, options_for(c, o.replay));
      good.push_back(&c);
    } catch (const std::exception& e) {
      record(bad_input(&c, located(c, e.what(), many)));
    }
  }
  return good;
}

MeasureOutcome::Kind kind_of(SessionOutcome::Kind k) {
  switch (k) {
    case SessionOutcome::Kind::kMeasured:
      return MeasureOutcome::Kind::kMeasured;
    case SessionOutcome::Kind::kSkipped:
      return MeasureOutcome::Kind::kSkipped;
    case SessionOutcome::Kind::kBadInput:
      return MeasureOutcome::Kind::kBadInput;
    case SessionOutcome::Kind::kFailed:
      break;
  }
  return MeasureOutcome::Kind::kFailed;
}

MeasureOutcome outcome_of(SessionOutcome s, const OpCall& c, bool many) {
  MeasureOutcome out;
  out.kind = kind_of(s.kind);
  out.call = &c;
  out.measurement = std::move(s.measurement);
  out.error = s.error.empty() ? "" : located(c, s.error, many);
  out.not_stored = std::move(s.not_stored);
  out.existing_row = s.existing_row;
  out.resolution_note = std::move(s.resolution_note);
  return out;
}

}  // namespace

MeasureRun measure_calls(const std::vector<OpCall>& calls, const std::vector<std::string>& bad_entries,
                         const MeasureOptions& o, const Notes& notes, const MeasureEvents& events) {
  check_options(o);  // before anything is opened or measured (the registry's rules)
  MeasureRun run;
  const bool many = calls.size() + bad_entries.size() > 1;
  const std::function<void(MeasureOutcome)> record = [&](MeasureOutcome outcome) {
    run.outcomes.push_back(std::move(outcome));
    if (events.done) events.done(run.outcomes.back());
  };
  for (const auto& b : bad_entries) record(bad_input(nullptr, b));
  const std::vector<const OpCall*> good = checked_calls(calls, o, many, record);
  if (const std::size_t bad = run.count(MeasureOutcome::Kind::kBadInput); bad && many && !good.empty())
    notes.say(fmt::format("{} of {} entries cannot run (above); measuring the other {}", bad, bad + good.size(),
                          good.size()));
  // The database is opened (and checked writable) before anything is measured.
  std::optional<Database> db;
  if (o.store && !good.empty()) db.emplace(o.db, Database::Access::kReadWrite, o.db_create_parent);
  SessionOptions so;
  so.config = o.config;
  so.resume = o.resume;
  so.say_choices = true;
  MeasuringSession session(db ? &*db : nullptr, so, notes);
  for (std::size_t i = 0; i < good.size() && session.stopped().empty(); ++i) {
    const OpCall& c = *good[i];
    if (events.starting) events.starting(i, good.size(), c);
    SessionOutcome s;
    try {
      s = session.measure(c, options_for(c, o.replay));
    } catch (const std::exception& e) {  // the call's options contradict (options_for): bad input
      s.kind = SessionOutcome::Kind::kFailed;
      s.error = e.what();
    }
    if (session.started() && run.device_name.empty()) {
      run.device_name = session.device_name();
      run.energy_why = session.energy_unavailable_reason();
    }
    record(outcome_of(std::move(s), c, many));
    if (!session.stopped().empty()) {
      run.stopped = session.stopped();
      run.not_reached = good.size() - i - 1;
    }
  }
  return run;
}

}  // namespace opcost
