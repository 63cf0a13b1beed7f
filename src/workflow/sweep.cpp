#include "workflow/sweep.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "core/io/input_file.h"
#include "core/report/report.h"
#include "core/spec/device_spec.h"
#include "core/spec/spec_file.h"
#include "core/store/database.h"
#include "core/sweep/grid.h"
#include "core/sweep/model_list.h"
#include "core/sys/child_process.h"
#include "core/sys/interrupt.h"
#include "core/text/text.h"
#include "workflow/model_inventory.h"
#include "workflow/options.h"
#include "workflow/session.h"

namespace opcost {

namespace {

// The scope of a run (SweepId): the device model the options measure on, the cache mode and the
// settings. The device is resolved once, before any call is identified.
void set_scope(SweepPlan& plan, const MeasureOptions& o) {
  // What, beyond the signature, the GPU model, the cache mode and autocast, decides what an item
  // measured: the identity key of the options registry, as `measure --resume` keys a row.
  plan.settings = settings_key(settings_of(o.replay, o.config));
  plan.device_name = device_model_name(o.replay.device);
  plan.scope = stable_hash(fmt::format("{}\n{}\n{}", plan.device_name, o.replay.cache_mode, plan.settings));
}

nlohmann::json axes_of(const GridItem& item) {
  nlohmann::json axes = nlohmann::json::object();
  for (const auto& [name, value] : item.values) std::visit([&, name = name](const auto& v) { axes[name] = v; }, value);
  return axes;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A worker checks that its parent is still this supervisor (see run_sweep_worker).
constexpr const char* kSupervisorEnv = "OPCOST_SWEEP_SUPERVISOR";
// The worker's database (see worker_environments): the variable the command line and the Python
// package read when no --db (db=) is given.
constexpr const char* kDatabaseEnv = "OPCOST_DB";

std::string worker_name() { return fmt::format("{}:{}", host_name(), getpid()); }

// A worker of this host that is no longer running ("host:pid"); another host's are left to
// their own sweep (or, with a shared database, to a lease).
bool worker_alive(const std::string& worker) {
  const auto colon = worker.rfind(':');
  if (colon == std::string::npos || worker.substr(0, colon) != host_name()) return true;
  try {
    return process_alive(pid_t(std::stol(worker.substr(colon + 1))));
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

namespace {

// The key of what `call` is (its canonical signature on the plan's GPU, with the plan's
// settings); or, when the op's schema refuses the call, the key of its text and why.
struct ItemKey {
  std::string key, refused;
};
ItemKey key_of(SweepPlan& plan, const OpCall& call, const std::string& call_line, const ReplayOptions& replay) {
  try {
    const CallInfo info = PreparedCall::identify(call, replay);
    return {sweep_item_key(signature_hash(info.op, info.overload, info.canonical_args), plan.device_name,
                           replay.cache_mode, info.autocast, plan.settings),
            ""};
  } catch (const ReplayError& e) {  // it never ran, so it has no canonical form
    return {sweep_item_key(stable_hash(call_line), "", replay.cache_mode, replay.autocast, plan.settings),
            user_message(e.what())};
  }
}

// A built-in or TorchScript model's signatures, from one observed step (no host timing).
ModelSignatures builtin_signatures(const ModelConfig& c, const std::string& device) {
  ModelOptions mo;
  mo.model = c.model;
  mo.inputs = c.inputs;
  mo.in.batch = c.batch;
  mo.in.seq = c.seq;
  mo.in.dtype = c.dtype;
  mo.in.autocast = c.autocast;
  mo.in.train = c.train;
  mo.in.device = device;
  auto model = make_model(mo.model, mo.inputs, mo.in);
  const Inventory inv = take_inventory(*model, mo, 0);
  ModelSignatures out;
  out.autocast = inv.autocast;
  for (const auto& e : inv.entries) out.calls.emplace_back(e.signature(), e.count);
  return out;
}

// A model list: each configuration's inventory, its unique signatures deduplicated across the
// configurations (the first that calls one names it; `models` counts those that do).
SweepPlan plan_model_list(const std::string& text, const std::string& file, const MeasureOptions& o, const Notes* notes,
                          const PythonModelSignatures& python_models) {
  const ModelList list =
      read_model_list_text(text, file, std::filesystem::path(file).parent_path().string(), o.max_sweep_items);
  SweepPlan plan;
  plan.name = list.name;
  plan.file = file;
  set_scope(plan, o);
  std::map<std::string, std::size_t> index;  // key -> item
  for (std::size_t i = 0; i < list.configs.size(); ++i) {
    const ModelConfig& c = list.configs[i];
    if (notes) notes->say(fmt::format("[{}/{}] inventory of {}", i + 1, list.configs.size(), c.label));
    ModelSignatures sigs;
    try {
      if (c.python) {
        if (!python_models)
          throw std::invalid_argument(fmt::format(
              "{} is a Python model; sweep this list from Python, which can run it: python -m opcost sweep {}", c.model,
              file));
        sigs = python_models(c, o.replay.device);
      } else {
        sigs = builtin_signatures(c, o.replay.device);
      }
    } catch (const std::exception& e) {
      throw std::invalid_argument(fmt::format("{}: {}: {}", file, c.label, user_message(e.what())));
    }
    for (const auto& [signature, count] : sigs.calls) {
      SweepItem item;
      item.call = signature;
      item.autocast = sigs.autocast;
      item.axes = {{"model", c.label}, {"calls", count}, {"models", 1}};
      ReplayOptions replay = o.replay;
      replay.autocast = sigs.autocast;
      const auto [key, refused] =
          key_of(plan, parse_call_line(item.call, fmt::format("{}: {}", file, c.label)), item.call, replay);
      item.key = key;
      if (!refused.empty()) {
        if (index.emplace(item.key, 0).second) plan.rejected.emplace_back(std::move(item), refused);
        continue;
      }
      if (const auto it = index.find(item.key); it != index.end()) {
        auto& axes = plan.items[it->second].axes;
        axes["models"] = axes["models"].get<int64_t>() + 1;
        continue;
      }
      index[item.key] = plan.items.size();
      plan.items.push_back(std::move(item));
    }
  }
  return plan;
}

}  // namespace

SweepPlan plan_sweep(const std::string& file, const MeasureOptions& o, const Notes* notes,
                     const PythonModelSignatures& python_models) {
  const std::string text = read_text_file(file, "the sweep file");
  if (is_model_list_text(text)) return plan_model_list(text, file, o, notes, python_models);
  // Counted before anything is made, then made one item at a time (core/sweep/grid.h): only the
  // plan's own items are held.
  const GridDefinition grid = GridDefinition::read(text, file);
  grid.check_size(o.max_sweep_items);
  SweepPlan plan;
  plan.name = grid.name();
  plan.file = file;
  set_scope(plan, o);
  std::set<std::string> seen;
  plan.filtered_out = grid.for_each_item([&](const GridItem& g) {
    SweepItem item;
    item.call = g.call_line;
    item.axes = axes_of(g);
    const auto [key, refused] = key_of(plan, g.call, g.call_line, o.replay);
    item.key = key;
    if (!refused.empty()) {
      if (seen.insert(item.key).second) plan.rejected.emplace_back(std::move(item), refused);
      return;
    }
    // Two combinations that make the same call (a value that the call does not use) are one
    // item: the first one's axes name it.
    if (seen.insert(item.key).second)
      plan.items.push_back(std::move(item));
    else
      ++plan.duplicates;
  });
  if (plan.items.empty() && plan.rejected.empty() && plan.duplicates == 0)
    throw std::invalid_argument(
        fmt::format("{}: `where` filters out all {} combinations, so there is nothing to measure; loosen the filter",
                    file, plan.filtered_out));
  return plan;
}

namespace {

// The environment of each worker: the supervisor's pid, the database, and on GPUs, worker i sees
// only the i-th GPU this process sees. The database goes in $OPCOST_DB, never on the command
// line: every local user can read a process's command line (ps), only its owner its environment.
std::vector<std::vector<std::pair<std::string, std::string>>> worker_environments(const SweepOptions& o) {
  for (const auto& word : o.worker_command)
    if (hide_password(word, o.measure.db) != word)
      throw std::logic_error(
          "sweep: the database's password is on a worker's command line; it must reach the worker "
          "through $OPCOST_DB only");
  std::vector<std::vector<std::pair<std::string, std::string>>> env(
      o.workers, {{kSupervisorEnv, std::to_string(getpid())}, {kDatabaseEnv, o.measure.db}});
  const DeviceSpec device = parse_device_spec(o.measure.replay.device, "--device");
  if (o.workers <= 1 || device.is_cpu()) return env;
  if (device.index)
    throw std::invalid_argument(fmt::format(
        "--device {} names one GPU, and --workers {} spreads the sweep over one GPU each: give --device cuda (or "
        "auto)",
        o.measure.replay.device, o.workers));
  const int gpus = cuda_device_count();
  if (gpus == 0) {
    if (device.is_cuda()) throw std::invalid_argument("--device cuda: this machine has no CUDA GPU (use --device cpu)");
    return env;  // auto on a machine without GPUs: every worker on the CPU
  }
  if (int(o.workers) > gpus)
    throw std::invalid_argument(fmt::format(
        "--workers {}: this machine has {} GPU{} and each worker takes one; use --workers {} (or --device cpu)",
        o.workers, gpus, gpus == 1 ? "" : "s", gpus));
  // The GPUs this process may use, as CUDA_VISIBLE_DEVICES names them (or their indices).
  std::vector<std::string> visible;
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES"); v && *v) {
    std::string list = v;
    for (std::size_t at = 0; at <= list.size();) {
      const std::size_t comma = std::min(list.find(',', at), list.size());
      visible.push_back(list.substr(at, comma - at));
      at = comma + 1;
    }
  }
  for (std::size_t i = 0; i < o.workers; ++i)
    env[i].emplace_back("CUDA_VISIBLE_DEVICES", i < visible.size() ? visible[i] : std::to_string(i));
  return env;
}

// One worker process as the supervisor follows it.
struct WorkerSlot {
  std::unique_ptr<ChildProcess> process;
  std::map<std::string, std::string> held;  // the items in hand: key -> call
  std::string name;                         // host:pid, as it claims items
  bool progressed = false;                  // it finished an item
};

// The supervisor of one run: starts the workers, follows their events, replaces one that ends
// while items are left, and keeps the run's counts.
class Supervisor {
 public:
  Supervisor(const SweepOptions& o, SweepRun& run, SweepState& state, const Notes& notes, const SweepEvents& events,
             std::vector<std::vector<std::pair<std::string, std::string>>> environments,
             std::chrono::steady_clock::time_point t0)
      : o_(o),
        run_(run),
        state_(state),
        notes_(notes),
        events_(events),
        environments_(std::move(environments)),
        t0_(t0),
        total_(run.before.total()),
        done_before_(run.before.done + run.before.failed),
        done_(done_before_),
        // No more workers than items: the others would find nothing to claim.
        slots_(std::min(o.workers, run.before.pending)) {}

  // Until every worker has ended. The run ends early (Ctrl-C in Python: Interrupted; a
  // callback's error): no worker outlives it, and the items they held go back to pending at
  // once, not "running" until a next run or their lease. (A supervisor killed outright leaves
  // that to the next run: requeue_abandoned.)
  void run() {
    try {
      for (std::size_t i = 0; i < slots_.size(); ++i) start(i);
      poll();
    } catch (...) {
      stop_workers();
      throw;
    }
  }

 private:
  void progress(const std::string& current) {
    if (events_.progress) events_.progress(done_, done_before_, total_, seconds_since(t0_), current);
  }

  void start(std::size_t i) {
    std::vector<std::string> argv = o_.worker_command;
    argv.push_back("--sweep-name");
    argv.push_back(run_.plan.name);
    argv.push_back("--sweep-scope");
    argv.push_back(run_.plan.scope);
    slots_[i] = WorkerSlot{};
    slots_[i].process = std::make_unique<ChildProcess>(argv, environments_[i]);
  }

  void on_event(WorkerSlot& w, const std::string& line) {
    nlohmann::json e;
    try {
      e = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      notes_.say(line);  // not an event: pass it on
      return;
    }
    const std::string kind = e.value("event", "");
    if (kind == "start") {
      w.held[e.value("key", "")] = e.value("call", "");
      w.name = e.value("worker", "");
      progress(e.value("call", ""));
    } else if (kind == "done" || kind == "failed") {
      ++done_;
      w.progressed = true;
      failed_starts_in_a_row_ = 0;
      ++(kind == "done" ? run_.measured : run_.failed);
      if (kind == "failed") notes_.failed(fmt::format("{}: {}", e.value("call", ""), e.value("reason", "")));
      w.held.erase(e.value("key", ""));
      progress(w.held.empty() ? "" : w.held.begin()->second);
    } else if (kind == "lost") {
      notes_.say(fmt::format("{}: {}; the other worker's result is kept", e.value("call", ""), e.value("reason", "")));
      w.held.erase(e.value("key", ""));
    } else if (kind == "note") {
      if (said_.insert(e.value("text", "")).second) notes_.say(e.value("text", ""));  // once, not once a worker
    } else if (kind == "stop") {
      run_.stopped = e.value("reason", "");
    }
  }

  // A worker ended: another one takes its place unless the sweep is over or stopping.
  void on_end(std::size_t i) {
    WorkerSlot& w = slots_[i];
    const std::string ended = w.process->wait();
    const int signal = w.process->signal();
    const pid_t pid = w.process->pid();
    w.process.reset();
    if (ended.empty()) return;  // nothing left to claim
    read_held_from_database(w, pid);
    // Interrupted (Ctrl-C reaches the whole process group, a job scheduler's TERM): not the
    // item's fault. It goes back to pending for the next run.
    if (signal == SIGINT || signal == SIGTERM || signal == SIGHUP) {
      if (run_.stopped.empty())
        run_.stopped = fmt::format("interrupted: a worker {}; run the sweep again to go on", ended);
      if (!w.held.empty()) state_.requeue_abandoned([&](const std::string& name) { return name != w.name; });
      return;
    }
    ++run_.crashes;
    if (!w.held.empty())
      worker_died_in_items(w, ended);
    else if (!w.progressed)
      // One that dies before any item (it cannot start, open the database, import) is the
      // environment's fault: a few of those in a row stop the sweep.
      ++failed_starts_in_a_row_;
    if (failed_starts_in_a_row_ >= o_.max_failed_starts) {
      if (run_.stopped.empty())
        run_.stopped = fmt::format("{} worker processes in a row ended ({}) before taking an item",
                                   failed_starts_in_a_row_, ended);
      return;
    }
    if (run_.stopped.empty()) start(i);
  }

  // What a worker that ended held, as the database knows it under the worker's name: items it
  // claimed before their "start" events reached us are held too; items it stored before their
  // "done" events did are measured, not held.
  void read_held_from_database(WorkerSlot& w, pid_t pid) {
    const std::string name = w.name.empty() ? fmt::format("{}:{}", host_name(), pid) : w.name;
    std::map<std::string, std::string> running;
    for (const ItemState& held : state_.held_by({run_.plan.name, run_.plan.scope}, name)) running[held.key] = held.call;
    for (const auto& [key, call] : w.held)
      if (!running.count(key) && state_.item_status(key) == ItemStatus::kDone) {
        ++done_;
        ++run_.measured;
      }
    w.held = std::move(running);
  }

  // A worker that died holding one item died of it, maybe: the item goes back, or is failed
  // after --max-attempts such deaths. Holding several (measured together), the death is none's
  // for sure: each goes back, to be measured alone (SweepState::worker_died).
  void worker_died_in_items(const WorkerSlot& w, const std::string& ended) {
    const bool alone = w.held.size() == 1;
    const std::string why =
        alone ? fmt::format("the worker process {} while measuring it", ended)
              : fmt::format("the worker process {} while measuring it with {} other item(s)", ended, w.held.size() - 1);
    if (!alone)
      notes_.say(
          fmt::format("the worker process {} while measuring {} items together; each goes back for another "
                      "try, alone",
                      ended, w.held.size()));
    for (const auto& [key, call] : w.held) {
      if (state_.worker_died(key, why, o_.lease.max_attempts, alone)) {
        notes_.failed(fmt::format("{}: {} (again); the sweep goes on in a fresh worker", call, why));
        ++done_;
        ++run_.failed;
        progress("");
      } else if (alone) {
        notes_.say(fmt::format("{}: {}; it goes back for another try", call, why));
      }
    }
  }

  void stop_workers() {
    for (auto& w : slots_) w.process.reset();  // killed with SIGKILL and reaped (ChildProcess)
    try {
      state_.requeue_abandoned(worker_alive);
    } catch (...) {  // the database is what failed: the next run requeues them
    }
  }

  // Reads the workers' events until every worker has ended, checking for Ctrl-C (Python's, see
  // core/sys/interrupt.h) at least every quarter second: a signal may land in another thread,
  // so poll() is not always interrupted by it.
  void poll() {
    constexpr int kCheckEveryMs = 250;
    while (true) {
      stop_if_interrupted();
      std::vector<pollfd> fds;
      std::vector<std::size_t> owner;
      for (std::size_t i = 0; i < slots_.size(); ++i)
        if (slots_[i].process) {
          fds.push_back({slots_[i].process->output_fd(), POLLIN, 0});
          owner.push_back(i);
        }
      if (fds.empty()) break;
      if (::poll(fds.data(), fds.size(), kCheckEveryMs) < 0) {
        if (errno == EINTR) continue;
        throw std::runtime_error(fmt::format("sweep: poll: {}", std::strerror(errno)));
      }
      for (std::size_t k = 0; k < fds.size(); ++k) {
        if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        WorkerSlot& w = slots_[owner[k]];
        for (const auto& line : w.process->read_available_lines()) on_event(w, line);
        if (w.process->output_fd() < 0) on_end(owner[k]);
      }
    }
  }

  const SweepOptions& o_;
  SweepRun& run_;
  SweepState& state_;
  const Notes& notes_;
  const SweepEvents& events_;
  std::vector<std::vector<std::pair<std::string, std::string>>> environments_;
  std::chrono::steady_clock::time_point t0_;
  std::size_t total_, done_before_, done_;
  std::size_t failed_starts_in_a_row_ = 0;
  std::set<std::string> said_;  // the workers' notes
  std::vector<WorkerSlot> slots_;
};

}  // namespace

SweepRun run_sweep(const SweepOptions& o, const std::string& file, const Notes& notes, const SweepEvents& events) {
  SweepRun run;
  const auto t0 = std::chrono::steady_clock::now();
  auto environments = worker_environments(o);  // before planning: a model list's inventories take a while
  run.plan = plan_sweep(file, o.measure, &notes, o.python_models);
  const SweepPlan& plan = run.plan;
  if (events.planned) events.planned(plan);
  Database db(o.measure.db, Database::Access::kReadWrite, o.measure.db_create_parent);
  SweepState state(db);
  run.requeued = state.requeue_abandoned(worker_alive);
  if (run.requeued)
    notes.say(fmt::format("{} items left running by a worker that is gone go back to pending", run.requeued));
  state.enroll(plan.id(), plan.items, o.reset, plan.rejected);
  run.before = state.counts(plan.id());
  for (const auto& [item, why] : plan.rejected) notes.failed(fmt::format("{}: {}", item.call, why));
  if (run.before.pending == 0) {
    run.after = run.before;
    return run;
  }
  Supervisor(o, run, state, notes, events, std::move(environments), t0).run();
  run.after = state.counts(plan.id());
  run.seconds = seconds_since(t0);
  return run;
}

namespace {

// One JSON object per line on the supervisor's pipe.
class EventWriter {
 public:
  explicit EventWriter(std::FILE* out) : out_(out) {}
  void write(nlohmann::json e) {
    fmt::print(out_, "{}\n", e.dump());
    std::fflush(out_);
  }

 private:
  std::FILE* out_;
};

// Renews a worker's leases on the items in hand while it measures, from a thread with a
// connection of its own, opened once for the worker's life: a worker that hangs or dies stops
// renewing, and its items go back to the queue.
class LeaseKeeper {
 public:
  LeaseKeeper(const std::string& db_location, std::string worker, double lease_s)
      : thread_([this, db_location, worker = std::move(worker), lease_s] {
          try {
            Database db(db_location);
            SweepState state(db);
            std::unique_lock lock(mutex_);
            while (!stop_) {
              cv_.wait_for(lock, std::chrono::duration<double>(lease_s / 4));
              if (stop_) break;
              for (const auto& key : keys_) state.heartbeat(key, worker, lease_s);
            }
          } catch (const std::exception&) {
            // The measurement goes on; without renewals another worker may take the item
            // after the lease, and this one's result is then refused: a measurement lost,
            // never a result stored twice.
          }
        }) {}
  ~LeaseKeeper() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  // The items now in hand (none: empty). Claiming set their leases: the first renewal is due
  // a quarter of a lease later.
  void hold(std::vector<std::string> keys) {
    std::lock_guard lock(mutex_);
    keys_ = std::move(keys);
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<std::string> keys_;
  std::thread thread_;  // last: it starts once the members above exist
};

}  // namespace

namespace {

// Nothing left to take while other workers hold items: wait, since an item whose worker stops
// renewing its lease (killed, its node lost) comes back, and this worker may be the last one.
std::optional<ItemState> next_item(SweepState& state, const SweepId& sweep, const std::string& me,
                                   const SweepState::Lease& lease) {
  const double wait_s = std::clamp(lease.seconds / 8, 0.2, 1.0);
  while (true) {
    if (auto item = state.claim(sweep, me, lease)) return item;
    if (state.counts(sweep).running == 0) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::duration<double>(wait_s));
  }
}

// The items a worker claims at once: its session's group (--energy-group; by default
// kSweepEnergyGroup where the session shares counter windows, which it knows once it measured a
// call: its first claim is one item), never more than the sweep's items.
std::vector<ItemState> next_items(SweepState& state, const SweepId& sweep, const std::string& me,
                                  const SweepState::Lease& lease, std::size_t group) {
  std::vector<ItemState> items;
  auto first = next_item(state, sweep, me, lease);
  if (!first) return items;
  items.push_back(std::move(*first));
  // An item claimed again (its worker died, maybe of it) is measured alone: a death among several
  // items is none's for sure (SweepState::worker_died), a death alone is its own. Claimed after a
  // group's others, it is measured after them (measure_claimed).
  while (items.size() < group && items.front().attempts <= 1 && items.back().attempts <= 1) {
    auto more = state.claim(sweep, me, lease);
    if (!more) break;
    items.push_back(std::move(*more));
  }
  return items;
}

// The session's group: given, or by default kSweepEnergyGroup where its energies share counter
// windows; none before its first call, when it knows no device yet (claim one item then).
std::optional<std::size_t> group_size(const MeasureOptions& o, MeasuringSession& session) {
  if (o.energy_group > 0) return o.energy_group;
  if (!session.started()) return std::nullopt;
  return session.shares_counter_windows() ? kSweepEnergyGroup : 1;
}

// An item failed (its reason in the database) and said so to the supervisor.
void fail_item(SweepState& state, const ItemState& item, const std::string& reason, const std::string& me,
               EventWriter& events) {
  state.mark_failed(item.key, me, reason);
  events.write({{"event", "failed"}, {"key", item.key}, {"call", item.call}, {"reason", reason}});
}

// An outcome of the session as the item's event (and its failure in the database); false when
// the database stopped taking rows (the worker then stops).
bool report_outcome(MeasuringSession& session, SweepState& state, const ItemState& item, const SessionOutcome& out,
                    const std::string& me, EventWriter& events) {
  auto fail = [&](const std::string& reason) { fail_item(state, item, reason, me, events); };
  if (out.also_error) {
    try {
      std::rethrow_exception(out.also_error);
    } catch (const LeaseLost& e) {
      events.write({{"event", "lost"}, {"key", item.key}, {"call", item.call}, {"reason", e.what()}});
      return true;
    } catch (const std::exception& e) {
      fail(user_message(e.what()));
      return true;
    }
  }
  if (out.kind == SessionOutcome::Kind::kSkipped) {
    // A row of the same identity is stored already (a `measure`, another sweep, a release
    // before this sweep's keys changed): the item is done with it, not measured again.
    try {
      state.mark_done(item.key, me, out.existing_row);
    } catch (const LeaseLost& e) {
      events.write({{"event", "lost"}, {"key", item.key}, {"call", item.call}, {"reason", e.what()}});
      return true;
    }
    events.write({{"event", "done"}, {"key", item.key}, {"call", item.call}, {"existing_row", out.existing_row}});
  } else if (!out.measurement) {  // the op refused its inputs, out of memory, an error in the op
    fail(user_message(out.error));
  } else if (!out.not_stored.empty()) {
    // The database stopped taking rows: the worker stops, and the supervisor puts the items it
    // holds back (SweepState::worker_died).
    if (!session.stopped().empty()) {
      events.write({{"event", "stop"}, {"reason", session.stopped()}});
      return false;
    }
    fail(out.not_stored);
  } else {
    events.write({{"event", "done"}, {"key", item.key}, {"call", item.call}});
  }
  return true;
}

// Claimed items measured in the session, each marked done in its row's transaction: one alone,
// several together (Runner::measure_group: timed one by one, their energies from one loop's
// shared counter windows), those of one autocast at a time. A failure inside an item is recorded
// and the worker goes on. Returns false when the database stopped taking rows.
bool measure_claimed(MeasuringSession& session, SweepState& state, const std::vector<ItemState>& items,
                     const MeasureOptions& o, const SweepId& sweep, const std::string& me, EventWriter& events) {
  std::vector<const ItemState*> pending;
  std::vector<OpCall> calls;
  for (const ItemState& item : items) {
    try {
      calls.push_back(parse_call_line(item.call, fmt::format("sweep {}", sweep.name)));
      pending.push_back(&item);
    } catch (const std::exception& e) {
      fail_item(state, item, user_message(e.what()), me, events);
    }
  }
  // A retried item comes last (next_items) and is measured alone, after the others are done.
  const bool last_alone = pending.size() > 1 && pending.back()->attempts > 1;
  const std::size_t together = last_alone ? pending.size() - 1 : pending.size();
  std::set<std::string> autocasts;
  for (std::size_t i = 0; i < together; ++i) autocasts.insert(pending[i]->autocast);
  for (const std::string& autocast : autocasts) {
    std::vector<std::size_t> which;
    std::vector<OpCall> group;
    for (std::size_t i = 0; i < together; ++i)
      if (pending[i]->autocast == autocast) {
        which.push_back(i);
        group.push_back(calls[i]);
      }
    ReplayOptions replay = o.replay;
    replay.autocast = autocast;
    // One call or several (a group of one is measured as measure() would), each marked done in
    // its row's transaction; one out of memory beside the others is measured again alone there.
    const std::vector<SessionOutcome> outs =
        session.measure_group(group, replay, std::vector<std::optional<MeasureConfig::Whole>>(group.size()),
                              [&](std::size_t k, int64_t id) { state.mark_done(pending[which[k]]->key, me, id); });
    bool stopped = false;
    for (std::size_t k = 0; k < outs.size(); ++k)
      stopped |= !report_outcome(session, state, *pending[which[k]], outs[k], me, events);
    if (stopped) return false;
  }
  if (last_alone) return measure_claimed(session, state, {*pending.back()}, o, sweep, me, events);
  return true;
}

}  // namespace

int run_sweep_worker(const MeasureOptions& o, const SweepId& sweep, const SweepState::Lease& lease,
                     std::FILE* events_out) {
  // Dies with its supervisor: a killed sweep leaves no measurement running on the GPU. Its
  // item stays running in the database and goes back to pending on the next run.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The supervisor died before the line above took effect (its pid, not 1: a supervisor may
  // itself be a container's first process).
  if (const char* sup = std::getenv(kSupervisorEnv); sup && std::to_string(getppid()) != sup) return 1;
  EventWriter events(events_out);
  Notes notes;
  notes.note = [&](const std::string& t) { events.write({{"event", "note"}, {"text", t}}); };
  Database db(o.db, Database::Access::kReadWrite, o.db_create_parent);
  SweepState state(db);
  const std::string me = worker_name();
  SessionOptions so;
  so.config = o.config;
  // Unless forced (--force), an item whose measurement is stored already is done with that row.
  so.resume = o.resume;
  MeasuringSession session(&db, so, notes);
  LeaseKeeper keeper(o.db, me, lease.seconds);
  std::optional<std::size_t> group;  // decided once the session knows its device
  while (true) {
    if (!group) group = group_size(o, session);
    const std::vector<ItemState> items = next_items(state, sweep, me, lease, group.value_or(1));
    if (items.empty()) break;
    std::vector<std::string> keys;
    for (const ItemState& item : items) {
      events.write({{"event", "start"}, {"key", item.key}, {"call", item.call}, {"worker", me}});
      keys.push_back(item.key);
    }
    keeper.hold(std::move(keys));
    if (!measure_claimed(session, state, items, o, sweep, me, events)) return 1;
  }
  return 0;
}

SweepStatus sweep_status(const MeasureOptions& o, const std::string& file, const PythonModelSignatures& python_models,
                         bool need_items) {
  SweepStatus s;
  const bool exists = Database::exists(o.db);
  std::optional<Database> db;
  if (exists) db.emplace(o.db, Database::Access::kReadOnly);
  std::optional<SweepState> state;
  if (db) state.emplace(*db);
  const std::string text = read_text_file(file, "the sweep file");
  // Status runs no model: a model list's items come from running each model (its Python files
  // are the user's code, imported and run), so its items are those the database has.
  if (!need_items && is_model_list_text(text)) {
    s.planned = false;
    s.plan.name = read_model_list_text(text, file, "", o.max_sweep_items).name;
    s.plan.file = file;
    set_scope(s.plan, o);
  } else {
    s.plan = plan_sweep(file, o, nullptr, python_models);
  }
  s.items = s.plan.total();
  if (!state) {
    s.not_enrolled = s.items;
    return s;
  }
  s.counts = state->counts(s.plan.id());
  if (!s.planned) s.items = s.counts.total();
  s.failed = state->items(s.plan.id(), ItemStatus::kFailed);
  s.running = state->items(s.plan.id(), ItemStatus::kRunning);
  s.not_enrolled = s.items > s.counts.total() ? s.items - s.counts.total() : 0;
  const auto done = state->done_summary(s.plan.id());
  s.mean_seconds_per_item = done.mean_seconds;
  s.workers_seen = done.workers;
  s.elsewhere = state->items_elsewhere(s.plan.id());
  return s;
}

}  // namespace opcost
