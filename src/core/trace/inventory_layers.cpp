#include "core/trace/inventory_layers.h"

#include <string>
#include <vector>

#include "core/trace/energy_attribution.h"

namespace opcost {

std::size_t add_inventory_layers(TraceRun& run, const Inventory& inv) {
  const std::vector<int> match = match_inventory_calls(run, inv);
  struct Open {
    std::string name;
    int64_t start_ns, end_ns;
  };
  std::vector<Open> open;  // the module path's levels around the current calls, outermost first
  uint64_t thread = 0;
  std::size_t named = 0;
  auto close_to = [&](std::size_t depth) {
    while (open.size() > depth) {
      run.layers.push_back(HostRange{open.back().name, thread, open.back().start_ns, open.back().end_ns});
      open.pop_back();
    }
  };
  int step = -1;
  for (std::size_t i = 0; i < run.ops.size(); ++i) {  // ordered by start
    const OpActivity& op = run.ops[i];
    if (match[i] < 0) continue;
    const InventoryCall& call = inv.sequence[std::size_t(match[i])];
    if (inv.entries[call.entry].phase != "forward") continue;
    if (op.step != step || op.thread != thread) {  // ranges never span steps or threads
      close_to(0);
      step = op.step;
      thread = op.thread;
    }
    std::vector<std::string> levels;  // "blocks.0.fc": blocks, blocks.0, blocks.0.fc
    for (std::size_t dot = 0; !call.layer.empty(); ++dot) {
      dot = call.layer.find('.', dot);
      levels.push_back(call.layer.substr(0, dot));
      if (dot == std::string::npos) break;
    }
    std::size_t same = 0;
    while (same < open.size() && same < levels.size() && open[same].name == levels[same]) ++same;
    close_to(same);
    for (std::size_t l = same; l < levels.size(); ++l) open.push_back(Open{levels[l], op.start_ns, op.end_ns});
    for (auto& o : open) o.end_ns = std::max(o.end_ns, op.end_ns);
    named += !levels.empty();
  }
  close_to(0);
  tie_activities(run);
  return named;
}

}  // namespace opcost
