// Trace import and write throughput (issue 12, must-have 5; bench/trace_import_bench.py runs
// it): reads a trace with opcost's importer (a torch.profiler Chrome trace, plain or gzip, or an
// nsys SQLite export), writes it back in opcost's layout, and prints one JSON line: seconds,
// MB/s and peak memory of each part. It links the torch-free core only, so its memory is the
// importer's and the writer's, not LibTorch's.
//   opcost_trace_io IN OUT
#include <sys/resource.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/trace/trace_file.h"
#include "core/trace/trace_import.h"

namespace {

double peak_rss_MB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024.0;  // Linux: kilobytes
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: opcost_trace_io IN OUT\n";
    return 2;
  }
  const double start_MB = peak_rss_MB();
  const double in_MB = double(std::filesystem::file_size(argv[1])) / 1e6;
  auto t0 = std::chrono::steady_clock::now();
  const opcost::TraceRun run = opcost::import_trace(argv[1]);
  const double import_s = seconds_since(t0);
  const double import_peak_MB = peak_rss_MB();
  t0 = std::chrono::steady_clock::now();
  opcost::save_trace(run, argv[2]);
  const double write_s = seconds_since(t0);
  const double out_MB = double(std::filesystem::file_size(argv[2])) / 1e6;
  std::cout << nlohmann::json{{"input_MB", in_MB},
                              {"import_s", import_s},
                              {"import_MB_per_s", in_MB / import_s},
                              {"rss_at_start_MB", start_MB},
                              {"peak_rss_after_import_MB", import_peak_MB},
                              {"calls", run.ops.size()},
                              {"device_activities", run.device_activities.size()},
                              {"layers", run.layers.size()},
                              {"output_MB", out_MB},
                              {"write_s", write_s},
                              {"write_MB_per_s", out_MB / write_s},
                              {"peak_rss_MB", peak_rss_MB()}}
                   .dump()
            << "\n";
}
