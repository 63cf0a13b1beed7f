#pragma once
// The trace recorder and its run, for opcost.trace (python/opcost/_trace.py).
#include <pybind11/pybind11.h>

namespace opcost {

void bind_trace(pybind11::module_& m);

}  // namespace opcost
