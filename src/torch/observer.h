#pragma once
// Records every ATen call a piece of code makes on this thread, through a RecordFunction
// observer, and builds the inventory. Torch-free header.
#include <functional>

#include "core/inventory/inventory.h"

namespace opcost {

// Runs `body` once with the observer installed on this thread. The outermost dispatcher call
// of each operation is the unit (aten::linear, not the aten::addmm inside it); its inputs are
// summarised as dtype/shape/strides and scalars, and turned into canonical signatures after
// the run. The layer is the innermost USER_SCOPE record open at the call ("" outside any).
Inventory observe(const std::function<void()>& body);

}  // namespace opcost
