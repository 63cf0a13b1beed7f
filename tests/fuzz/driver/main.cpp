// The fuzz targets' main() in the ordinary build (CI): each seed is run, then seeded mutations
// of them for a fixed time, each input under a time limit and the whole process under an
// address-space limit. A crash, a hang, running out of memory, or an exception the parser does
// not document stops the run with the input saved and shown (driver/failure.h), exit code 71-74.
// bench/run_fuzz links the same targets with libFuzzer instead; as with libFuzzer, a directory
// argument is a corpus and a file argument an input to run once.
#include <cxxabi.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <vector>

#include "driver/failure.h"
#include "driver/mutator.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size);

namespace {

namespace fs = std::filesystem;
using opcost::fuzz::Finding;

constexpr const char* kUsage =
    "usage: %s [--seconds S] [--seed N] [--max-len BYTES] [--timeout-s S] [--memory-mb MB]\n"
    "          [--dict FILE] [--artifacts DIR] [--minimize FILE] DIR|FILE...\n"
    "  DIR: a corpus: each file in it is run, then mutations of them for S seconds (default 0)\n"
    "  FILE: an input run once (a saved finding, to reproduce it)\n"
    "  --minimize FILE: the smallest input found in S seconds (default 60) that fails as FILE does,\n"
    "                   written to FILE.min\n";

struct Options {
  double seconds = -1;  // -1: the mode's default
  uint64_t seed = 1;
  std::size_t max_len = std::size_t(1) << 20;
  unsigned timeout_s = 10;
  std::size_t memory_mb = 2048;
  std::string dict, artifacts = ".", minimize;
  std::vector<std::string> dirs, files;
};

[[noreturn]] void usage_error(const char* argv0, const std::string& why) {
  std::fprintf(stderr, "%s: %s\n", argv0, why.c_str());
  std::fprintf(stderr, kUsage, argv0);
  std::exit(2);
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(argv[0], a + " needs a value");
      return argv[++i];
    };
    auto number = [&](const std::string& v) -> double {
      char* end = nullptr;
      const double d = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || !(d >= 0)) usage_error(argv[0], a + " needs a number >= 0, not '" + v + "'");
      return d;
    };
    if (a == "--seconds") {
      o.seconds = number(value());
    } else if (a == "--seed") {
      o.seed = uint64_t(number(value()));
    } else if (a == "--max-len") {
      o.max_len = std::size_t(number(value()));
    } else if (a == "--timeout-s") {
      o.timeout_s = unsigned(std::max(1.0, number(value())));
    } else if (a == "--memory-mb") {
      o.memory_mb = std::size_t(number(value()));
    } else if (a == "--dict") {
      o.dict = value();
    } else if (a == "--artifacts") {
      o.artifacts = value();
    } else if (a == "--minimize") {
      o.minimize = value();
    } else if (a == "-h" || a == "--help") {
      std::printf(kUsage, argv[0]);
      std::exit(0);
    } else if (a.rfind("-", 0) == 0) {
      usage_error(argv[0], "unknown option " + a);
    } else if (fs::is_directory(a)) {
      o.dirs.push_back(a);
    } else if (fs::is_regular_file(a)) {
      o.files.push_back(a);
    } else {
      usage_error(argv[0], a + ": neither a corpus directory nor an input file");
    }
  }
  if (o.dirs.empty() && o.files.empty() && o.minimize.empty()) usage_error(argv[0], "no corpus and no input");
  return o;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) {
    std::fprintf(stderr, "%s: cannot read\n", path.c_str());
    std::exit(2);
  }
  return s;
}

std::string type_name(const std::type_info& t) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(t.name(), nullptr, nullptr, &status), std::free);
  return status == 0 && name ? name.get() : t.name();
}

// Runs one input through the target; reports (and exits) on any finding.
void run_one(const std::string& input, unsigned timeout_s) {
  // A copy of exactly its size, so that reading past the end leaves the input.
  std::vector<uint8_t> bytes(input.begin(), input.end());
  opcost::fuzz::set_current_input(bytes.data(), bytes.size());
  alarm(timeout_s);
  try {
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  } catch (const std::bad_alloc&) {
    opcost::fuzz::report_finding(Finding::kOutOfMemory, "std::bad_alloc: more memory than --memory-mb allows", false);
  } catch (const std::exception& e) {
    static char detail[1024];
    std::snprintf(detail, sizeof detail, "%s: %.600s", type_name(typeid(e)).c_str(), e.what());
    for (char* c = detail; *c; ++c)
      if (*c == '\n' || *c == '\r') *c = ' ';
    opcost::fuzz::report_finding(Finding::kUndocumentedException, detail, false);
  } catch (...) {
    opcost::fuzz::report_finding(Finding::kUndocumentedException, "an exception of unknown type", false);
  }
  alarm(0);
  opcost::fuzz::set_current_input(nullptr, 0);
}

