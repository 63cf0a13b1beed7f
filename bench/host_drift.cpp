// Does the host's speed drift, and does a small reference workload track it? (issue 4:
// CPU-bound predictions). For SECONDS it alternates, every ~0.3 s:
//   ref_cpu    100 boxed aten::add calls on one-element CPU tensors (dispatcher + kernel on the host)
//   ref_cuda   100 aten::add calls on one-element CUDA tensors, issued behind a GPU sleep
//   issue      one model step's host issue time behind a GPU sleep, and its thread CPU time
//   wall       one synchronised step
// for resnet50 b1 fp32 and distilgpt2 1x128 bf16, with the machine's steal time from
// /proc/stat. Writes the series and their spread (the ratio issue/ref is what a host-speed
// correction would rely on) to OUT.json.
//   opcost_host_drift OUT.json [SECONDS]
#include <ATen/ATen.h>
#include <ATen/DeviceAccelerator.h>
#include <c10/core/InferenceMode.h>
#include <fmt/format.h>
#include <time.h>
#include <unistd.h>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/energy/monitor.h"
#include "core/spec/spec_file.h"
#include "core/stats/summary.h"
#include "torch/models.h"
#include "torch/replay.h"
#include "torch/runner.h"

using namespace opcost;

namespace {

double now_us() { return now_s() * 1e6; }
double thread_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e6 + double(ts.tv_nsec) * 1e-3;
}
void gpu_sleep_ms(double ms) { gpu_sleep_s(ms * 1e-3); }
void wait_gpu() { at::accelerator::synchronizeDevice(0); }

// Jiffies of (all, steal) from /proc/stat's first line.
std::pair<double, double> cpu_jiffies() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  double v, all = 0, steal = 0;
  in >> cpu;
  for (int i = 0; i < 10 && in >> v; ++i) {
    all += v;
    if (i == 7) steal = v;
  }
  return {all, steal};
}

double spread(const std::vector<double>& v) {  // coefficient of variation
  double m = 0, s = 0;
  for (double x : v) m += x;
  m /= double(v.size());
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / double(v.size())) / m;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fmt::print(stderr, "usage: {} OUT.json [SECONDS]\n", argv[0]);
    return 2;
  }
  const double seconds = argc > 2 ? std::stod(argv[2]) : 120;
  c10::InferenceMode guard;
  struct Case {
    std::string name;
    std::unique_ptr<RunnableModel> model;
    std::vector<double> issue, cpu, wall, ref_cpu, ref_cuda, t;
  };
  std::vector<Case> cases;
  ModelInput r;
  r.batch = 1;
  cases.push_back({"resnet50 b1 fp32", make_builtin_model("resnet50", r)});
  ModelInput g;
  g.batch = 1;
  g.seq = 128;
  g.dtype = "bf16";
  cases.push_back({"distilgpt2 1x128 bf16", make_builtin_model("distilgpt2", g)});
  for (auto& c : cases) {
    for (int i = 0; i < 10; ++i) c.model->step();
    c.model->synchronize();
  }
  ReplayOptions cpu_opt, cuda_opt;
  cpu_opt.device = "cpu";
  cuda_opt.device = "cuda";
  auto add_cpu = PreparedCall::prepare(parse_call_line("aten::add.Tensor self=f32[1] other=f32[1]", "probe"), cpu_opt);
  auto add_cuda =
      PreparedCall::prepare(parse_call_line("aten::add.Tensor self=f32[1] other=f32[1]", "probe"), cuda_opt);
  auto ref = [](PreparedCall& p, bool cuda) {
    std::vector<double> v;
    for (int rep = 0; rep < 5; ++rep) {
      if (cuda) gpu_sleep_ms(3);
      const double t0 = now_us();
      for (int i = 0; i < 100; ++i) p.call();
      v.push_back((now_us() - t0) / 100);
      if (cuda) wait_gpu();
    }
    return median_of(v);
  };
  std::vector<double> steal_share, times;
  const double start = now_us();
  auto [all0, steal0] = cpu_jiffies();
  while (now_us() - start < seconds * 1e6) {
    for (auto& c : cases) {
      c.t.push_back((now_us() - start) * 1e-6);
      c.ref_cpu.push_back(ref(*add_cpu, false));
      c.ref_cuda.push_back(ref(*add_cuda, true));
      std::vector<double> issue, cpu, wall;
      for (int rep = 0; rep < 3; ++rep) {
        gpu_sleep_ms(20);
        const double t0 = now_us(), c0 = thread_cpu_us();
        c.model->step();
        issue.push_back(now_us() - t0);
        cpu.push_back(thread_cpu_us() - c0);
        wait_gpu();
        const double w0 = now_us();
        c.model->step();
        c.model->synchronize();
        wall.push_back(now_us() - w0);
      }
      c.issue.push_back(median_of(issue));
      c.cpu.push_back(median_of(cpu));
      c.wall.push_back(median_of(wall));
    }
    auto [all1, steal1] = cpu_jiffies();
    steal_share.push_back(all1 > all0 ? (steal1 - steal0) / (all1 - all0) : 0);
    times.push_back((now_us() - start) * 1e-6);
    all0 = all1;
    steal0 = steal1;
    usleep(200000);
  }
  nlohmann::json out = {{"seconds", seconds}, {"steal_share", steal_share}, {"t", times}};
  for (auto& c : cases) {
    std::vector<double> by_cpu, by_cuda;
    for (std::size_t i = 0; i < c.issue.size(); ++i) {
      by_cpu.push_back(c.issue[i] / c.ref_cpu[i]);
      by_cuda.push_back(c.issue[i] / c.ref_cuda[i]);
    }
    out["cases"][c.name] = {{"t", c.t},
                            {"issue_us", c.issue},
                            {"thread_cpu_us", c.cpu},
                            {"wall_us", c.wall},
                            {"ref_cpu_us", c.ref_cpu},
                            {"ref_cuda_us", c.ref_cuda},
                            {"spread",
                             {{"issue", spread(c.issue)},
                              {"wall", spread(c.wall)},
                              {"ref_cpu", spread(c.ref_cpu)},
                              {"ref_cuda", spread(c.ref_cuda)},
                              {"issue_over_ref_cpu", spread(by_cpu)},
                              {"issue_over_ref_cuda", spread(by_cuda)}}}};
    fmt::print(stderr,
               "{}: {} samples, spread (CV) issue {:.3f}, wall {:.3f}, ref_cpu {:.3f}, ref_cuda {:.3f}, "
               "issue/ref_cpu {:.3f}, issue/ref_cuda {:.3f}\n",
               c.name, c.issue.size(), spread(c.issue), spread(c.wall), spread(c.ref_cpu), spread(c.ref_cuda),
               spread(by_cpu), spread(by_cuda));
  }
  std::ofstream(argv[1]) << out.dump(1) << std::endl;
  return 0;
}
