#include "core/predict/extent_match.h"

#include <variant>

namespace opcost {

namespace {

// Compares two tensors; sets `pair` where they differ in one extent (false where they differ
// otherwise, or by another pair than `pair` already holds). `differs`: whether they did.
bool same_but_one_extent(const TensorSpec& a, const TensorSpec& b, std::optional<ExtentPair>& pair, bool& differs) {
  differs = false;
  if (a.dtype != b.dtype || a.shape.size() != b.shape.size() || a.device != b.device || a.range != b.range ||
      a.zeros_fraction != b.zeros_fraction || a.distinct != b.distinct ||
      a.strides.has_value() != b.strides.has_value())
    return false;
  if (a.strides && a.strides->size() != b.strides->size()) return false;
  std::size_t dim = a.shape.size();  // the differing dimension; none yet
  for (std::size_t d = 0; d < a.shape.size(); ++d) {
    if (a.shape[d] == b.shape[d]) continue;
    if (dim != a.shape.size()) return false;  // a second one
    dim = d;
  }
  if (dim == a.shape.size()) return a.strides == b.strides;
  // Strides of the differing dimension and inside it stay; an outer one spans it and may not.
  if (a.strides)
    for (std::size_t d = 0; d < a.strides->size(); ++d)
      if ((*a.strides)[d] != (*b.strides)[d] && (*a.strides)[d] <= (*a.strides)[dim] &&
          (*b.strides)[d] <= (*b.strides)[dim])
        return false;
  differs = true;
  if (pair) return pair->call == a.shape[dim] && pair->row == b.shape[dim];
  pair = ExtentPair{a.shape[dim], b.shape[dim]};
  return true;
}

bool same_but_extent(const ArgValue& a, const ArgValue& b, std::optional<ExtentPair>& pair) {
  const auto* ta = std::get_if<TensorSpec>(&a.v);
  const auto* tb = std::get_if<TensorSpec>(&b.v);
  if (ta && tb) {
    bool differs = false;
    return same_but_one_extent(*ta, *tb, pair, differs);
  }
  const auto* la = std::get_if<ArgList>(&a.v);
  const auto* lb = std::get_if<ArgList>(&b.v);
  if (la && lb) {
    if (la->size() != lb->size()) return false;
    // Lists nest at most kMaxListDepth deep (parse_value refuses deeper): the recursion is bounded.
    for (std::size_t i = 0; i < la->size(); ++i)
      if (!same_but_extent((*la)[i], (*lb)[i], pair)) return false;
    return true;
  }
  return a == b;
}

// The first tensor of `v` (a list's first) of at least `min_rank` dimensions.
const TensorSpec* first_tensor(const ArgValue& v, std::size_t min_rank) {
  if (const auto* t = std::get_if<TensorSpec>(&v.v)) return t->shape.size() >= min_rank ? t : nullptr;
  if (const auto* list = std::get_if<ArgList>(&v.v))
    for (const ArgValue& item : *list)
      if (const TensorSpec* t = first_tensor(item, min_rank)) return t;
  return nullptr;
}

// The call's input: its first tensor of rank 2 or more, else its first tensor.
const TensorSpec* input_of(const std::vector<NamedArg>& args) {
  for (std::size_t min_rank : {2, 1})
    for (const NamedArg& a : args)
      if (const TensorSpec* t = first_tensor(a.value, min_rank)) return t;
  return nullptr;
}

}  // namespace

std::optional<ExtentPair> extent_pair(const std::vector<NamedArg>& call, const std::vector<NamedArg>& row) {
  if (call.size() != row.size()) return std::nullopt;
  std::optional<ExtentPair> pair;
  for (std::size_t i = 0; i < call.size(); ++i)
    if (call[i].name != row[i].name || !same_but_extent(call[i].value, row[i].value, pair)) return std::nullopt;
  if (!pair) return std::nullopt;
  // The input differs (not only a weight), by the pair: the same place in both argument lists
  // holds it, as every argument was compared in place.
  const TensorSpec* call_input = input_of(call);
  const TensorSpec* row_input = input_of(row);
  if (!call_input || !row_input) return std::nullopt;
  std::optional<ExtentPair> input_pair;
  bool differs = false;
  if (!same_but_one_extent(*call_input, *row_input, input_pair, differs) || !differs) return std::nullopt;
  if (input_pair->call != pair->call || input_pair->row != pair->row) return std::nullopt;
  return pair;
}

}  // namespace opcost
