#include "fuzz_support.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/trace/activities.h"

namespace opcost::fuzz {

namespace {

std::atomic<std::size_t> accepted{0};

// This process's temporary directory: one per process, so that several targets (or a
// minimisation's children) never write each other's input.
const std::filesystem::path& temp_dir() {
  static const std::filesystem::path dir = [] {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/opcost-fuzz-XXXXXX";
    if (!mkdtemp(tmpl.data())) fail("cannot make a temporary directory for the input file");
    return std::filesystem::path(tmpl);
  }();
  static const struct Remover {
    ~Remover() {
      std::error_code ignored;  // a failed clean-up of a temporary directory changes no result
      std::filesystem::remove_all(dir, ignored);
    }
  } remover;
  return dir;
}

}  // namespace

void note_accepted() { accepted.fetch_add(1, std::memory_order_relaxed); }
std::size_t accepted_count() { return accepted.load(std::memory_order_relaxed); }

void fail(std::string_view what) {
  std::fprintf(stderr, "fuzz check failed: %.*s\n", int(what.size()), what.data());
  std::fflush(stderr);
  std::abort();
}

void check_refusal(std::string_view message, std::string_view input_name) {
  // Why a seed is refused, when one should parse: OPCOST_FUZZ_VERBOSE=1 prints each refusal.
  static const bool verbose = std::getenv("OPCOST_FUZZ_VERBOSE") != nullptr;
  if (verbose)
    std::fprintf(stderr, "refused: %.*s\n", int(std::min<std::size_t>(message.size(), 2000)), message.data());
  // OPCOST_FUZZ_MESSAGES=0 leaves the messages unchecked: to look past a known message finding
  // for crashes, hangs and memory.
  static const bool unchecked = [] {
    const char* v = std::getenv("OPCOST_FUZZ_MESSAGES");
    return v && std::string_view(v) == "0";
  }();
  if (unchecked) return;
  auto quoted = [&] { return std::string(message.substr(0, 300)) + (message.size() > 300 ? "..." : ""); };
  if (message.find_first_of("\n\r") != std::string_view::npos)
    fail("a refusal's message has more than one line: " + quoted());
  if (message.size() > kMaxMessageBytes)
    fail("a refusal's message is " + std::to_string(message.size()) + " bytes (more than " +
         std::to_string(kMaxMessageBytes) + "): " + quoted());
  if (!input_name.empty() && message.find(input_name) == std::string_view::npos)
    fail("a refusal's message does not name the input (" + std::string(input_name) + "): " + quoted());
}

InputFile::InputFile(std::string suffix) : path_((temp_dir() / ("input" + suffix)).string()) {}

const std::string& InputFile::write(const uint8_t* data, std::size_t size) {
  std::ofstream out(path_, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  out.close();
  if (!out) fail("cannot write the input file " + path_);
  return path_;
}

namespace {

template <typename Range>
void check_spans(const std::vector<Range>& ranges, const char* what) {
  for (const auto& r : ranges)
    if (r.end_ns < r.start_ns)
      fail(
          fmt::format("an imported {} '{}' ends ({} ns) before it starts ({} ns)", what, r.name, r.end_ns, r.start_ns));
}

}  // namespace

void check_trace_import(const std::string& path, const std::function<TraceRun(const std::string&)>& import) {
  TraceRun run;
  try {
    run = import(path);
  } catch (const std::invalid_argument& e) {
    check_refusal(e.what(), path);
    return;
  }
  note_accepted();
  check_imported_spans(run);
}

void check_imported_spans(const TraceRun& run) {
  check_spans(run.ops, "operator call");
  check_spans(run.device_activities, "device activity");
  check_spans(run.steps, "step");
  check_spans(run.layers, "layer");
}

}  // namespace opcost::fuzz
