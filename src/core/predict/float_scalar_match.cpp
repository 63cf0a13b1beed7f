#include "core/predict/float_scalar_match.h"

#include <algorithm>
#include <iterator>
#include <string>

namespace opcost {

namespace {

// The operator's name without its namespace, as the lists below spell it ("pow_").
std::string_view bare_name(std::string_view op) {
  const auto colons = op.rfind("::");
  return colons == std::string_view::npos ? op : op.substr(colons + 2);
}

// Any operator whose bare name contains one of these: every overload, in-place and _foreach_
// variant, and the backward of each.
constexpr std::string_view kWorkChangingParts[] = {
    "pow",        // pow, pow_, float_power, _foreach_pow: exponents 0, 0.5, 1, 2, 3, -1 ... have fast paths
    "dropout",    // p 0 (or not training) copies or returns its input; p 1 fills zeros
    "attention",  // scaled_dot_product_*: dropout_p above 0 picks another backend or kernel
    "addmm",      // addmm, _addmm_activation, baddbmm: beta 0 never reads self
    "addbmm",     // addbmm
    "addmv",      // addmv: as addmm
    "upsample",   // upsample_*: a scale factor sets the output's size
    "dist",       // dist, cdist, pdist, pairwise_distance, _cdist_*: p 2 uses a matrix product
    "hist",       // histc: min = max takes the range from the data (one more pass)
};

// Operators named exactly (a part would catch others whose floats do not matter: layer_norm's
// eps, masked_fill's value). Each group's reason precedes it.
constexpr std::string_view kWorkChangingNames[] = {
    // addr's beta 0 never reads self.
    "addr", "addr_",
    // A norm's order p picks the reduction (0: count, 1: abs sum, 2: root of squares, inf: max).
    "norm", "norm_except_dim", "linalg_norm", "linalg_vector_norm", "linalg_matrix_norm", "_foreach_norm", "renorm",
    "renorm_", "embedding_renorm_",
    // smooth_l1_loss's beta 0 runs l1_loss; cross_entropy_loss's label_smoothing above 0 adds a pass.
    "smooth_l1_loss", "smooth_l1_loss_backward", "cross_entropy_loss",
    // arange's bounds and step set the output's size.
    "arange", "range",
    // A fill of 0 may be a memset.
    "fill", "fill_", "full", "full_like", "new_full",
    // SGD's momentum 0 skips the momentum buffers.
    "_fused_sgd", "_fused_sgd_",
    // torchvision's nms: the threshold sets how many boxes stay.
    "nms"};

bool same_value_but_floats(const ArgValue& a, const ArgValue& b) {
  if (std::holds_alternative<double>(a.v) && std::holds_alternative<double>(b.v)) return true;
  const auto* la = std::get_if<ArgList>(&a.v);
  const auto* lb = std::get_if<ArgList>(&b.v);
  if (la && lb) {
    if (la->size() != lb->size()) return false;
    // Lists nest at most kMaxListDepth deep (parse_value refuses deeper): the recursion is bounded.
    for (std::size_t i = 0; i < la->size(); ++i)
      if (!same_value_but_floats((*la)[i], (*lb)[i])) return false;
    return true;
  }
  return a == b;
}

bool holds_float(const ArgValue& v) {
  if (std::holds_alternative<double>(v.v)) return true;
  const auto* list = std::get_if<ArgList>(&v.v);
  return list && std::any_of(list->begin(), list->end(), holds_float);
}

}  // namespace

bool float_scalars_may_change_work(std::string_view op) {
  const std::string_view name = bare_name(op);
  if (std::find(std::begin(kWorkChangingNames), std::end(kWorkChangingNames), name) != std::end(kWorkChangingNames))
    return true;
  return std::any_of(std::begin(kWorkChangingParts), std::end(kWorkChangingParts),
                     [&](std::string_view part) { return name.find(part) != std::string_view::npos; });
}

bool same_but_float_scalars(const std::vector<NamedArg>& a, const std::vector<NamedArg>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].name != b[i].name || !same_value_but_floats(a[i].value, b[i].value)) return false;
  return true;
}

bool has_float_scalars(const std::vector<NamedArg>& args) {
  return std::any_of(args.begin(), args.end(), [](const NamedArg& a) { return holds_float(a.value); });
}

}  // namespace opcost
