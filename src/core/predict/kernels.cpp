#include "core/predict/kernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <unordered_map>

#include "core/text/text.h"

namespace opcost {

std::vector<CallKernels> kernels_per_call(std::vector<TraceOp> ops, const std::vector<TraceKernel>& kernels,
                                          std::size_t* unattributed, uint64_t* unattributed_ns) {
  // Parents first within a thread: earlier start, then later end, then the record opened
  // first (an op and its only nested call can share both timestamps at the clock's resolution).
  std::sort(ops.begin(), ops.end(), [](const TraceOp& a, const TraceOp& b) {
    if (a.thread != b.thread) return a.thread < b.thread;
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    if (a.end_ns != b.end_ns) return a.end_ns > b.end_ns;
    return a.correlation < b.correlation;
  });
  std::vector<std::size_t> outer_of(ops.size());
  std::vector<std::size_t> outer;  // indices into ops
  uint64_t open_until = 0, thread = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (i == 0 || ops[i].thread != thread || ops[i].start_ns >= open_until) {
      thread = ops[i].thread;
      open_until = ops[i].end_ns;
      outer.push_back(i);
    }
    outer_of[i] = outer.size() - 1;
  }
  // Threads merged in start order (the inventory's order: calls are recorded as they start).
  std::vector<std::size_t> order(outer.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return ops[outer[a]].start_ns < ops[outer[b]].start_ns; });
  std::vector<std::size_t> rank(outer.size());
  std::vector<CallKernels> out(outer.size());
  for (std::size_t r = 0; r < order.size(); ++r) {
    rank[order[r]] = r;
    const TraceOp& op = ops[outer[order[r]]];
    out[r].op = op.name;
    out[r].start_ns = op.start_ns;
    out[r].end_ns = op.end_ns;
  }
  std::unordered_map<uint64_t, std::size_t> by_correlation;
  for (std::size_t i = 0; i < ops.size(); ++i) by_correlation.emplace(ops[i].correlation, i);
  std::size_t lost = 0;
  uint64_t lost_ns = 0;
  for (const auto& k : kernels) {
    auto it = by_correlation.find(k.linked_correlation);
    if (it == by_correlation.end()) {
      ++lost;
      lost_ns += k.duration_ns;
      continue;
    }
    auto& call = out[rank[outer_of[it->second]]];
    call.kernels.push_back(k.name);
    call.device_ns += k.duration_ns;
    call.launches.push_back({k.launch_ns, k.start_ns, k.duration_ns});
  }
  if (unattributed) *unattributed = lost;
  if (unattributed_ns) *unattributed_ns = lost_ns;
  return out;
}

namespace {
std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}
}  // namespace

KernelReport compare_kernels(const Inventory& inv, const std::vector<CallKernels>& model,
                             const std::vector<std::optional<std::vector<std::string>>>& isolation) {
  if (model.size() != inv.sequence.size())
    throw std::runtime_error(
        fmt::format("the kernel trace saw {} operator calls, the inventory {}: the model's "
                    "calls changed between the two runs",
                    model.size(), inv.sequence.size()));
  KernelReport r;
  r.entries.resize(inv.entries.size());
  std::vector<std::size_t> calls(inv.entries.size(), 0);
  for (std::size_t i = 0; i < inv.sequence.size(); ++i) {
    const std::size_t e = inv.sequence[i].entry;
    if (model[i].op != inv.entries[e].op)
      throw std::runtime_error(
          fmt::format("call {} is {} in the kernel trace but {} in the inventory", i, model[i].op, inv.entries[e].op));
    if (e >= isolation.size() || !isolation[e]) continue;
    auto& check = r.entries[e];
    if (!check) check = KernelCheck{model[i].kernels, *isolation[e], true, 0};
    check->model_device_us += (double(model[i].device_ns) * 1e-3 - check->model_device_us) / double(++calls[e]);
    // Launch order within one op is not compared: the same kernels, in any order, cost the same.
    if (check->match && sorted(model[i].kernels) != sorted(*isolation[e])) {
      check->match = false;
      check->in_model = model[i].kernels;
    }
  }
  for (const auto& c : r.entries) r.mismatches += c && !c->match;
  return r;
}

