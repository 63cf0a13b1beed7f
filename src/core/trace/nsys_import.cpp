#include "core/trace/nsys_import.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

namespace opcost {

namespace {

// The export, read only. Every failure names the file.
class Export {
 public:
  // Read only, a value no longer than `max_value_bytes` (a hostile file's gigabyte string is
  // refused by SQLite as too big, not copied).
  Export(const std::string& path, std::size_t max_value_bytes) : path_(path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) fail_open();
    sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, int(std::min<std::size_t>(max_value_bytes, 1u << 30)));
  }
  // An export's bytes in memory, read in place (they must outlive it).
  Export(std::string_view bytes, const std::string& name, std::size_t max_value_bytes) : path_(name) {
    if (sqlite3_open_v2(":memory:", &db_, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) fail_open();
    auto* data = reinterpret_cast<unsigned char*>(const_cast<char*>(bytes.data()));
    if (sqlite3_deserialize(db_, "main", data, sqlite3_int64(bytes.size()), sqlite3_int64(bytes.size()),
                            SQLITE_DESERIALIZE_READONLY) != SQLITE_OK)
      fail_open();
    sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, int(std::min<std::size_t>(max_value_bytes, 1u << 30)));
  }
  ~Export() { sqlite3_close(db_); }
  Export(const Export&) = delete;
  Export& operator=(const Export&) = delete;
  const std::string& name() const { return path_; }

  bool has_table(const std::string& name) {
    bool found = false;
    each("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '" + name + "'",
         [&](sqlite3_stmt*) { found = true; });
    return found;
  }
  // Runs `sql`, calling `row` with each result row.
  template <typename Row>
  void each(const std::string& sql, Row&& row) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK)
      throw std::invalid_argument(
          fmt::format("{}: not an nsys SQLite export this reads ({}); export with `nsys export --type sqlite REPORT`",
                      path_, sqlite3_errmsg(db_)));
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) row(s);
    const std::string why = sqlite3_errmsg(db_);
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE) throw std::invalid_argument(fmt::format("{}: cannot read: {}", path_, why));
  }

 private:
  [[noreturn]] void fail_open() {
    const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw std::invalid_argument(fmt::format("{}: cannot open as SQLite: {}", path_, why));
  }

  std::string path_;
  sqlite3* db_ = nullptr;
};

// Columns 0-2 of the queries below: start and end (ns) and the thread (nsys's globalTid).
HostRange span_of(sqlite3_stmt* s, std::string name) {
  return HostRange{std::move(name), uint64_t(sqlite3_column_int64(s, 2)), sqlite3_column_int64(s, 0),
                   sqlite3_column_int64(s, 1)};
}

// A row whose span is impossible (it ends before it starts, or starts before the clock's zero:
// a damaged or hand-made export) is skipped and counted, as the Chrome import does, so that one
// bad row never turns into a negative duration in the tables.
bool skipped_bad_span(TraceRun& run, const char* table, int64_t start_ns, int64_t end_ns) {
  if (start_ns >= 0 && end_ns >= start_ns) return false;
  if (run.skipped_events++ == 0)
    run.first_skipped = fmt::format("a {} row that ends ({} ns) before it starts ({} ns)", table, end_ns, start_ns);
  return true;
}

std::string text(sqlite3_stmt* s, int i) {
  const auto* t = sqlite3_column_text(s, i);
  return t ? reinterpret_cast<const char*>(t) : "";
}

