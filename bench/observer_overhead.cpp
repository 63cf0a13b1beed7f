// The inventory observer's cost (issue 3): wall time of one model step, synchronised, run
//   plain          no callbacks
//   observed       inside opcost::observe (RecordFunction with inputs, grouping included)
//   observed_step_only   the same step timed inside the observation, grouping excluded
//   kineto         under the Kineto profiler with record_shapes (torch.profiler's engine),
//                  CPU activity only and CPU+CUDA, enable/disable and event collection included
// alternating the modes so drift (clocks, temperature) hits them alike. Writes JSON to OUT
// (not stdout: Kineto logs there).
//   opcost_observer_overhead OUT.json MODEL BATCH SEQ [REPEATS] [DTYPE]
#include <fmt/format.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "core/stats/summary.h"
#include "torch/models.h"
#include "torch/observer.h"

using namespace opcost;

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void kineto_step(RunnableModel& m, bool cuda) {
  using namespace torch::autograd::profiler;
  namespace impl = torch::profiler::impl;
  const impl::ProfilerConfig cfg(impl::ProfilerState::KINETO, /*report_input_shapes=*/true);
  std::set<impl::ActivityType> acts = {impl::ActivityType::CPU};
  if (cuda) acts.insert(impl::ActivityType::CUDA);
  prepareProfiler(cfg, acts);
  enableProfiler(cfg, acts);
  m.step();
  m.synchronize();
  auto result = disableProfiler();
  if (result->events().empty()) throw std::runtime_error("kineto recorded nothing");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    fmt::print(stderr, "usage: {} OUT.json MODEL BATCH SEQ [REPEATS] [DTYPE]\n", argv[0]);
    return 2;
  }
  const std::string out_path = argv[1];
  ++argv;
  --argc;
  ModelInput in;
  in.batch = std::stoll(argv[2]);
  in.seq = std::stoll(argv[3]);
  const int repeats = argc > 4 ? std::stoi(argv[4]) : 30;
  if (argc > 5) in.dtype = argv[5];
  auto m = make_builtin_model(argv[1], in);
  const bool cuda = m->device_kind() == "cuda";
  for (int i = 0; i < 10; ++i) m->step();
  m->synchronize();
  kineto_step(*m, cuda);  // the profiler's one-time initialisation stays out of the figures
  kineto_step(*m, false);

  std::map<std::string, std::vector<double>> ms;
  std::size_t calls = 0;
  for (int r = 0; r < repeats; ++r) {
    double t0 = now_ms();
    m->step();
    m->synchronize();
    ms["plain"].push_back(now_ms() - t0);

    t0 = now_ms();
    double run_ms = 0;
    Inventory inv = observe([&] {
      const double r0 = now_ms();
      m->step();
      m->synchronize();
      run_ms = now_ms() - r0;
    });
    ms["observed"].push_back(now_ms() - t0);     // the step plus grouping the calls into the inventory
    ms["observed_step_only"].push_back(run_ms);  // the step alone, as the observer slows it
    calls = inv.sequence.size();

    t0 = now_ms();
    kineto_step(*m, false);
    ms["kineto_cpu"].push_back(now_ms() - t0);

    if (cuda) {
      t0 = now_ms();
      kineto_step(*m, true);
      ms["kineto_cpu_cuda"].push_back(now_ms() - t0);
    }
  }
  nlohmann::json out = {{"model", argv[1]},   {"input", m->input_signature()},
                        {"dtype", in.dtype},  {"device", m->device_kind()},
                        {"repeats", repeats}, {"outermost_calls", calls}};
  const double plain = median_of(ms["plain"]);
  for (auto& [mode, v] : ms) {
    const double med = median_of(v);
    out["modes"][mode] = {
        {"median_ms", med}, {"min_ms", *std::min_element(v.begin(), v.end())}, {"overhead_vs_plain", med / plain - 1}};
  }
  std::ofstream(out_path) << out.dump(2) << std::endl;
  return 0;
}
