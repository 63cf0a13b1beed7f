#include "core/predict/kernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <unordered_map>

namespace opcost {

std::vector<CallKernels> kernels_per_call(std::vector<TraceOp> ops, const std::vector<TraceKernel>& kernels,
                                          std::size_t* unattributed) {
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
    out[r].op = ops[outer[order[r]]].name;
  }
  std::unordered_map<uint64_t, std::size_t> by_correlation;
  for (std::size_t i = 0; i < ops.size(); ++i) by_correlation.emplace(ops[i].correlation, i);
  std::size_t lost = 0;
  for (const auto& k : kernels) {
    auto it = by_correlation.find(k.linked_correlation);
    if (it == by_correlation.end()) {
      ++lost;
      continue;
    }
    auto& call = out[rank[outer_of[it->second]]];
    call.kernels.push_back(k.name);
    call.device_ns += k.duration_ns;
  }
  if (unattributed) *unattributed = lost;
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
    throw std::runtime_error(fmt::format("the kernel trace saw {} operator calls, the inventory {}: the model's "
                                         "calls changed between the two runs",
                                         model.size(), inv.sequence.size()));
  KernelReport r;
  r.entries.resize(inv.entries.size());
  std::vector<std::size_t> calls(inv.entries.size(), 0);
  for (std::size_t i = 0; i < inv.sequence.size(); ++i) {
    const std::size_t e = inv.sequence[i].entry;
    if (model[i].op != inv.entries[e].op)
      throw std::runtime_error(fmt::format("call {} is {} in the kernel trace but {} in the inventory", i, model[i].op,
                                           inv.entries[e].op));
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

nlohmann::json to_json(const KernelCheck& c) {
  return {{"match", c.match}, {"in_model", c.in_model}, {"in_isolation", c.in_isolation},
          {"model_device_us_per_call", c.model_device_us}};
}

}  // namespace opcost
