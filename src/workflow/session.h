#pragma once
// One measuring session: what measure, predict and sweep share when they measure operator
// calls one after another. A call is prepared, the runner made for the first call's device
// (not before: a run whose calls all fail never opens NVML or warms a GPU), the call measured
// and stored at once, and a database that stops taking rows (full, read-only, failing) stops
// the run without losing the measurement in hand. Torch-free header.
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/measurement.h"
#include "core/spec/op_call.h"
#include "torch/replay.h"
#include "torch/runner.h"
#include "workflow/notes.h"

namespace opcost {

class Database;

// The settings a measurement is stamped with (Measurement::settings, settings_key): the
// options registry's names and values, and the hash of those that change the figure.
struct SettingsStamp {
  Settings settings;
  std::string key;
};
// The stamp of a measurement made with these replay options and loops (workflow/options.h).
SettingsStamp settings_stamp(const ReplayOptions& replay, const MeasureConfig& config);

// The store-and-stop policy: each measurement is stamped with its settings and inserted in
// its own transaction as it lands; a refusal is said, never thrown, so that the measurement
// in hand is still returned; a refusal that no later write can get past (DatabaseError's
// stops_writing) stops the run. Without a database nothing is stored and nothing stops.
class MeasurementStore {
 public:
  explicit MeasurementStore(Database* db) : db_(db) {}
  // Sets m.settings, m.settings_key and, once stored, m.db_id. Returns "" when stored (or
  // when there is no database), else the database's message. `also` runs inside the insert's
  // transaction (Database::insert); what it throws other than DatabaseError goes on to the caller.
  std::string store(Measurement& m, const SettingsStamp& stamp, const std::function<void(int64_t)>& also = {});
  // Why the database stopped taking rows; "" while it takes them.
  const std::string& stopped() const { return stopped_; }
  Database* database() const { return db_; }

 private:
  Database* db_;
  std::string stopped_;
};

// What became of one call given to a session.
struct SessionOutcome {
  enum class Kind { kMeasured, kSkipped, kBadInput, kFailed };
  Kind kind = Kind::kFailed;
  std::optional<Measurement> measurement;  // kMeasured, and kFailed when only storing failed
  std::string error;                       // kBadInput / kFailed: the exception's text, as thrown
  // The error came from making the call's arguments (the replay refused them, or their text did
  // not parse), not from running the operator on them.
  bool from_arguments = false;
  // kBadInput / kFailed: the replay's kind of error (ReplayError::Kind), kOther for any other.
  ReplayError::Kind error_kind = ReplayError::Kind::kOther;
  std::string not_stored;  // the database refused the measurement (it is still here)
  // What a group's `also` threw for this call inside the insert's transaction (the insert rolled
  // back: a sweep's LeaseLost), for its caller to tell apart; null when nothing was thrown.
  std::exception_ptr also_error;
  int64_t existing_row = -1;    // kSkipped: the row that made it unnecessary (resume)
  std::string resolution_note;  // how the overload was chosen, when the call named none
};

// What the stages of a workflow need of a session: a unit test fakes it (no torch, no device).
class OperatorSession {
 public:
  virtual ~OperatorSession() = default;
  // Prepares, measures and stores one call; never throws for the call's own failure.
  virtual SessionOutcome measure(const OpCall& call, const ReplayOptions& replay) = 0;
  // The same for several calls measured together (Runner::measure_group: their energies from one
  // loop's shared counter windows where the counter is slow), one outcome per call in order,
  // each stored as it would be alone. `parts[i]`: call i's share of a whole (the loops' part_of
  // for it), or none. A call that fails to prepare or measure is its own outcome.
  virtual std::vector<SessionOutcome> measure_group(const std::vector<OpCall>& calls, const ReplayOptions& replay,
                                                    const std::vector<std::optional<MeasureConfig::Whole>>& parts) = 0;
  // Stores a measurement made elsewhere (a whole model step) with the loops it ran with.
  // Returns "" or why it was not stored.
  virtual std::string store(Measurement& m, const ReplayOptions& replay, const MeasureConfig& ran_with) = 0;
  // Later calls get these loops (energy stays as the session began: on or off).
  virtual void reconfigure(const MeasureConfig& config) = 0;
  // Why the database stopped taking rows: nothing more should be measured. "" while it takes them.
  virtual const std::string& stopped() const = 0;
};

struct SessionOptions {
  MeasureConfig config;  // the loops; its `progress` is replaced by the notes'
  // Skip a call whose row with the same identity key (settings included) is stored already.
  bool resume = false;
  // Say how an overload was chosen, and that `auto` found no GPU (measure's notes; predict and
  // sweep say their own).
  bool say_choices = false;
};

class MeasuringSession final : public OperatorSession {
 public:
  // `db` may be null (nothing stored); it must outlive the session.
  MeasuringSession(Database* db, SessionOptions options, const Notes& notes);
  ~MeasuringSession() override;

  SessionOutcome measure(const OpCall& call, const ReplayOptions& replay) override;
  // The same, with `also` run inside the insert's transaction (a sweep marks its item done
  // there). LeaseLost and anything else `also` throws, other than DatabaseError, go on.
  SessionOutcome measure(const OpCall& call, const ReplayOptions& replay, const std::function<void(int64_t)>& also);
  std::vector<SessionOutcome> measure_group(const std::vector<OpCall>& calls, const ReplayOptions& replay,
                                            const std::vector<std::optional<MeasureConfig::Whole>>& parts) override;
  // The same, with `also(i, row id)` run inside call i's insert transaction (a sweep marks its
  // item done there). What `also` throws, other than DatabaseError, is that call's also_error:
  // its row is not stored, and the group's other calls go on.
  std::vector<SessionOutcome> measure_group(const std::vector<OpCall>& calls, const ReplayOptions& replay,
                                            const std::vector<std::optional<MeasureConfig::Whole>>& parts,
                                            const std::function<void(std::size_t, int64_t)>& also);
  std::string store(Measurement& m, const ReplayOptions& replay, const MeasureConfig& ran_with) override;
  void reconfigure(const MeasureConfig& config) override;
  const std::string& stopped() const override { return store_.stopped(); }

  // Once the first call was prepared: the device measured on, and why energy is unavailable.
  bool started() const { return runner_ != nullptr; }
  const std::string& device_name() const;
  const std::string& energy_unavailable_reason() const;
  // Whether a group's energies share one loop's counter windows on this device (a counter as
  // slow as NVML's, energy on): where they do not, measuring calls together saves nothing.
  bool shares_counter_windows();

 private:
  Runner& runner_for(const PreparedCall& prepared, const ReplayOptions& replay);
  // The row that makes this call unnecessary (resume), or -1.
  int64_t stored_row(const PreparedCall& prepared, const ReplayOptions& replay) const;
  // Prepares `call` and its runner: the prepared call, or `out` says why not (a failure, or
  // skipped on resume).
  std::unique_ptr<PreparedCall> prepare(const OpCall& call, const ReplayOptions& replay, SessionOutcome& out);
  // measure_group's calls out of memory beside the others: measured again alone, `group` (the
  // group's prepared calls, their inputs) freed first.
  void retry_out_of_memory_alone(const std::vector<OpCall>& calls, const ReplayOptions& replay,
                                 const std::vector<std::optional<MeasureConfig::Whole>>& parts,
                                 const std::function<void(std::size_t, int64_t)>& also,
                                 std::vector<std::unique_ptr<PreparedCall>> group, std::vector<SessionOutcome>& outs);

  SessionOptions options_;
  Notes notes_;
  MeasurementStore store_;
  std::unique_ptr<Runner> runner_;
};

}  // namespace opcost
