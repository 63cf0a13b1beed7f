#pragma once
// What values a tensor argument must hold for its call to be valid and to cost what the model
// paid: indices inside the dimension they index, probabilities that are probabilities, masks with
// the density the model's had (and exactly as many true elements as the values written through
// them), boxes with x1 < x2 and y1 < y2, bag offsets that start at 0 and ascend. Both sides live
// here: what the observer records of a model's tensor (value_summary), and how the replay draws
// a tensor from its spec and the call's other arguments (draw_values).
#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "core/spec/arg_value.h"

namespace opcost {

// A tensor argument of one call: the op ("aten::index_put_"), the argument's schema name, its
// place in a tensor list (0 for a plain tensor), and the call's arguments as given, by schema name.
struct ArgPlace {
  const std::string& op;
  const std::string& name;
  std::size_t list_pos = 0;
  const std::map<std::string, const ArgValue*>& given;
};

// Values [low, high) of an integer tensor argument: the spec's :range, else inferred from the
// other arguments where the op indexes with it (an index below the size of the dimension it
// indexes, a class below the number of classes), else [0, 16).
std::pair<double, double> int_range(const ArgPlace& place, const TensorSpec& t);

// `storage` seeded elements for a tensor argument, drawn by `gen` on the device of `draw`, flat,
// in a dtype the caller converts to `dtype` (the spec's). Honours the spec's :range and :zeros;
// a bool tensor with :zeros[f] holds exactly round((1-f)·storage) true elements.
at::Tensor draw_values(const ArgPlace& place, const TensorSpec& t, at::ScalarType dtype, int64_t storage,
                       at::Generator& gen, const at::TensorOptions& draw);

// What the inventory keeps of a model's tensor argument beyond its dtype and shape, where the
// op's cost (or its output's size) depends on the values: the fraction of zero (false) elements
// of a mask, rounded to 2 digits so that signatures stay few; the [min, max+1) of integers whose
// spread sets an output's size (unique's distinct values, bincount's bins).
struct ValueSummary {
  std::optional<double> zeros_fraction;
  std::optional<std::pair<int64_t, int64_t>> range;
  std::optional<int64_t> distinct;  // groups of values: the boxes nms kept
  bool operator==(const ValueSummary&) const = default;
};

// Whether value_summary reads anything of the op's arguments: the observer skips the rest.
bool summarises_values(const std::string& op);

// Reads the tensor's data (on a GPU: a synchronisation, so the observer asks only in its
// inventory step, whose host times are not used). `num_classes` is one_hot's (only -1 makes
// its values matter). Nothing for a tensor whose values do not matter to the op.
ValueSummary value_summary(const std::string& op, const std::string& arg, const at::Tensor& t,
                           int64_t num_classes = -1);

// Boxes (x1, y1, x2, y2), n of them, in `kept` clusters far apart: within a cluster the boxes
// overlap by more than `iou_threshold`, so non-maximum suppression keeps exactly `kept` (one
// per cluster). Float32, on the device of `draw`.
at::Tensor nms_boxes(int64_t n, int64_t kept, double iou_threshold, at::Generator& gen, const at::TensorOptions& draw);

// How many boxes nms keeps in a replay whose boxes carry no ':distinct[N]' (a spec written by
// hand; an inventory records the model's count): 70%, as torchvision's
// fasterrcnn_mobilenet_v3_large_fpn (random weights, 320x320) kept 59-76% of its 1000 proposals.
int64_t default_nms_kept(int64_t boxes);

// How many boxes a model's nms call kept: the op run again on the call's own inputs (the caller
// switches records off). nullopt where the inputs are not nms's (dets, scores, iou_threshold).
std::optional<int64_t> kept_by_nms(const c10::OperatorHandle& nms, const std::vector<c10::IValue>& inputs);

}  // namespace opcost
