// Does an operator's host (CPU) cost measured in replay transfer to the same call inside the
// model? (issue 4: CPU-bound predictions). For one model step it measures, per unique call:
//   model     the call's host time inside the model, from the inventory observer
//             (median over REPEATS observed steps; observer overhead included)
//   iso       the replay loop's estimate: N identical boxed calls issued behind a GPU sleep
//   seq       the model's whole call sequence replayed (each call its own prepared inputs),
//             behind a GPU sleep, each call timed on the host
// plus the whole step's host issue time behind a sleep (no observer), its synchronised wall
// time, and boxed-versus-direct dispatch of aten::add on f32[1]. Writes JSON to OUT.
//   opcost_host_cost_transfer OUT.json MODEL BATCH SEQ [DTYPE [REPEATS]]
#include <ATen/ATen.h>
#include <ATen/DeviceAccelerator.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/InferenceMode.h>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/energy/monitor.h"
#include "core/spec/spec_file.h"
#include "core/stats/summary.h"
#include "torch/models.h"
#include "torch/observer.h"
#include "torch/replay.h"
#include "torch/runner.h"

using namespace opcost;

namespace {

double now_us() { return now_s() * 1e6; }

bool g_cuda = false;

// Blocks the GPU for about `ms`, so host-side launches never wait on a full queue.
void prefill(double ms) {
  if (g_cuda) gpu_sleep_s(ms * 1e-3);
}
void wait_gpu() {
  if (g_cuda) at::accelerator::synchronizeDevice(0);
}

// Median host µs per call of `n` back-to-back calls of f, behind a prefill.
template <class F>
double issue_per_call(F&& f, int n, int reps = 21) {
  std::vector<double> v;
  for (int r = 0; r < reps; ++r) {
    prefill(0.5 + 0.02 * n);
    const double t0 = now_us();
    for (int i = 0; i < n; ++i) f();
    v.push_back((now_us() - t0) / n);
    wait_gpu();
  }
  return median_of(v);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    fmt::print(stderr, "usage: {} OUT.json MODEL BATCH SEQ [DTYPE [REPEATS]]\n", argv[0]);
    return 2;
  }
  ModelInput in;
  in.batch = std::stoll(argv[3]);
  in.seq = std::stoll(argv[4]);
  if (argc > 5) in.dtype = argv[5];
  const int repeats = argc > 6 ? std::stoi(argv[6]) : 9;
  auto model = make_builtin_model(argv[2], in);
  g_cuda = model->device_kind() == "cuda";
  c10::InferenceMode guard;
  for (int i = 0; i < 10; ++i) model->step();
  model->synchronize();

  nlohmann::json out = {{"model", argv[2]},
                        {"input", model->input_signature()},
                        {"dtype", in.dtype},
                        {"device", model->device_kind()},
                        {"repeats", repeats}};
  // The whole step: synchronised wall time, and host issue time behind a sleep.
  std::vector<double> wall, issue;
  for (int r = 0; r < 3 * repeats; ++r) {
    double t0 = now_us();
    model->step();
    model->synchronize();
    wall.push_back(now_us() - t0);
    prefill(3 * wall.back() / 1000 + 5);
    t0 = now_us();
    model->step();
    issue.push_back(now_us() - t0);
    model->synchronize();
  }
  out["step_wall_us"] = median_of(wall);
  out["step_issue_us"] = median_of(issue);

  // Observed host times per call.
  Inventory inv;
  std::vector<std::vector<double>> host, gap;
  for (int r = 0; r < repeats; ++r) {
    Inventory got = observe([&] {
      prefill(3 * out["step_wall_us"].get<double>() / 1000 + 5);
      model->step();
      model->synchronize();
    });
    if (r == 0) {
      inv = got;
      host.resize(inv.sequence.size());
      gap.resize(inv.sequence.size());
    }
    if (got.sequence.size() != inv.sequence.size()) throw std::runtime_error("call sequence changed between steps");
    for (std::size_t i = 0; i < got.sequence.size(); ++i) {
      host[i].push_back(got.sequence[i].host_us);
      gap[i].push_back(got.sequence[i].host_gap_us);
    }
  }

  // Replay: one prepared call per unique signature.
  ReplayOptions ro;
  ro.device = model->device_kind();
  std::vector<std::unique_ptr<PreparedCall>> calls;
  for (const auto& e : inv.entries)
    calls.push_back(PreparedCall::prepare(parse_call_line(e.signature(), "inventory"), ro));
  wait_gpu();

