#pragma once
// Sweep grids: an operator's arguments as templates over axes, expanded to the calls that
// `opcost measure` accepts.
//
//   name: conv2d-resnet
//   op: aten::conv2d
//   args: {input: "{dtype}[{batch},{cin},{hw},{hw}]", weight: "{dtype}[{cout},{cin},{k},{k}]",
//          stride: "{stride}", padding: "{k // 2}"}
//   axes: {batch: [1, 8, 32], hw: [7, 14, 28, 56], k: [1, 3], stride: [1, 2], dtype: [f32, bf16]}
//   zip:                       # axes that move together: one value of each, in step
//     - {cin: [64, 128, 256], cout: [128, 256, 512]}
//   derive: {pad: "k // 2"}    # values computed from the others, in order
//   where: "hw >= 7 * stride"  # a filter, or a list of them (all must hold)
//   data: [normal, {zeros: 0.5}]   # how floating-point inputs are filled: normal (the default),
//                                  # uniform, {uniform: [lo, hi]}, {zeros: fraction}
//
// Items come in a fixed order: the cartesian product of `axes` (in file order, the first
// slowest), then each `zip` group as one axis, then `data` (an axis named "data", its values
// "normal", "uniform", "uniform[lo,hi]", "zeros=f"). "{expression}" in an argument is replaced
// by its value (core/sweep/expression.h). Torch-free.
#include <string>
#include <utility>
#include <vector>

#include "core/spec/op_call.h"
#include "core/sweep/expression.h"

namespace opcost {

struct GridItem {
  std::vector<std::pair<std::string, ExprValue>> values;  // every axis and derived value, in order
  std::string call_line;                                  // "aten::conv2d input=f32[1,64,56,56] ..."
  OpCall call;                                            // the call line, parsed
};

struct Grid {
  std::string name, op;
  std::vector<GridItem> items;
  std::size_t filtered_out = 0;  // combinations a `where` dropped
};

// Throws std::invalid_argument (ExpressionError for expressions) naming `origin`, the key and
// the fix: a missing op or axis list, zipped lists of unequal length, an expression that
// cannot be evaluated for some combination (with that combination), or a call that does not
// parse.
Grid expand_grid_text(const std::string& yaml, const std::string& origin);
Grid expand_grid_file(const std::string& path);

}  // namespace opcost