// How `input` fails, run in a child process (nullopt: it does not).
std::optional<Finding> run_in_child(const std::string& input, unsigned timeout_s) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("fork");
    std::exit(2);
  }
  if (pid == 0) {
    if (std::freopen("/dev/null", "w", stderr) == nullptr) _exit(2);
    opcost::fuzz::set_report_context("child", "");
    run_one(input, timeout_s);
    _exit(0);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (WIFSIGNALED(status)) return Finding::kCrash;  // killed before its handler could report
  const int code = WEXITSTATUS(status);
  if (code >= int(Finding::kCrash) && code <= int(Finding::kUndocumentedException)) return Finding(code);
  return std::nullopt;
}

// Deletes pieces (halves, quarters, ... single bytes) while the input still fails the same way.
int minimize(const Options& o, const char* argv0) {
  const double seconds = o.seconds < 0 ? 60 : o.seconds;
  std::string best = read_file(o.minimize);
  const auto how = run_in_child(best, o.timeout_s);
  if (!how) {
    std::fprintf(stderr, "%s: %s does not fail; nothing to minimise\n", argv0, o.minimize.c_str());
    return 2;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::size_t tries = 0;
  for (std::size_t chunk = std::max<std::size_t>(best.size() / 2, 1); chunk >= 1; chunk /= 2) {
    for (std::size_t at = 0; at < best.size() && std::chrono::steady_clock::now() < deadline;) {
      std::string candidate = best.substr(0, at) + best.substr(std::min(best.size(), at + chunk));
      ++tries;
      if (run_in_child(candidate, o.timeout_s) == how)
        best = std::move(candidate);
      else
        at += chunk;
    }
    if (chunk == 1 || std::chrono::steady_clock::now() >= deadline) break;
  }
  const std::string out = o.minimize + ".min";
  std::ofstream(out, std::ios::binary) << best;
  static char described[1024];
  opcost::fuzz::describe_input(reinterpret_cast<const uint8_t*>(best.data()), best.size(), described, sizeof described);
  std::printf("%s: %zu bytes (from %zu, %zu tries) fail the same way (exit %d): %s\n  written to %s\n", argv0,
              best.size(), std::size_t(fs::file_size(o.minimize)), tries, int(*how), described, out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  if (!o.artifacts.empty()) fs::create_directories(o.artifacts);
  opcost::fuzz::set_report_context(argv[0], o.artifacts.c_str());
  opcost::fuzz::install_failure_handlers();
  if (o.memory_mb > 0) {
    // Bounded memory is part of what is tested: past this, allocation fails, and the
    // std::bad_alloc that follows is reported as out of memory.
    const rlim_t bytes = rlim_t(o.memory_mb) << 20;
    const rlimit limit{bytes, bytes};
    if (setrlimit(RLIMIT_AS, &limit) != 0) std::perror("setrlimit(RLIMIT_AS)");
  }
  if (!o.minimize.empty()) return minimize(o, argv[0]);

  std::vector<std::string> pool;
  std::size_t seeds = 0;
  for (const auto& f : o.files) run_one(read_file(f), o.timeout_s), ++seeds;
  for (const auto& d : o.dirs) {
    std::vector<fs::path> paths;
    for (const auto& e : fs::directory_iterator(d))
      if (e.is_regular_file()) paths.push_back(e.path());
    std::sort(paths.begin(), paths.end());  // the same order, so the same run for a seed
    for (const auto& p : paths) {
      pool.push_back(read_file(p.string()));
      run_one(pool.back(), o.timeout_s);
      ++seeds;
    }
  }
  const double seconds = o.seconds < 0 ? 0 : o.seconds;
  std::size_t mutated = 0;
  const auto start = std::chrono::steady_clock::now();
  if (seconds > 0 && !o.dirs.empty()) {
    std::vector<std::string> dictionary;
    if (!o.dict.empty()) {
      try {
        dictionary = opcost::fuzz::read_dictionary(o.dict);
      } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
        return 2;
      }
    }
    if (pool.empty()) pool.emplace_back();
    const std::size_t seed_count = pool.size();
    constexpr std::size_t kPoolMax = 4096, kKeptMaxBytes = 64 * 1024;
    opcost::fuzz::Mutator mutator(o.seed, std::move(dictionary), o.max_len);
    std::mt19937_64 keep_rng(o.seed ^ 0x9e3779b97f4a7c15ULL);
    const auto deadline = start + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      std::string input = mutator.mutate(pool);
      const std::size_t accepted_before = opcost::fuzz::accepted_count();
      run_one(input, o.timeout_s);
      ++mutated;
      // An input the parser accepted is kept to mutate further: valid inputs lead deeper.
      if (opcost::fuzz::accepted_count() > accepted_before && input.size() <= kKeptMaxBytes) {
        if (pool.size() < kPoolMax)
          pool.push_back(std::move(input));
        else
          pool[seed_count + keep_rng() % (kPoolMax - seed_count)] = std::move(input);
      }
    }
  }
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf(
      "%s: %zu seed inputs and %zu mutated ones in %.1f s (seed %llu, %zu accepted, %zu kept to mutate, peak RSS "
      "%ld MiB): no crash, hang, out-of-memory or undocumented exception\n",
      argv[0], seeds, mutated, elapsed, static_cast<unsigned long long>(o.seed), opcost::fuzz::accepted_count(),
      pool.size(), usage.ru_maxrss / 1024);
  return 0;
}