  std::vector<std::vector<double>> seq(inv.sequence.size());
  std::vector<double> seq_total;
  for (int r = 0; r < repeats; ++r) {
    prefill(3 * out["step_wall_us"].get<double>() / 1000 + 5);
    double t_prev = now_us();
    const double t_start = t_prev;
    for (std::size_t i = 0; i < inv.sequence.size(); ++i) {
      calls[inv.sequence[i].entry]->call();
      const double t = now_us();
      seq[i].push_back(t - t_prev);
      t_prev = t;
    }
    seq_total.push_back(t_prev - t_start);
    wait_gpu();
  }

  double sum_model = 0, sum_gap = 0, sum_iso10 = 0, sum_iso100 = 0, sum_seq = 0;
  std::vector<std::vector<double>> model_of(inv.entries.size()), gap_of(inv.entries.size()), seq_of(inv.entries.size());
  for (std::size_t i = 0; i < inv.sequence.size(); ++i) {
    const std::size_t e = inv.sequence[i].entry;
    model_of[e].push_back(median_of(host[i]));
    gap_of[e].push_back(median_of(gap[i]));
    seq_of[e].push_back(median_of(seq[i]));
    sum_model += model_of[e].back();
    sum_gap += gap_of[e].back();
    sum_seq += seq_of[e].back();
  }
  for (std::size_t e = 0; e < inv.entries.size(); ++e) {
    auto& c = *calls[e];
    const double iso10 = issue_per_call([&] { c.call(); }, 10);
    const double iso100 = issue_per_call([&] { c.call(); }, 100, 9);
    const auto n = double(inv.entries[e].count);
    sum_iso10 += n * iso10;
    sum_iso100 += n * iso100;
    out["entries"].push_back({{"signature", inv.entries[e].signature()},
                              {"count", inv.entries[e].count},
                              {"nested", inv.entries[e].nested},
                              {"model_us", median_of(model_of[e])},
                              {"model_gap_us", median_of(gap_of[e])},
                              {"seq_us", median_of(seq_of[e])},
                              {"iso10_us", iso10},
                              {"iso100_us", iso100}});
  }
  out["calls"] = inv.sequence.size();
  out["sum"] = {{"model_us", sum_model}, {"model_gap_us", sum_gap},
                {"seq_us", sum_seq},     {"seq_untimed_total_us", median_of(seq_total)},
                {"iso10_us", sum_iso10}, {"iso100_us", sum_iso100}};

  // Boxed replay against a direct call, on the smallest op.
  const auto dev = g_cuda ? at::Device(at::kCUDA) : at::Device(at::kCPU);
  at::Tensor a = at::randn({1}, at::TensorOptions().device(dev));
  auto boxed = PreparedCall::prepare(parse_call_line("aten::add.Tensor self=f32[1] other=f32[1]", "probe"), ro);
  auto handle = c10::Dispatcher::singleton().findSchemaOrThrow("aten::add", "Tensor");
  std::vector<c10::IValue> proto{a, a, c10::Scalar(1)}, stack;
  at::Tensor keep;
  out["add_f32_1"] = {
      {"direct_at_add_us", issue_per_call([&] { keep = at::add(a, a); }, 100, 9)},
      {"boxed_stack_copy_us", issue_per_call(
                                  [&] {
                                    stack = proto;
                                    handle.callBoxed(stack);
                                  },
                                  100, 9)},
      {"prepared_call_us", issue_per_call([&] { boxed->call(); }, 100, 9)},
      {"empty_like_us", issue_per_call([&] { keep = at::empty_like(a); }, 100, 9)},
  };
  std::ofstream(argv[1]) << out.dump(1) << std::endl;
  fmt::print(stderr,
             "{} {}: step wall {:.0f} µs, issue {:.0f} µs; "
             "sums: model {:.0f} + gaps {:.0f}, seq {:.0f}, iso10 {:.0f}, "
             "iso100 {:.0f}; add: {}\n",
             argv[2], model->input_signature(), out["step_wall_us"].get<double>(), out["step_issue_us"].get<double>(),
             sum_model, sum_gap, sum_seq, sum_iso10, sum_iso100, out["add_f32_1"].dump());
  return 0;
}
