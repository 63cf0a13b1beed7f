#pragma once
// Layer ranges for traced calls that ran in no USER_SCOPE layer record: a TorchScript model's
// calls, whose layers the inventory knows from the interpreter's module hierarchy. Torch-free.
#include <cstddef>

#include "core/inventory/inventory.h"
#include "core/trace/activities.h"

namespace opcost {

// Each kept step's calls are matched to the inventory's (match_inventory_calls). For each run
// of consecutive calls in a module, every level of its path ("blocks", "blocks.0",
// "blocks.0.fc") gets a layer range from the run's first call's start to its last call's end,
// on the calls' thread; backward calls make none (they take their forward call's layer). The
// run is then tied again. Returns how many calls got a layer this way.
std::size_t add_inventory_layers(TraceRun& run, const Inventory& inv);

}  // namespace opcost