std::vector<std::size_t> kernel_less_entries_with_kernels(const KernelReport& k,
                                                          const std::map<std::size_t, OpCost>& costs) {
  std::vector<std::size_t> out;
  for (const auto& [e, c] : costs)
    if (!c.device_work.empty() && e < k.entries.size() && k.entries[e] &&
        (k.entries[e]->model_device_us > 0 || !k.entries[e]->in_model.empty()))
      out.push_back(e);
  return out;
}

nlohmann::json to_json(const KernelCheck& c) {
  return {{"match", c.match},
          {"in_model", c.in_model},
          {"in_isolation", c.in_isolation},
          {"model_device_us_per_call", c.model_device_us}};
}

DeviceTimes device_times(const KernelReport& k, const Inventory& inv, const std::map<std::size_t, OpCost>& costs) {
  DeviceTimes t;
  for (std::size_t e = 0; e < inv.entries.size(); ++e)
    if (auto it = costs.find(e); k.entries[e] && it != costs.end()) {
      t.rows.push_back({e, k.entries[e]->model_device_us, it->second.gpu_us});
      t.model_us += t.rows.back().model_us * double(inv.entries[e].count);
      t.loops_us += t.rows.back().loop_us * double(inv.entries[e].count);
    }
  auto effect = [&](const DeviceTimeRow& r) {
    return std::abs(r.loop_us - r.model_us) * double(inv.entries[r.entry].count);
  };
  std::stable_sort(t.rows.begin(), t.rows.end(), [&](const auto& a, const auto& b) { return effect(a) > effect(b); });
  return t;
}

nlohmann::json to_json(const KernelReport& k, const Inventory& inv, const std::map<std::size_t, OpCost>& costs) {
  nlohmann::json mismatches = nlohmann::json::array();
  std::size_t checked = 0;
  for (std::size_t e = 0; e < inv.entries.size(); ++e) {
    if (!k.entries[e]) continue;
    ++checked;
    if (!k.entries[e]->match) {
      nlohmann::json m = to_json(*k.entries[e]);
      m["signature"] = inv.entries[e].signature();
      mismatches.push_back(m);
    }
  }
  const DeviceTimes t = device_times(k, inv, costs);
  return {{"checked", true},
          {"signatures_checked", checked},
          {"mismatches", mismatches},
          {"device_us_traced_in_model", t.model_us},
          {"device_us_from_loops", t.loops_us}};
}

std::string to_table(const KernelReport& k, const Inventory& inv, const std::map<std::size_t, OpCost>& costs) {
  std::size_t checked = 0;
  for (const auto& c : k.entries) checked += c.has_value();
  std::string out = fmt::format("kernels: {} of {} signatures launch the same kernels alone as in the model\n",
                                checked - k.mismatches, checked);
  auto names = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& n : v) s += (s.empty() ? "" : ", ") + fit_label(n, 60);
    return s.empty() ? std::string("(none)") : s;
  };
  for (std::size_t e = 0; e < inv.entries.size(); ++e)
    if (k.entries[e] && !k.entries[e]->match)
      out += fmt::format("  MISMATCH {}\n    in the model: {}\n    alone:        {}\n", inv.entries[e].signature(),
                         names(k.entries[e]->in_model), names(k.entries[e]->in_isolation));
  const DeviceTimes t = device_times(k, inv, costs);
  if (t.model_us <= 0) return out;
  out += fmt::format(
      "GPU time of the measured operators: {:.1f} µs from their loops, {:.1f} µs traced in the model ({:+.1f}%); "
      "largest differences:\n",
      t.loops_us, t.model_us, 100 * (t.loops_us - t.model_us) / t.model_us);
  for (std::size_t i = 0; i < t.rows.size() && i < 5; ++i) {
    const auto& r = t.rows[i];
    const auto& e = inv.entries[r.entry];
    const std::string name = fit_label(e.signature(), 70);
    out += fmt::format("  {} ×{}: loop {:.2f} µs, in the model {:.2f} µs per call{}\n", name, e.count, r.loop_us,
                       r.model_us,
                       r.model_us > 0 ? fmt::format(" ({:+.1f}%)", 100 * (r.loop_us - r.model_us) / r.model_us) : "");
  }
  return out;
}

}  // namespace opcost
