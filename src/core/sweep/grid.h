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
//
// A grid file is hostile input: a few lines (or one YAML anchor reused on six axes) can ask for
// 10^18 items. So a grid is read and checked first (GridDefinition), its item count computed
// from the lengths alone, refused above a limit, and its items made one at a time.
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/spec/op_call.h"
#include "core/sweep/expression.h"
#include "core/sweep/sweep_limits.h"

namespace opcost {

struct GridItem {
  std::vector<std::pair<std::string, ExprValue>> values;  // every axis and derived value, in order
  std::string call_line;                                  // "aten::conv2d input=f32[1,64,56,56] ..."
  OpCall call;                                            // the call line, parsed
};

// A grid file read and checked, nothing expanded yet.
class GridDefinition {
 public:
  // Throws std::invalid_argument naming `origin`, the key and the fix: not YAML, a missing op,
  // an unknown or repeated key, an axis named twice or with a reserved name (`data`, keywords
  // of expressions), zipped lists of unequal length, more text than a grid needs (aliases
  // repeating big lists).
  static GridDefinition read(const std::string& yaml, const std::string& origin);

  const std::string& name() const;
  const std::string& op() const;
  // The product of the axes' lengths (a zip group and `data` count as one axis each), from the
  // lengths alone. `where` filters can only lower it, so it bounds the items. Saturates at
  // UINT64_MAX.
  std::uint64_t combinations() const;
  // SweepTooLarge (core/sweep/sweep_limits.h) when combinations() > max_items.
  void check_size(std::uint64_t max_items) const;
  // Makes the items in order, one at a time, and hands each to `each` (memory: one item).
  // Returns the combinations a `where` dropped. Throws std::invalid_argument (ExpressionError for
  // expressions) naming the combination: an expression that cannot be evaluated for it, or a
  // call that does not parse.
  std::size_t for_each_item(const std::function<void(GridItem&)>& each) const;

  struct Parts;  // what the file says, checked (grid.cpp)

 private:
  explicit GridDefinition(std::shared_ptr<const Parts> parts) : parts_(std::move(parts)) {}
  std::shared_ptr<const Parts> parts_;
};

// Every item at once, for small grids and tests.
struct Grid {
  std::string name, op;
  std::vector<GridItem> items;
  std::size_t filtered_out = 0;  // combinations a `where` dropped
};

// GridDefinition::read, check_size(max_items), then every item.
Grid expand_grid_text(const std::string& yaml, const std::string& origin,
                      std::uint64_t max_items = kDefaultMaxSweepItems);
Grid expand_grid_file(const std::string& path, std::uint64_t max_items = kDefaultMaxSweepItems);

}  // namespace opcost
