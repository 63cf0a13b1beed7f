#pragma once
// The cost model's parts for `opcost.fit` and `opcost.estimate` (python/opcost/_fit.py): the
// features of a call (one definition, core/estimate/cost_features.h), a fitted model read back
// and evaluated, and the database's cost_models table.
#include <pybind11/pybind11.h>

namespace opcost {

void bind_estimate(pybind11::module_& m);

}  // namespace opcost
