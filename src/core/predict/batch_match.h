#pragma once
// A stored measurement of the same call at another batch size: the anchor an estimate scales
// from (workflow/predict_estimates.h). A cost model fitted over many operators misses a given
// kernel by an error that its neighbours share (cuDNN's algorithm for a 3-channel stem, a tile
// shape), so an estimate of resnet50 at batch 128 is nearer the truth as "the row measured at
// batch 64, times the model's ratio of the two" than as the model's figure alone. Torch-free;
// docs/estimate.md says how the anchor is chosen.
#include <cstdint>
#include <optional>
#include <vector>

#include "core/spec/op_call.h"

namespace opcost {

struct BatchPair {
  int64_t call = 0, row = 0;  // the leading extent of the call's tensors and of the row's
};

// Where the arguments are the same but for the leading extent of some of their tensors, and
// every tensor that differs does so by the same pair of extents: that pair. Every argument must
// have the same name in the same place; tensors the same dtype, rank, other extents, strides
// but the leading one, and data marks; lists (a cat's tensors) compared element by element;
// every other value equal; and the call's first tensor (its input) among those that differ: a
// weight's leading extent is a layer's width, not a batch. None where anything else differs,
// or nothing does.
std::optional<BatchPair> batch_pair(const std::vector<NamedArg>& call, const std::vector<NamedArg>& row);

}  // namespace opcost
