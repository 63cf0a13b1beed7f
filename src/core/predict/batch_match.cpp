#include "core/predict/batch_match.h"

#include <algorithm>
#include <variant>

namespace opcost {

namespace {

// The extents' pair of two tensors equal but for their leading extent (and its stride), set
// into `pair` where they differ; false where anything else differs or the pair disagrees.
bool same_but_leading(const TensorSpec& a, const TensorSpec& b, std::optional<BatchPair>& pair) {
  if (a.dtype != b.dtype || a.shape.size() != b.shape.size() || a.device != b.device || a.range != b.range ||
      a.zeros_fraction != b.zeros_fraction || a.distinct != b.distinct ||
      a.strides.has_value() != b.strides.has_value())
    return false;
  if (a.shape.empty()) return true;  // a 0-dimensional tensor has no batch: equal dtypes suffice
  for (std::size_t d = 1; d < a.shape.size(); ++d)
    if (a.shape[d] != b.shape[d]) return false;
  if (a.strides && (a.strides->size() != b.strides->size() ||
                    !std::equal(a.strides->begin() + (a.strides->empty() ? 0 : 1), a.strides->end(),
                                b.strides->begin() + (b.strides->empty() ? 0 : 1))))
    return false;
  if (a.shape[0] == b.shape[0]) return true;
  if (pair) return pair->call == a.shape[0] && pair->row == b.shape[0];
  pair = BatchPair{a.shape[0], b.shape[0]};
  return true;
}

bool same_but_batch(const ArgValue& a, const ArgValue& b, std::optional<BatchPair>& pair) {
  const auto* ta = std::get_if<TensorSpec>(&a.v);
  const auto* tb = std::get_if<TensorSpec>(&b.v);
  if (ta && tb) return same_but_leading(*ta, *tb, pair);
  const auto* la = std::get_if<ArgList>(&a.v);
  const auto* lb = std::get_if<ArgList>(&b.v);
  if (la && lb) {
    if (la->size() != lb->size()) return false;
    // Lists nest at most kMaxListDepth deep (parse_value refuses deeper): the recursion is bounded.
    for (std::size_t i = 0; i < la->size(); ++i)
      if (!same_but_batch((*la)[i], (*lb)[i], pair)) return false;
    return true;
  }
  return a == b;
}

// The call's first tensor (its input: `self`, `input`, a list's first), where the batch leads.
const TensorSpec* first_tensor(const ArgValue& v) {
  if (const auto* t = std::get_if<TensorSpec>(&v.v)) return t;
  if (const auto* list = std::get_if<ArgList>(&v.v))
    for (const ArgValue& item : *list)
      if (const TensorSpec* t = first_tensor(item)) return t;
  return nullptr;
}

}  // namespace

std::optional<BatchPair> batch_pair(const std::vector<NamedArg>& call, const std::vector<NamedArg>& row) {
  if (call.size() != row.size()) return std::nullopt;
  std::optional<BatchPair> pair;
  for (std::size_t i = 0; i < call.size(); ++i)
    if (call[i].name != row[i].name || !same_but_batch(call[i].value, row[i].value, pair)) return std::nullopt;
  // The batch is the input's leading extent: a weight's (a layer's width) is not one.
  for (const NamedArg& a : call)
    if (const TensorSpec* input = first_tensor(a.value))
      return pair && !input->shape.empty() && input->shape[0] == pair->call ? pair : std::nullopt;
  return std::nullopt;
}

}  // namespace opcost
