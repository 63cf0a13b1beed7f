#pragma once
// The operators each call_work file counts (internal to core/estimate): call_work.cpp looks a
// call's operator up in these tables and lists them for counted_operators().
#include <optional>
#include <span>
#include <string_view>

#include "core/estimate/call_work.h"

namespace opcost::call_work_families {

struct CountedOperator {
  std::string_view op;  // "aten::layer_norm"
  OpFamily family;
  std::optional<CallWork> (*count)(const OpCall& call);  // nullopt: a misfit
};

// Convolutions, matrix products, pointwise operators and comparisons, fills, new tensors and
// arange (call_work.cpp).
std::span<const CountedOperator> compute_operators();
// Attention (fused multi-head too), normalization, reductions and pooling (call_work_layers.cpp).
std::span<const CountedOperator> layer_operators();
// Embedding, copies and conversions, concatenation, pad, roll, gathers and indexing, dropout, and
// views (call_work_movement.cpp).
std::span<const CountedOperator> movement_operators();

// One operation per broadcast output element (call_work.cpp): also aten::max and aten::min
// given a tensor `other`.
std::optional<CallWork> count_elementwise(const OpCall& call);

}  // namespace opcost::call_work_families