// emit_nvtx's range names: "aten::conv2d, seq = 5, op_id = 7, sizes = [[4, 3, 32, 32], [8, 3, 3, 3], []]".
struct RangeName {
  std::string name, shapes;
  int64_t seq = -1;
};
// By hand, not with std::regex: libstdc++'s recursion on a long name overflows the stack.
RangeName parse_range_name(const std::string& text) {
  RangeName r;
  r.name = text.substr(0, text.find(", "));
  for (std::size_t at = text.find("seq"); at != std::string::npos; at = text.find("seq", at + 1)) {
    // ", seq = 5", ", stashed seq = 5", ", seq=5"
    const bool after_field =
        (at >= 2 && text.compare(at - 2, 2, ", ") == 0) || (at >= 10 && text.compare(at - 10, 10, ", stashed ") == 0);
    if (!after_field) continue;
    std::size_t i = at + 3;
    if (i < text.size() && text[i] == ' ') ++i;
    if (i >= text.size() || text[i] != '=') continue;
    ++i;
    if (i < text.size() && text[i] == ' ') ++i;
    const std::size_t digits = i;
    while (i < text.size() && i - digits < 18 && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (i == digits) continue;
    r.seq = std::stoll(text.substr(digits, i - digits));
    break;
  }
  // ", sizes = [...]" up to the first ']' followed by the end or by another ", field = ".
  static const std::string kSizes = ", sizes = [";
  if (const std::size_t open = text.find(kSizes); open != std::string::npos) {
    const std::size_t from = open + kSizes.size();
    for (std::size_t close = text.find(']', from); close != std::string::npos; close = text.find(']', close + 1)) {
      std::size_t i = close + 1;
      bool next_field = i == text.size();
      if (!next_field && text.compare(i, 2, ", ") == 0) {
        i += 2;
        const std::size_t word = i;
        while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_')) ++i;
        next_field = i > word && text.compare(i, 3, " = ") == 0;
      }
      if (next_field) {
        r.shapes = text.substr(from, close - from);
        break;
      }
    }
  }
  return r;
}

// emit_nvtx names dispatcher calls by their schema's namespace ("aten::", "prim::", ...), and
// autograd's backward functions "autograd::engine::evaluate_function: ...".
constexpr const char* kBackwardPrefix = "autograd::engine::evaluate_function: ";
bool is_call(const std::string& name) {
  return name.find("::") != std::string::npos && name.rfind(kBackwardPrefix, 0) != 0;
}

const char* copy_kind(int64_t kind) {  // CUpti_ActivityMemcpyKind
  switch (kind) {
    case 1:
      return "Memcpy HtoD";
    case 2:
      return "Memcpy DtoH";
    case 8:
      return "Memcpy DtoD";
    case 10:
      return "Memcpy PtoP";
    default:
      return "Memcpy";
  }
}

// The run, read table by table: the NVTX ranges (calls, steps, backward functions, layers),
// then the runtime calls that tie kernels to calls, then the device activities.
class RunFromExport {
 public:
  RunFromExport(Export& ex, const TraceImportLimits& limits) : ex_(ex), limits_(limits) {
    run_.source = "nsys SQLite export";
  }

  TraceRun read() && {
    require_tables();
    if (ex_.has_table("TARGET_INFO_GPU"))
      ex_.each("SELECT name FROM TARGET_INFO_GPU LIMIT 1", [&](sqlite3_stmt* s) { run_.device = text(s, 0); });
    read_ranges();
    read_runtime_calls();
    read_device_activities();
    if (run_.steps.empty()) add_whole_export_step();
    tie_activities(run_);
    return std::move(run_);
  }

 private:
  // The run is what grows with the export: bounded as a Chrome trace's is.
  void count() {
    if (++records_ > limits_.max_records)
      throw std::invalid_argument(
          fmt::format("{}: more than {} calls, ranges and device activities, over the import's bound; record fewer "
                      "steps",
                      ex_.name(), limits_.max_records));
  }

  void require_tables() {
    for (const char* table : {"StringIds", "CUPTI_ACTIVITY_KIND_KERNEL"})
      if (!ex_.has_table(table))
        throw std::invalid_argument(fmt::format(
            "{}: no {} table: not an nsys export of a CUDA run; record with `nsys profile -t cuda,nvtx` and export "
            "with `nsys export --type sqlite`",
            ex_.name(), table));
    if (!ex_.has_table("NVTX_EVENTS"))
      throw std::invalid_argument(fmt::format(
          "{}: no NVTX ranges, so no operator calls; run the model inside torch.autograd.profiler.emit_nvtx() under "
          "`nsys profile -t cuda,nvtx`",
          ex_.name()));
  }

  // NVTX push/pop (59) and start/end (60) ranges: calls, steps, backward functions, layers.
  void read_ranges() {
    std::vector<OpActivity> calls;
    ex_.each(
        "SELECT n.start, n.end, n.globalTid, COALESCE(n.text, s.value, '') FROM NVTX_EVENTS n "
        "LEFT JOIN StringIds s ON n.textId = s.id WHERE n.eventType IN (59, 60) AND n.end >= n.start",
        [&](sqlite3_stmt* s) { add_range(s, calls); });
    if (calls.empty())
      throw std::invalid_argument(
          fmt::format("{}: no operator ranges (NVTX ranges named aten::...); run the model inside "
                      "torch.autograd.profiler.emit_nvtx() under `nsys profile -t cuda,nvtx`",
                      ex_.name()));
    run_.ops = fold_nested_calls(std::move(calls));  // by thread, then start; outermost only
  }

  void add_range(sqlite3_stmt* s, std::vector<OpActivity>& calls) {
    count();
    const std::string full = text(s, 3);
    HostRange span = span_of(s, full);
    if (skipped_bad_span(run_, "NVTX_EVENTS", span.start_ns, span.end_ns)) return;
    if (full.rfind("ProfilerStep#", 0) == 0) {
      span.name = full.substr(0, full.find(", "));
      run_.steps.push_back(std::move(span));
    } else if (full.rfind(kBackwardPrefix, 0) == 0) {
      run_.backward_ranges.push_back({span.thread, span.start_ns, span.end_ns, parse_range_name(full).seq});
    } else if (is_call(full)) {
      const RangeName r = parse_range_name(full);
      OpActivity op;
      op.name = r.name;
      op.shapes = r.shapes;
      op.thread = span.thread;
      op.start_ns = span.start_ns;
      op.end_ns = span.end_ns;
      if (r.seq >= 0) op.forward_sequence.push_back(r.seq);
      calls.push_back(std::move(op));
    } else {
      run_.layers.push_back(span);
    }
  }

  // Each runtime call's correlation id goes to the outermost call around it on its thread;
  // synchronisations are kept, to tie activities that carry no correlation id.
  void read_runtime_calls() {
    if (!ex_.has_table("CUPTI_ACTIVITY_KIND_RUNTIME")) return;
    std::unordered_map<uint64_t, std::vector<std::size_t>> calls_of_thread;
    for (std::size_t i = 0; i < run_.ops.size(); ++i) calls_of_thread[run_.ops[i].thread].push_back(i);
    ex_.each(
        "SELECT r.start, r.end, r.globalTid, r.correlationId, COALESCE(s.value, '') FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
        "LEFT JOIN StringIds s ON r.nameId = s.id",
        [&](sqlite3_stmt* s) {
          const HostRange call = span_of(s, text(s, 4));
          if (skipped_bad_span(run_, "CUPTI_ACTIVITY_KIND_RUNTIME", call.start_ns, call.end_ns)) return;
          if (call.name.find("Synchronize") != std::string::npos) count();
          if (call.name.find("Synchronize") != std::string::npos) run_.synchronizations.push_back(call);
          const auto correlation = uint64_t(sqlite3_column_int64(s, 3));
          const auto it = calls_of_thread.find(call.thread);
          if (correlation == 0 || it == calls_of_thread.end()) return;
          const auto& on_thread = it->second;  // by start, not overlapping
          auto after = std::upper_bound(on_thread.begin(), on_thread.end(), call.start_ns,
                                        [&](int64_t t, std::size_t i) { return t < run_.ops[i].start_ns; });
          if (after == on_thread.begin()) return;
          OpActivity& op = run_.ops[*std::prev(after)];
          if (call.end_ns <= op.end_ns) op.correlations.push_back(correlation);
        });
  }

  // Kernels, copies and sets, ordered by start as the tables expect.
  void read_device_activities() {
    add_device(
        "SELECT k.start, k.end, k.deviceId, k.streamId, k.correlationId, COALESCE(s.value, '') "
        "FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN StringIds s ON k.demangledName = s.id",
        "kernel", [](sqlite3_stmt* s) { return text(s, 5); });
    if (ex_.has_table("CUPTI_ACTIVITY_KIND_MEMCPY"))
      add_device("SELECT start, end, deviceId, streamId, correlationId, copyKind FROM CUPTI_ACTIVITY_KIND_MEMCPY",
                 "memcpy", [](sqlite3_stmt* s) { return std::string(copy_kind(sqlite3_column_int64(s, 5))); });
    if (ex_.has_table("CUPTI_ACTIVITY_KIND_MEMSET"))
      add_device("SELECT start, end, deviceId, streamId, correlationId FROM CUPTI_ACTIVITY_KIND_MEMSET", "memset",
                 [](sqlite3_stmt*) { return std::string("Memset"); });
    std::stable_sort(run_.device_activities.begin(), run_.device_activities.end(),
                     [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
  }

  // Columns 0-4 of `sql`: start, end, device, stream, correlation id.
  template <typename NameOf>
  void add_device(const std::string& sql, const char* kind, NameOf name_of) {
    ex_.each(sql, [&](sqlite3_stmt* s) {
      count();
      if (skipped_bad_span(run_, kind, sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1))) return;
      run_.device_activities.push_back(
          DeviceActivity{name_of(s), kind, int(sqlite3_column_int64(s, 2)), sqlite3_column_int64(s, 3),
                         sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1), uint64_t(sqlite3_column_int64(s, 4))});
    });
  }

  // Without step ranges the whole export is one step, so that the tables count it.
  void add_whole_export_step() {
    int64_t first = run_.ops.front().start_ns, last = run_.ops.front().end_ns;
    for (const auto& op : run_.ops) {
      first = std::min(first, op.start_ns);
      last = std::max(last, op.end_ns);
    }
    run_.steps.push_back(HostRange{"(the whole export)", run_.ops.front().thread, first, last});
  }

  Export& ex_;
  const TraceImportLimits& limits_;
  TraceRun run_;
  std::size_t records_ = 0;
};

}  // namespace

TraceRun import_nsys_sqlite(const std::string& path, const TraceImportLimits& limits) {
  Export ex(path, limits.max_event_bytes);
  return RunFromExport(ex, limits).read();
}

TraceRun import_nsys_sqlite_bytes(std::string_view bytes, const std::string& name, const TraceImportLimits& limits) {
  Export ex(bytes, name, limits.max_event_bytes);
  return RunFromExport(ex, limits).read();
}

}  // namespace opcost
