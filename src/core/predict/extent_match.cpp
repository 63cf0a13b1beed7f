#include "core/predict/extent_match.h"

#include <algorithm>
#include <variant>

namespace opcost {

namespace {

// A tensor's strides: as recorded, else (a contiguous tensor's are not) the contiguous ones.
std::vector<int64_t> strides_of(const TensorSpec& t) {
  if (t.strides) return *t.strides;
  std::vector<int64_t> out(t.shape.size(), 1);
  for (std::size_t d = t.shape.size(); d-- > 1;) out[d - 1] = out[d] * std::max<int64_t>(t.shape[d], 1);
  return out;
}

// Compares two tensors; sets `pair` where they differ in one extent (false where they differ
// otherwise, or by another pair than `pair` already holds). `differs`: whether they did.
bool same_but_one_extent(const TensorSpec& a, const TensorSpec& b, std::optional<ExtentPair>& pair, bool& differs) {
  differs = false;
  if (a.dtype != b.dtype || a.shape.size() != b.shape.size() || a.device != b.device || a.range != b.range ||
      a.zeros_fraction != b.zeros_fraction || a.distinct != b.distinct || a.same_as != b.same_as)
    return false;
  std::size_t dim = a.shape.size();  // the differing dimension; none yet
  for (std::size_t d = 0; d < a.shape.size(); ++d) {
    if (a.shape[d] == b.shape[d]) continue;
    if (dim != a.shape.size()) return false;  // a second one
    dim = d;
  }
  // The layouts, compared by their strides (recorded ones, or contiguous where none were: the
  // recorder leaves a contiguous tensor's out). A size-1 dimension's stride says nothing.
  const std::vector<int64_t> sa = strides_of(a), sb = strides_of(b);
  if (sa.size() != a.shape.size() || sb.size() != b.shape.size()) return false;
  for (std::size_t d = 0; d < sa.size(); ++d) {
    if (sa[d] == sb[d] || (a.shape[d] == 1 && b.shape[d] == 1)) continue;
    if (d == dim || dim == a.shape.size()) return false;
    // Only a stride that spans the differing dimension may differ, and then in proportion to its
    // extent (a contiguous outer dimension's): anything else is another layout (an expanded
    // tensor, a slice of a larger buffer), which moves other bytes.
    // (A size-1 dimension's own stride says nothing: any stride spans it.)
    using Wide = __int128;
    const bool spans = (a.shape[dim] == 1 || sa[d] > sa[dim]) && (b.shape[dim] == 1 || sb[d] > sb[dim]);
    if (!spans || Wide(sa[d]) * b.shape[dim] != Wide(sb[d]) * a.shape[dim]) return false;
  }
  if (dim == a.shape.size()) return true;
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
