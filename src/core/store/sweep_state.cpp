#include "core/store/sweep_state.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <stdexcept>

#include "core/measurement.h"
#include "core/spec/op_call.h"
#include "core/store/database.h"
#include "core/store/sql_connection.h"

namespace opcost {

void create_sweep_tables(SqlConnection& c) {
  const SqlDialect& d = c.dialect();
  // sweep_items: one row per key, shared by every sweep that has it; sweep_members: which
  // sweeps have it, where, and with which axis values.
  c.exec(
      fmt::format("CREATE TABLE IF NOT EXISTS sweep_items (key TEXT PRIMARY KEY, call TEXT NOT NULL, "
                  "autocast TEXT NOT NULL DEFAULT '', status TEXT NOT NULL, reason TEXT, measurement_id {0}, "
                  "attempts {0} NOT NULL DEFAULT 0, worker TEXT, updated_at TEXT);"
                  "CREATE INDEX IF NOT EXISTS sweep_items_status ON sweep_items(status);"
                  "CREATE TABLE IF NOT EXISTS sweep_members (sweep TEXT NOT NULL, key TEXT NOT NULL, "
                  "position {0} NOT NULL, axes TEXT NOT NULL, PRIMARY KEY (sweep, key));"
                  "CREATE INDEX IF NOT EXISTS sweep_members_order ON sweep_members(sweep, position);"
                  // Every measurement an item got (--force adds more): the export gives each its axes.
                  "CREATE TABLE IF NOT EXISTS sweep_results (measurement_id {0} PRIMARY KEY, key TEXT NOT NULL);",
                  d.integer));
  // Tables made before leases get the column (NULL: no lease, judged by the worker's process).
  // lease_until: seconds since the epoch; a running item past it has lost its worker.
  const auto items = c.columns("sweep_items");
  if (std::find(items.begin(), items.end(), "lease_until") == items.end())
    c.exec(fmt::format("ALTER TABLE sweep_items ADD COLUMN lease_until {};", d.real));
  // Members made before scopes get '' (a scope no run has): a run enrolls its keys again under
  // its own, and the items keep their states.
  const auto members = c.columns("sweep_members");
  if (std::find(members.begin(), members.end(), "scope") == members.end())
    c.exec("ALTER TABLE sweep_members ADD COLUMN scope TEXT NOT NULL DEFAULT '';");
  c.exec("CREATE INDEX IF NOT EXISTS sweep_members_scope ON sweep_members(sweep, scope, position);");
}

const char* to_string(ItemStatus s) {
  switch (s) {
    case ItemStatus::kPending:
      return "pending";
    case ItemStatus::kRunning:
      return "running";
    case ItemStatus::kDone:
      return "done";
    case ItemStatus::kFailed:
      return "failed";
  }
  return "?";
}

namespace {

ItemStatus status_of(const std::string& text) {
  for (auto s : {ItemStatus::kPending, ItemStatus::kRunning, ItemStatus::kDone, ItemStatus::kFailed})
    if (text == to_string(s)) return s;
  throw std::runtime_error(fmt::format("sweep_items: unknown status '{}' (a damaged file?)", text));
}

std::string text_or_empty(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : ""; }

double epoch_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string sweep_item_key(const std::string& signature_hash, const std::string& device_name,
                           const std::string& cache_mode, const std::string& autocast, const std::string& settings) {
  return stable_hash(fmt::format("{}\n{}\n{}\n{}\n{}", signature_hash, device_name, cache_mode, autocast, settings));
}

SweepState::SweepState(Database& db) : db_(db.connection()) {
  has_tables_ = db_.has_table("sweep_items") && db_.has_table("sweep_members") && db_.has_table("sweep_results");
}

void SweepState::enroll(const SweepId& sweep, const std::vector<SweepItem>& items, Reset reset,
                        const std::vector<std::pair<SweepItem, std::string>>& failed_now) {
  in_transaction(db_, [&] {
    auto add = db_.prepare(
        "INSERT INTO sweep_items (key, call, autocast, status, updated_at) VALUES (?1, ?2, ?3, 'pending', ?4) "
        "ON CONFLICT(key) DO NOTHING");
    auto member = db_.prepare(
        "INSERT INTO sweep_members (sweep, key, position, axes, scope) VALUES (?1, ?2, ?3, ?4, ?5) "
        "ON CONFLICT(sweep, key) DO UPDATE SET position = excluded.position, axes = excluded.axes, "
        "scope = excluded.scope");
    // A reset never touches an item a live worker holds: running stays running. Its attempts
    // start again, as for an item never tried.
    auto back = db_.prepare(
        reset == Reset::kAll
            ? "UPDATE sweep_items SET status = 'pending', reason = NULL, attempts = 0, updated_at = ?2 WHERE "
              "key = ?1 AND status != 'running'"
            : "UPDATE sweep_items SET status = 'pending', reason = NULL, attempts = 0, updated_at = ?2 WHERE "
              "key = ?1 AND status = 'failed'");
    auto fail = db_.prepare(
        "UPDATE sweep_items SET status = 'failed', reason = ?2, updated_at = ?3 WHERE key = ?1 AND "
        "status = 'pending'");
    const std::string now = utc_timestamp();
    int64_t position = 0;
    auto enroll_one = [&](const SweepItem& it) {
      for (auto* s : {add.get(), member.get(), back.get(), fail.get()}) s->reset();
      add->bind_all({it.key, it.call, it.autocast, now});
      add->step();
      member->bind_all({sweep.name, it.key, position++, it.axes.dump(), sweep.scope});
      member->step();
      if (reset != Reset::kNone) {
        back->bind_all({it.key, now});
        back->step();
      }
    };
    for (const auto& it : items) enroll_one(it);
    for (const auto& [it, reason] : failed_now) {
      enroll_one(it);
      fail->bind_all({it.key, reason, now});
      fail->step();
    }
    return 0;
  });
}

std::size_t SweepState::requeue_abandoned(const std::function<bool(const std::string&)>& alive) {
  std::vector<std::pair<std::string, std::string>> running;  // key, worker
  for (auto s = db_.prepare("SELECT key, worker FROM sweep_items WHERE status = 'running'"); s->step();)
    running.emplace_back(s->column(0).get<std::string>(), text_or_empty(s->column(1)));
  // Each item back only if the same worker still holds it: another may have finished it since.
  // The claim is not counted as an attempt: the run was stopped (Ctrl-C, a job's TERM, a sweep
  // killed whole), which is no item's doing, and an item claimed again after an attempt is
  // measured alone (workflow/sweep.cpp).
  auto back = db_.prepare(
      "UPDATE sweep_items SET status = 'pending', attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END, "
      "updated_at = ?3 WHERE key = ?1 AND worker = ?2 AND status = 'running'");
  std::size_t requeued = 0;
  for (const auto& [key, worker] : running) {
    if (alive(worker)) continue;
    back->reset();
    back->bind_all({key, worker, utc_timestamp()});
    back->step();
    requeued += std::size_t(back->changed_rows());
  }
  return requeued;
}

namespace {

constexpr const char* kItemColumns =
    "i.key, i.call, i.autocast, m.axes, m.position, i.status, i.reason, i.measurement_id, i.attempts, i.worker";

ItemState item_from(SqlStatement& s) {
  ItemState it;
  it.key = s.column(0).get<std::string>();
  it.call = s.column(1).get<std::string>();
  it.autocast = text_or_empty(s.column(2));
  it.axes = nlohmann::json::parse(s.column(3).get<std::string>());
  it.position = s.column(4).get<int64_t>();
  it.status = status_of(s.column(5).get<std::string>());
  it.reason = text_or_empty(s.column(6));
  if (s.column(7).is_number_integer()) it.measurement_id = s.column(7).get<int64_t>();
  it.attempts = s.column(8).get<int64_t>();
  it.worker = text_or_empty(s.column(9));
  return it;
}

}  // namespace

std::optional<ItemState> SweepState::claim(const SweepId& sweep, const std::string& worker, const Lease& lease) {
  // SQLite: the write transaction (BEGIN IMMEDIATE) excludes every other worker. PostgreSQL:
  // the candidate row is locked (FOR UPDATE … SKIP LOCKED), so workers claiming at once each
  // get another item without waiting on each other.
  return in_transaction(db_, [&]() -> std::optional<ItemState> {
    auto next = db_.prepare(fmt::format(
        "SELECT {} FROM sweep_members m JOIN sweep_items i ON i.key = m.key WHERE m.sweep = ?1 AND m.scope = ?2 "
        "AND (i.status = 'pending' OR (i.status = 'running' AND i.lease_until < ?3)) ORDER BY m.position "
        "LIMIT 1{}",
        kItemColumns, db_.dialect().claim_lock));
    auto take = db_.prepare(
        "UPDATE sweep_items SET status = 'running', worker = ?2, attempts = attempts + 1, updated_at = ?3, "
        "lease_until = ?4 WHERE key = ?1");
    auto give_up = db_.prepare("UPDATE sweep_items SET status = 'failed', reason = ?2, updated_at = ?3 WHERE key = ?1");
    while (true) {
      const double now = epoch_seconds();
      next->reset();
      next->bind_all({sweep.name, sweep.scope, now});
      if (!next->step()) return std::nullopt;
      ItemState it = item_from(*next);
      // A running item whose lease ran out: its worker stopped renewing it (killed, a lost
      // node). Another try, unless that happened to every try so far.
      if (it.status == ItemStatus::kRunning && it.attempts >= lease.max_attempts) {
        give_up->reset();
        give_up->bind_all({it.key,
                           fmt::format("its worker stopped renewing the lease {} times (killed, or its node lost): "
                                       "last by {}",
                                       it.attempts, it.worker),
                           utc_timestamp()});
        give_up->step();
        continue;
      }
      take->reset();
      take->bind_all({it.key, worker, utc_timestamp(), now + lease.seconds});
      take->step();
      it.status = ItemStatus::kRunning;
      it.worker = worker;
      ++it.attempts;
      return it;
    }
  });
}

bool SweepState::heartbeat(const std::string& key, const std::string& worker, double lease_s) {
  return db_.execute("UPDATE sweep_items SET lease_until = ?3 WHERE key = ?1 AND worker = ?2 AND status = 'running'",
                     {key, worker, epoch_seconds() + lease_s}) == 1;
}

bool SweepState::worker_died(const std::string& key, const std::string& reason, int64_t max_attempts, bool alone) {
  return in_transaction(db_, [&] {
    db_.execute(
        "UPDATE sweep_items SET status = CASE WHEN attempts >= ?3 THEN 'failed' ELSE 'pending' END, "
        "reason = ?2, updated_at = ?4 WHERE key = ?1 AND status = 'running'",
        // Not alone: no number of attempts fails it (?3 above any count).
        {key, reason, alone ? max_attempts : std::numeric_limits<int64_t>::max(), utc_timestamp()});
    auto now = db_.prepare("SELECT status FROM sweep_items WHERE key = ?1");
    now->bind(1, key);
    return now->step() && now->column(0).get<std::string>() == "failed";
  });
}

void SweepState::mark_done(const std::string& key, const std::string& worker, int64_t measurement_id) {
  const int64_t taken = db_.execute(
      "UPDATE sweep_items SET status = 'done', reason = NULL, measurement_id = ?2, updated_at = ?3 WHERE key = ?1 "
      "AND status = 'running' AND worker = ?4",
      {key, measurement_id, utc_timestamp(), worker});
  if (taken != 1) {
    auto known = db_.prepare("SELECT status, worker FROM sweep_items WHERE key = ?1");
    known->bind(1, key);
    if (!known->step())
      throw DatabaseError(
          DatabaseError::Kind::kOther,
          fmt::format("{}: sweep item {} is not in the database (was it removed?)", db_.location(), key));
    throw LeaseLost(fmt::format("its lease ran out and it is now {} by {}", known->column(0).get<std::string>(),
                                text_or_empty(known->column(1))));
  }
  db_.execute("INSERT INTO sweep_results (measurement_id, key) VALUES (?1, ?2)", {measurement_id, key});
}

void SweepState::mark_failed(const std::string& key, const std::string& worker, const std::string& reason) {
  db_.execute(
      "UPDATE sweep_items SET status = 'failed', reason = ?2, updated_at = ?3 WHERE key = ?1 AND "
      "status = 'running' AND worker = ?4",
      {key, reason, utc_timestamp(), worker});
}

SweepCounts SweepState::counts(const SweepId& sweep) const {
  if (!has_tables_) return {};
  auto s = db_.query(
      "SELECT i.status, COUNT(*) FROM sweep_members m JOIN sweep_items i ON i.key = m.key WHERE m.sweep = ?1 "
      "AND m.scope = ?2 GROUP BY i.status",
      {sweep.name, sweep.scope});
  SweepCounts c;
  while (s->step()) {
    const auto n = std::size_t(s->column(1).get<int64_t>());
    switch (status_of(s->column(0).get<std::string>())) {
      case ItemStatus::kPending:
        c.pending = n;
        break;
      case ItemStatus::kRunning:
        c.running = n;
        break;
      case ItemStatus::kDone:
        c.done = n;
        break;
      case ItemStatus::kFailed:
        c.failed = n;
        break;
    }
  }
  return c;
}

std::size_t SweepState::items_elsewhere(const SweepId& sweep) const {
  if (!has_tables_) return 0;
  auto s = db_.query("SELECT COUNT(*) FROM sweep_members WHERE sweep = ?1 AND scope != ?2", {sweep.name, sweep.scope});
  s->step();
  return std::size_t(s->column(0).get<int64_t>());
}

std::vector<ItemState> SweepState::items(const SweepId& sweep, std::optional<ItemStatus> only) const {
  if (!has_tables_) return {};
  auto s =
      db_.query(fmt::format("SELECT {} FROM sweep_members m JOIN sweep_items i ON i.key = m.key WHERE m.sweep = ?1 AND "
                            "m.scope = ?3 AND (?2 = '' OR i.status = ?2) ORDER BY m.position",
                            kItemColumns),
                {sweep.name, only ? to_string(*only) : "", sweep.scope});
  std::vector<ItemState> out;
  while (s->step()) out.push_back(item_from(*s));
  return out;
}

std::optional<ItemStatus> SweepState::item_status(const std::string& key) const {
  if (!has_tables_) return std::nullopt;
  auto s = db_.query("SELECT status FROM sweep_items WHERE key = ?1", {key});
  if (!s->step()) return std::nullopt;
  return status_of(s->column(0).get<std::string>());
}

std::vector<ItemState> SweepState::held_by(const SweepId& sweep, const std::string& worker) const {
  std::vector<ItemState> out;
  if (!has_tables_) return out;
  auto s =
      db_.query(fmt::format("SELECT {} FROM sweep_members m JOIN sweep_items i ON i.key = m.key WHERE m.sweep = ?1 "
                            "AND m.scope = ?2 AND i.status = 'running' AND i.worker = ?3 ORDER BY m.position",
                            kItemColumns),
                {sweep.name, sweep.scope, worker});
  while (s->step()) out.push_back(item_from(*s));
  return out;
}

SweepState::DoneSummary SweepState::done_summary(const SweepId& sweep) const {
  if (!has_tables_) return {};
  auto s = db_.query(
      "SELECT AVG(me.seconds), COUNT(DISTINCT i.worker) FROM sweep_members m JOIN sweep_items i ON i.key = m.key "
      "LEFT JOIN measurements me ON me.id = i.measurement_id WHERE m.sweep = ?1 AND m.scope = ?2 AND "
      "i.status = 'done'",
      {sweep.name, sweep.scope});
  s->step();
  return {s->column(0).is_number() ? s->column(0).get<double>() : 0, std::size_t(s->column(1).get<int64_t>())};
}

std::map<int64_t, SweepState::Origin> SweepState::origins(const std::string& sweep) const {
  std::map<int64_t, Origin> out;
  if (!has_tables_) return out;
  // Every measurement of an item, not only its newest (--force adds rows): each row of the
  // export carries the axes it was measured for.
  auto s = db_.prepare(
      "SELECT r.measurement_id, m.sweep, m.axes FROM sweep_results r JOIN sweep_members m ON m.key = r.key "
      "WHERE ?1 = '' OR m.sweep = ?1 ORDER BY m.sweep, m.position");
  s->bind(1, sweep);
  while (s->step()) {
    const int64_t id = s->column(0).get<int64_t>();
    if (!out.count(id))
      out[id] = {s->column(1).get<std::string>(), nlohmann::json::parse(s->column(2).get<std::string>())};
  }
  return out;
}

std::vector<std::string> SweepState::sweeps() const {
  std::vector<std::string> out;
  if (!has_tables_) return out;
  for (auto s = db_.prepare("SELECT DISTINCT sweep FROM sweep_members ORDER BY sweep"); s->step();)
    out.push_back(s->column(0).get<std::string>());
  return out;
}

}  // namespace opcost
