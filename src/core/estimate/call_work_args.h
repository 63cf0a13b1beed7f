#pragma once
// Reading a call's named arguments for call_work (internal to core/estimate): tensors, integer
// lists, dimensions, dtypes, and the shape arithmetic every family shares. Sizes are doubles:
// a hostile shape (a 2^62 dimension) must give a large figure, never an integer overflow.
// Every reader says nullopt for a value of the wrong kind, so a misfit has no figure.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/spec/op_call.h"

namespace opcost::call_work_args {

using Shape = std::vector<int64_t>;

const NamedArg* named(const OpCall& call, std::string_view name);
// The tensor argument `name`; nullptr when absent, None or not a tensor.
const TensorSpec* tensor(const OpCall& call, std::string_view name);

double elements(const Shape& s);
double bytes_of(const TensorSpec* t);  // 0 for nullptr
// Bytes per element of the accumulate type PyTorch keeps statistics in (a norm's mean, a
// variance): 8 for f64, else 4.
double accumulate_bytes(const std::string& dtype);

// An integer-list argument of `rank` entries (a single value repeated, as PyTorch expands
// `stride=2`), `fallback` when absent or None.
std::optional<Shape> int_list(const OpCall& call, std::string_view name, std::size_t rank, int64_t fallback);
// Any number of integers: an integer is a list of one. nullopt for anything else.
std::optional<Shape> ints(const ArgValue& v);
// An integer argument, `fallback` when absent (an optional one given None is absent too).
std::optional<int64_t> int_arg(const OpCall& call, std::string_view name, int64_t fallback);
std::optional<bool> bool_arg(const OpCall& call, std::string_view name, bool fallback);
// A backward operator's output_mask: which of its three gradients (input, weight, bias) are asked
// for; nullopt when absent or not three booleans.
std::optional<std::array<bool, 3>> gradient_mask(const OpCall& call);
// A ScalarType argument (`dtype=bf16`, `dtype=torch.float32`) as a canonical code; `fallback`
// when absent or None; nullopt for a word that names no dtype.
std::optional<std::string> dtype_arg(const OpCall& call, std::string_view name, const std::string& fallback);

// A dimension index wrapped into [0, rank) as PyTorch does (-1 the last); nullopt outside
// [-rank, rank). A 0-dim tensor takes -1 and 0, as a 1-dim one would.
std::optional<std::size_t> wrap_dim(int64_t d, std::size_t rank);

// NumPy's broadcasting of two shapes; nullopt where they do not broadcast.
std::optional<Shape> broadcast(const Shape& a, const Shape& b);

// Bytes per element of the dtype PyTorch promotes these tensors to (torch.cat's result):
// the highest category (bool < integer < floating < complex), its widest member, f16 with
// bf16 giving f32 and u8 with i8 giving i16.
double promoted_bytes(const std::vector<const TensorSpec*>& tensors);

// Whether a tensor is already laid out in `memory_format` ("contiguous_format" or absent:
// row-major; "channels_last", "channels_last_3d"), its strides as written (none: row-major).
// Dimensions of size 1 may have any stride, as in PyTorch's is_contiguous.
bool laid_out_as(const TensorSpec& t, std::string_view memory_format);

// Whether `t` can be viewed as `shape` without a copy (PyTorch's computeStride): always when
// it is row-major, else when each run of its dimensions that is contiguous in memory maps
// onto whole dimensions of the new shape. Assumes equal element counts.
bool viewable_as(const TensorSpec& t, const Shape& shape);

}  // namespace opcost::call_work_args
