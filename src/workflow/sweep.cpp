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
  std::optional<std::string> key, call;  // the item in hand
  std::string name;                      // host:pid, as it claims items
  bool progressed = false;               // it finished an item
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
      w.key = e.value("key", "");
      w.name = e.value("worker", "");
      w.call = e.value("call", "");
      progress(*w.call);
    } else if (kind == "done" || kind == "failed") {
      ++done_;
      w.progressed = true;
      failed_starts_in_a_row_ = 0;
      ++(kind == "done" ? run_.measured : run_.failed);
      if (kind == "failed") notes_.failed(fmt::format("{}: {}", e.value("call", ""), e.value("reason", "")));
      w.key.reset();
      progress("");
    } else if (kind == "lost") {
      notes_.say(fmt::format("{}: {}; the other worker's result is kept", e.value("call", ""), e.value("reason", "")));
      w.key.reset();
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
    if (!w.key) held_without_saying(w, pid);
    // Interrupted (Ctrl-C reaches the whole process group, a job scheduler's TERM): not the
    // item's fault. It goes back to pending for the next run.
    if (signal == SIGINT || signal == SIGTERM || signal == SIGHUP) {
      if (run_.stopped.empty())
        run_.stopped = fmt::format("interrupted: a worker {}; run the sweep again to go on", ended);
      if (w.key) state_.requeue_abandoned([&](const std::string& name) { return name != w.name; });
      return;
    }
    ++run_.crashes;
    if (w.key)
      worker_died_in_item(w, ended);
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

  // A worker killed after it claimed an item but before its "start" event reached us: the
  // database knows the item under the worker's name.
  void held_without_saying(WorkerSlot& w, pid_t pid) {
    const std::string name = w.name.empty() ? fmt::format("{}:{}", host_name(), pid) : w.name;
    if (auto held = state_.held_by({run_.plan.name, run_.plan.scope}, name)) {
      w.key = held->key;
      w.call = held->call;
    }
  }

  void worker_died_in_item(const WorkerSlot& w, const std::string& ended) {
    const std::string why = fmt::format("the worker process {} while measuring it", ended);
    if (state_.worker_died(*w.key, why, o_.lease.max_attempts)) {
      notes_.failed(fmt::format("{}: {} (again); the sweep goes on in a fresh worker", *w.call, why));
      ++done_;
      ++run_.failed;
      progress("");
    } else {
      notes_.say(fmt::format("{}: {}; it goes back for another try", *w.call, why));
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

// Renews a worker's lease on the item in hand while it measures, from a thread with a
// connection of its own, opened once for the worker's life: a worker that hangs or dies stops
// renewing, and the item goes back to the queue.
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
              if (!stop_ && !key_.empty()) state.heartbeat(key_, worker, lease_s);
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
  // The item now in hand ("" when none). Claiming set its lease: the first renewal is due
  // a quarter of a lease later.
  void hold(const std::string& key) {
    std::lock_guard lock(mutex_);
    key_ = key;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::string key_;
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

// One claimed item measured in the session and marked done in its row's transaction; a failure
// inside the item is recorded and the worker goes on. Returns false when the database stopped
// taking rows.
bool measure_item(MeasuringSession& session, SweepState& state, const ItemState& item, const MeasureOptions& o,
                  const SweepId& sweep, const std::string& me, EventWriter& events) {
  auto fail = [&](const std::string& reason) {
    state.mark_failed(item.key, me, reason);
    events.write({{"event", "failed"}, {"key", item.key}, {"call", item.call}, {"reason", reason}});
  };
  std::optional<OpCall> call;
  try {
    call = parse_call_line(item.call, fmt::format("sweep {}", sweep.name));
  } catch (const std::exception& e) {
    fail(user_message(e.what()));
    return true;
  }
  ReplayOptions replay = o.replay;
  replay.autocast = item.autocast;
  SessionOutcome out;
  try {
    out = session.measure(*call, replay, [&](int64_t id) { state.mark_done(item.key, me, id); });
  } catch (const LeaseLost& e) {
    events.write({{"event", "lost"}, {"key", item.key}, {"call", item.call}, {"reason", e.what()}});
    return true;
  }
  if (out.kind == SessionOutcome::Kind::kSkipped) {
    // A row of the same identity is stored already (a `measure`, another sweep, a release
    // before this sweep's keys changed): the item is done with it, not measured again.
    state.mark_done(item.key, me, out.existing_row);
    events.write({{"event", "done"}, {"key", item.key}, {"call", item.call}, {"existing_row", out.existing_row}});
  } else if (!out.measurement) {  // the op refused its inputs, out of memory, an error in the op
    fail(user_message(out.error));
  } else if (!session.stopped().empty()) {
    events.write({{"event", "stop"}, {"reason", session.stopped()}});
    return false;
  } else if (!out.not_stored.empty()) {
    fail(out.not_stored);
  } else {
    events.write({{"event", "done"}, {"key", item.key}, {"call", item.call}});
  }
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
  while (auto item = next_item(state, sweep, me, lease)) {
    events.write({{"event", "start"}, {"key", item->key}, {"call", item->call}, {"worker", me}});
    keeper.hold(item->key);
    if (!measure_item(session, state, *item, o, sweep, me, events)) return 1;
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
