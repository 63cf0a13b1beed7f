#pragma once
// A stored measurement of the same call at another size (batch, sequence length): the anchor an
// estimate scales from (workflow/predict_estimates.h). A cost model fitted over many operators
// misses a given kernel by an error that its neighbours share (cuDNN's algorithm for a 3-channel
// stem, a tile shape), so an estimate of resnet50 at batch 128 is nearer the truth as "the row
// measured at batch 64, scaled" than as the model's figure alone. Torch-free; docs/estimate.md
// says how the anchor is chosen and scaled.
#include <cstdint>
#include <optional>
#include <vector>

#include "core/spec/op_call.h"

namespace opcost {

// The one extent that differs: the call's and the row's.
struct ExtentPair {
  int64_t call = 0, row = 0;
};

// Where the arguments are the same but for one extent of some of their tensors, and every
// tensor that differs does so in one dimension by the same pair of extents (a batch: an image
// batch, a linear layer's rows; a sequence length: attention's, a layer norm's rows; an inner
// width the input and a weight share: a linear layer's in-features): that pair.
// - Every argument must have the same name in the same place; lists (a cat's tensors) are
//   compared element by element; every value that is not a tensor must be equal.
// - A tensor that differs keeps its dtype, rank, data marks and every other extent. Its strides
//   (contiguous ones where none were recorded) may differ only where one spans the differing
//   dimension, and then in proportion to its extent: an expanded tensor or a slice of a larger
//   buffer is another layout. A tensor that does not differ must be equal.
// - The call's input must be among those that differ: its first tensor of rank 2 or more, else
//   its first tensor (addmm's bias comes first; a weight's leading extent is a layer's width, not
//   a batch), and the row's input likewise. So an embedding, whose first tensor is its weight,
//   is never matched.
// - Two tensors may differ in different dimensions by the same pair: a linear layer at batch 50
//   and 50 out-features against one at 100 and 100. The roofline's ratio, which scales the
//   estimate (workflow/predict_estimates.h), counts both.
// None where anything else differs, or nothing does.
std::optional<ExtentPair> extent_pair(const std::vector<NamedArg>& call, const std::vector<NamedArg>& row);

}  // namespace opcost
