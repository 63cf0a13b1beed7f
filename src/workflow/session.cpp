#include "workflow/session.h"

#include <fmt/format.h>

#include <stdexcept>

#include "core/store/database.h"
#include "core/text/text.h"
#include "workflow/options.h"

namespace opcost {

SettingsStamp settings_stamp(const ReplayOptions& replay, const MeasureConfig& config) {
  SettingsStamp stamp;
  stamp.settings = settings_of(replay, config);  // the options registry's names and canonical values
  stamp.key = settings_key(stamp.settings);
  return stamp;
}

std::string MeasurementStore::store(Measurement& m, const SettingsStamp& stamp,
                                    const std::function<void(int64_t)>& also) {
  m.settings = stamp.settings;
  m.settings_key = stamp.key;
  if (!db_) return "";
  try {
    m.db_id = db_->insert(m, also);  // each its own transaction: an interrupted run keeps what it measured
    return "";
  } catch (const DatabaseError& e) {
    if (e.stops_writing()) stopped_ = e.what();
    return e.what();
  }
}

MeasuringSession::MeasuringSession(Database* db, SessionOptions options, const Notes& notes)
    : options_(std::move(options)), notes_(notes), store_(db) {
  options_.config.progress = notes_.progress;
}

MeasuringSession::~MeasuringSession() = default;

const std::string& MeasuringSession::device_name() const {
  if (!runner_) throw std::logic_error("MeasuringSession: no call was prepared yet");
  return runner_->environment().device_name;
}

const std::string& MeasuringSession::energy_unavailable_reason() const {
  if (!runner_) throw std::logic_error("MeasuringSession: no call was prepared yet");
  return runner_->energy_unavailable_reason();
}

bool MeasuringSession::shares_counter_windows() { return runner_ && runner_->shares_counter_windows(); }

Runner& MeasuringSession::runner_for(const PreparedCall& prepared, const ReplayOptions& replay) {
  if (runner_) return *runner_;
  runner_ = std::make_unique<Runner>(prepared.device_kind(), prepared.device_index(), options_.config);
  if (options_.say_choices && replay.device == "auto" && prepared.device_kind() == "cpu")
    notes_.say(fmt::format("no CUDA GPU found; measuring on the CPU ({})", runner_->environment().device_name));
  if (!runner_->energy_unavailable_reason().empty())
    notes_.say("energy unavailable: " + runner_->energy_unavailable_reason());
  return *runner_;
}

int64_t MeasuringSession::stored_row(const PreparedCall& prepared, const ReplayOptions& replay) const {
  if (!options_.resume || !store_.database()) return -1;
  // The same call at the same settings: a row made at another budget or seed is another result.
  const auto key =
      Database::Key::of(prepared.op(), prepared.overload(), prepared.canonical_args(), device_name(), replay.cache_mode,
                        prepared.autocast(), settings_stamp(replay, options_.config).key);
  const auto row = store_.database()->lookup(key);
  return row ? row->db_id : -1;
}

SessionOutcome MeasuringSession::measure(const OpCall& call, const ReplayOptions& replay) {
  return measure(call, replay, {});
}

std::unique_ptr<PreparedCall> MeasuringSession::prepare(const OpCall& call, const ReplayOptions& replay,
                                                        SessionOutcome& out) {
  auto prepared = PreparedCall::prepare(call, replay);
  out.resolution_note = prepared->resolution_note();
  if (options_.say_choices && !out.resolution_note.empty()) notes_.say(out.resolution_note);
  runner_for(*prepared, replay);
  if (const int64_t row = stored_row(*prepared, replay); row >= 0) {
    out.kind = SessionOutcome::Kind::kSkipped;
    out.existing_row = row;
    return nullptr;
  }
  return prepared;
}

namespace {

// A call's failure as its outcome. The op rejecting its arguments (shapes, memory) is bad
// input, not a failed measurement.
void take_failure(SessionOutcome& out, const std::exception& e) {
  const auto* replay_error = dynamic_cast<const ReplayError*>(&e);
  const bool refused = replay_error != nullptr;
  if (replay_error) out.error_kind = replay_error->kind();
  out.kind = refused ? SessionOutcome::Kind::kBadInput : SessionOutcome::Kind::kFailed;
  out.from_arguments = refused || dynamic_cast<const std::invalid_argument*>(&e) != nullptr;
  out.error = e.what();
}

}  // namespace

SessionOutcome MeasuringSession::measure(const OpCall& call, const ReplayOptions& replay,
                                         const std::function<void(int64_t)>& also) {
  SessionOutcome out;
  out.kind = SessionOutcome::Kind::kMeasured;
  try {
    auto prepared = prepare(call, replay, out);
    if (!prepared) return out;  // resume: stored already
    out.measurement = runner_->measure(*prepared);
    notes_.done();
  } catch (const std::exception& e) {  // one failure never loses the others
    notes_.done();
    take_failure(out, e);
    return out;
  }
  // Stored as it lands; a measurement the database refuses is still returned, never lost.
  out.not_stored = store_.store(*out.measurement, settings_stamp(replay, options_.config), also);
  if (!out.not_stored.empty()) out.kind = SessionOutcome::Kind::kFailed;
  return out;
}

std::vector<SessionOutcome> MeasuringSession::measure_group(
    const std::vector<OpCall>& calls, const ReplayOptions& replay,
    const std::vector<std::optional<MeasureConfig::Whole>>& parts) {
  return measure_group(calls, replay, parts, {});
}

std::vector<SessionOutcome> MeasuringSession::measure_group(
    const std::vector<OpCall>& calls, const ReplayOptions& replay,
    const std::vector<std::optional<MeasureConfig::Whole>>& parts,
    const std::function<void(std::size_t, int64_t)>& also) {
  if (parts.size() != calls.size())
    throw std::invalid_argument(
        fmt::format("MeasuringSession::measure_group: {} calls but {} parts", calls.size(), parts.size()));
  std::vector<SessionOutcome> outs(calls.size());
  std::vector<std::unique_ptr<PreparedCall>> prepared(calls.size());
  std::vector<PreparedCall*> measured;
  std::vector<std::optional<MeasureConfig::Whole>> measured_parts;
  std::vector<std::size_t> which;  // the outcome each measured call fills
  for (std::size_t i = 0; i < calls.size(); ++i) {
    outs[i].kind = SessionOutcome::Kind::kMeasured;
    try {
      prepared[i] = prepare(calls[i], replay, outs[i]);
    } catch (const std::exception& e) {  // a call that cannot be made is its own outcome
      take_failure(outs[i], e);
      continue;
    }
    if (!prepared[i]) continue;
    measured.push_back(prepared[i].get());
    measured_parts.push_back(parts[i]);
    which.push_back(i);
  }
  if (measured.empty()) {
    retry_out_of_memory_alone(calls, replay, parts, also, std::move(prepared), outs);
    return outs;
  }
  std::vector<Runner::GroupResult> results;
  try {
    results = runner_->measure_group(measured, measured_parts);
  } catch (const std::exception& e) {  // the group as a whole failed: each call says so
    notes_.done();
    for (std::size_t i : which) take_failure(outs[i], e);
    retry_out_of_memory_alone(calls, replay, parts, also, std::move(prepared), outs);
    return outs;
  }
  notes_.done();
  const SettingsStamp stamp = settings_stamp(replay, options_.config);
  for (std::size_t k = 0; k < which.size(); ++k) {
    SessionOutcome& out = outs[which[k]];
    if (results[k].error) {
      try {
        std::rethrow_exception(results[k].error);
      } catch (const std::exception& e) {
        take_failure(out, e);
      } catch (...) {
        out.kind = SessionOutcome::Kind::kFailed;
        out.error = "an unknown error";
      }
      continue;
    }
    out.measurement = std::move(results[k].measurement);
    // Stored one by one, as measure() stores: a refused row is still returned.
    try {
      std::function<void(int64_t)> also_k;
      if (also) also_k = [&also, i = which[k]](int64_t id) { also(i, id); };
      out.not_stored = store_.store(*out.measurement, stamp, also_k);
    } catch (const std::exception& e) {  // `also` refused this row: the others go on
      out.also_error = std::current_exception();
      out.not_stored = e.what();
    }
    if (!out.not_stored.empty()) out.kind = SessionOutcome::Kind::kFailed;
  }
  retry_out_of_memory_alone(calls, replay, parts, also, std::move(prepared), outs);
  return outs;
}

void MeasuringSession::retry_out_of_memory_alone(const std::vector<OpCall>& calls, const ReplayOptions& replay,
                                                 const std::vector<std::optional<MeasureConfig::Whole>>& parts,
                                                 const std::function<void(std::size_t, int64_t)>& also,
                                                 std::vector<std::unique_ptr<PreparedCall>> group,
                                                 std::vector<SessionOutcome>& outs) {
  // A call out of memory beside the group's other inputs and graphs (they stay allocated while
  // the group runs) is measured again alone once they are freed, with its share of the whole, as
  // it would have been measured without the group: a sweep's item or a step's operator alike.
  if (calls.size() < 2) return;  // measured alone already
  std::vector<std::size_t> again;
  for (std::size_t i = 0; i < outs.size(); ++i)
    if (!outs[i].measurement && outs[i].error_kind == ReplayError::Kind::kOutOfMemory) again.push_back(i);
  if (again.empty()) return;
  group.clear();
  const MeasureConfig group_config = options_.config;
  for (std::size_t i : again) {
    if (!stopped().empty()) break;
    notes_.say(fmt::format("{}: out of memory beside its group's other calls ({} in all); measuring it again alone",
                           elide(calls[i].display_name() + " " + format_args(calls[i].args), 200), calls.size()));
    MeasureConfig alone = group_config;
    alone.part_of = parts[i];
    reconfigure(alone);
    std::function<void(int64_t)> also_i;
    if (also) also_i = [&also, i](int64_t id) { also(i, id); };
    try {
      outs[i] = measure(calls[i], replay, also_i);
    } catch (const std::exception& e) {  // `also` refused its row (a sweep's LeaseLost), as in the group
      outs[i] = SessionOutcome{};
      outs[i].kind = SessionOutcome::Kind::kFailed;
      outs[i].also_error = std::current_exception();
      outs[i].not_stored = e.what();
    }
  }
  reconfigure(group_config);
}

std::string MeasuringSession::store(Measurement& m, const ReplayOptions& replay, const MeasureConfig& ran_with) {
  return store_.store(m, settings_stamp(replay, ran_with));
}

void MeasuringSession::reconfigure(const MeasureConfig& config) {
  options_.config = config;
  options_.config.progress = notes_.progress;
  if (runner_) runner_->reconfigure(options_.config);
}

}  // namespace opcost
