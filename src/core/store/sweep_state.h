#pragma once
// Sweep state, kept in the measurement database beside the measurements (never in the YAML):
// each item is pending, running, done or failed (with the reason). An item is keyed by its
// canonical signature, its measurement settings and the GPU model, so a sweep run again skips
// what is done, and two sweeps (or two models of a model list) that share an item measure it
// once. A worker claims an item (running, with its name), and its measurement lands in the
// same transaction that marks the item done: a killed worker loses at most the item in hand,
// which goes back to pending, and nothing is measured twice. The same queue serves workers on
// one machine (SQLite or PostgreSQL) and on many (PostgreSQL: claims lock their row and skip the
// rows other workers hold). Torch-free.
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace opcost {

class Database;
class SqlConnection;

// The tables, made (if missing) when a database is opened for writing.
void create_sweep_tables(SqlConnection& c);

enum class ItemStatus { kPending, kRunning, kDone, kFailed };
const char* to_string(ItemStatus s);

// The key of an item: its signature hash (signature_hash), the GPU model (device name), the
// cache mode, the autocast dtype and the settings that decide what was measured.
std::string sweep_item_key(const std::string& signature_hash, const std::string& device_name,
                           const std::string& cache_mode, const std::string& autocast, const std::string& settings);

// An item as a sweep enrolls it.
struct SweepItem {
  std::string key;
  std::string call;      // the call line `opcost measure` accepts
  std::string autocast;  // "" or the dtype it replays under (an inventory's)
  nlohmann::json axes;   // axis name → value (a grid's), or the models that call it (a model list's)
};

struct ItemState {
  std::string key, call, autocast;
  nlohmann::json axes;
  int64_t position = 0;  // in its sweep
  ItemStatus status = ItemStatus::kPending;
  std::string reason;                     // failed: why
  std::optional<int64_t> measurement_id;  // done: the row
  int64_t attempts = 0;                   // claims so far
  std::string worker;                     // running (or last run) by
};

// A sweep as one run of it sees it: its name and its scope, the GPU model, cache mode and
// measurement settings that every key it enrolls carries. The same grid run at another target
// enrolls other keys under another scope: claims and counts see one scope, so a run never
// measures (or counts) an item made for other settings.
struct SweepId {
  std::string name;
  std::string scope;
};

// A worker's item was taken by another worker after its lease ran out (the worker stalled
// longer than the lease): its result is not stored, since the other worker's will be.
class LeaseLost : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How long a worker holds an item without renewing it (a heartbeat every lease / 4), and how
// many tries may end with the worker gone before the item is failed.
constexpr double kSweepLeaseSeconds = 60;
struct SweepLease {
  double seconds = kSweepLeaseSeconds;  // a worker that stops renewing it loses the item after this
  int64_t max_attempts = 2;             // tries whose worker died or stopped renewing
};

struct SweepCounts {
  std::size_t pending = 0, running = 0, done = 0, failed = 0;
  std::size_t total() const { return pending + running + done + failed; }
};

class SweepState {
 public:
  // A database opened read-only from before sweeps has no sweep tables: every query then
  // answers as for a sweep never run.
  explicit SweepState(Database& db);

  enum class Reset {
    kNone,    // done and failed items stay as they are
    kFailed,  // failed items go back to pending (--retry-failed)
    kAll,     // every item of the sweep goes back to pending (--force)
  };
  // Adds the sweep's items in order; an item known already (from this sweep or another) keeps
  // its state unless `reset` says otherwise. `failed_now`: items that are known to fail before
  // anything runs (a shape the op's schema rejects), with the reason; they are marked failed.
  void enroll(const SweepId& sweep, const std::vector<SweepItem>& items, Reset reset,
              const std::vector<std::pair<SweepItem, std::string>>& failed_now = {});
  // Running items whose worker is a process of this host that no longer runs (`alive` says
  // so) go back to pending, their claim not counted as an attempt. Returns how many. (Items whose lease ran out need no
  // call: claim takes them.)
  std::size_t requeue_abandoned(const std::function<bool(const std::string& worker)>& alive);
  using Lease = SweepLease;  // outside the class: a default argument below needs it complete
  // The sweep's next pending item, or a running one whose lease ran out, now running for
  // `worker` under `lease` (renewed by heartbeat()); none when nothing is left to take. An item
  // whose lease ran out on max_attempts tries is failed instead, with why.
  std::optional<ItemState> claim(const SweepId& sweep, const std::string& worker, const Lease& lease = {});
  // Renews `worker`'s lease on its running item; false when the item is no longer its own.
  bool heartbeat(const std::string& key, const std::string& worker, double lease_s = kSweepLeaseSeconds);
  // A worker died while measuring the item: it goes back to pending for another try, or, once
  // `max_attempts` workers died on it, it is failed with `reason` (an item that crashes the
  // process every time). Returns true when it was failed. Not `alone`: the worker held other
  // items too (measured together), so the death is not known to be this item's: it goes back
  // to pending whatever its attempts, and its next worker measures it alone (an item claimed
  // again, attempts above 1).
  bool worker_died(const std::string& key, const std::string& reason, int64_t max_attempts, bool alone = true);
  // Inside Database::insert's transaction (its `also`), with the new row's id. Throws LeaseLost
  // when `worker` no longer holds the item (its lease ran out and another worker took it): the
  // insert then rolls back, so no item is stored twice.
  void mark_done(const std::string& key, const std::string& worker, int64_t measurement_id);
  // An item `worker` holds failed (nothing happens when it no longer holds it).
  void mark_failed(const std::string& key, const std::string& worker, const std::string& reason);

  SweepCounts counts(const SweepId& sweep) const;
  // Items the sweep (by name) has in other scopes: runs at other settings or on another device.
  std::size_t items_elsewhere(const SweepId& sweep) const;
  std::vector<ItemState> items(const SweepId& sweep, std::optional<ItemStatus> only = std::nullopt) const;
  // An item's status now (none for a key the database does not have).
  std::optional<ItemStatus> item_status(const std::string& key) const;
  // The items of the sweep that `worker` holds (running under its name): a worker killed
  // between claiming items and telling its supervisor which still holds them here.
  std::vector<ItemState> held_by(const SweepId& sweep, const std::string& worker) const;
  std::vector<std::string> sweeps() const;  // names of every enrolled sweep
  // For each measurement that a sweep made: that sweep and the item's axis values (the first
  // sweep that has the item, or `sweep` only when given).
  struct Origin {
    std::string sweep;
    nlohmann::json axes;
  };
  std::map<int64_t, Origin> origins(const std::string& sweep = "") const;
  // Its done items: the mean time they took to measure (their rows' `seconds`; 0 when none is
  // done) and the distinct workers that measured them.
  struct DoneSummary {
    double mean_seconds = 0;
    std::size_t workers = 0;
  };
  DoneSummary done_summary(const SweepId& sweep) const;

 private:
  SqlConnection& db_;
  bool has_tables_ = false;
};

}  // namespace opcost
