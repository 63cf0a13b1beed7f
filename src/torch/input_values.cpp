#include "torch/input_values.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string_view>
#include <vector>

namespace opcost {

namespace {

// In-place and out-of-place variants index alike (aten::scatter_ as aten::scatter).
std::string_view base_name(std::string_view op) {
  if (op.size() > 1 && op.back() == '_' && op[op.size() - 2] != '_') op.remove_suffix(1);
  return op;
}

bool one_of(std::string_view op, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), op) != names.end();
}

// The call's other arguments, as far as the values of one tensor depend on them.
struct Given {
  const std::map<std::string, const ArgValue*>& args;

  const ArgValue* find(const char* name) const {
    auto it = args.find(name);
    return it == args.end() ? nullptr : it->second;
  }
  const TensorSpec* tensor(const char* name) const {
    const ArgValue* v = find(name);
    return v ? std::get_if<TensorSpec>(&v->v) : nullptr;
  }
  const std::vector<int64_t>* shape(const char* name) const {
    const TensorSpec* t = tensor(name);
    return t ? &t->shape : nullptr;
  }
  std::optional<int64_t> integer(const char* name) const {
    const ArgValue* v = find(name);
    if (v)
      if (auto* i = std::get_if<int64_t>(&v->v)) return *i;
    return std::nullopt;
  }
  std::optional<double> number(const char* name) const {
    const ArgValue* v = find(name);
    if (!v) return std::nullopt;
    if (auto* d = std::get_if<double>(&v->v)) return *d;
    if (auto* i = std::get_if<int64_t>(&v->v)) return double(*i);
    return std::nullopt;
  }
  std::vector<int64_t> ints(const char* name) const {
    std::vector<int64_t> out;
    const ArgValue* v = find(name);
    if (!v) return out;
    if (auto* l = std::get_if<ArgList>(&v->v))
      for (const auto& e : *l)
        if (auto* i = std::get_if<int64_t>(&e.v)) out.push_back(*i);
    return out;
  }
};

double dim_size(const std::vector<int64_t>* s, int64_t d) {
  if (!s || s->empty()) return 0;
  if (d < 0) d += int64_t(s->size());
  return d >= 0 && d < int64_t(s->size()) ? double((*s)[d]) : 0;
}

double product(const std::vector<int64_t>& s, std::size_t from = 0) {
  double p = 1;
  for (std::size_t i = from; i < s.size(); ++i) p *= double(s[i]);
  return p;
}

double elements(const std::vector<int64_t>* s) { return s ? product(*s) : 0; }

// Exactly `trues` ones among `storage` zeros, at seeded random places.
at::Tensor exact_mask(int64_t storage, int64_t trues, at::Generator& gen, const at::TensorOptions& draw) {
  trues = std::clamp<int64_t>(trues, 0, storage);
  at::Tensor flat = at::zeros({storage}, draw.dtype(at::kLong));
  if (trues == 0) return flat;
  if (trues == storage) return flat.fill_(1);
  const at::Tensor places = at::randperm(storage, gen, draw.dtype(at::kLong)).narrow(0, 0, trues);
  return flat.index_fill_(0, places, 1);
}

// Per-operator value rules. Each table maps (operator, argument) to the rule for that
// argument's values; in-place variants share their out-of-place operator's rules (base_name).
// An argument named "*" stands for every other argument of its operators.
template <class Rule>
class RuleTable {
 public:
  struct Entry {
    std::vector<std::string_view> ops;
    std::string_view arg;
    Rule rule;
  };
  explicit RuleTable(std::vector<Entry> entries) : entries_(std::move(entries)) {
    for (const auto& e : entries_)
      for (std::string_view op : e.ops) by_key_.emplace(std::pair{op, e.arg}, &e.rule);
  }
  const Rule* find(std::string_view op, std::string_view arg) const {
    if (auto it = by_key_.find({op, arg}); it != by_key_.end()) return it->second;
    if (auto it = by_key_.find({op, "*"}); it != by_key_.end()) return it->second;
    return nullptr;
  }

 private:
  std::vector<Entry> entries_;
  std::map<std::pair<std::string_view, std::string_view>, const Rule*> by_key_;
};

// How many true elements a bool mask must hold for the call to be valid, given the count a
// fair draw would have.
using TruesRule = std::optional<int64_t> (*)(const ArgPlace&, const TensorSpec&, int64_t default_trues);

const RuleTable<TruesRule>& trues_rules() {
  static const RuleTable<TruesRule> table({
      // index_put_'s values (x[mask] = v) fill exactly the masked elements, so v's size along
      // the mask's dimension is their count.
      {{"aten::index_put", "aten::_index_put_impl", "aten::_unsafe_index_put"},
       "indices",
       [](const ArgPlace& p, const TensorSpec& t, int64_t) -> std::optional<int64_t> {
         const Given g{p.given};
         const auto* self = g.shape("self");
         const auto* values = g.shape("values");
         if (!self || !values) return std::nullopt;
         // The indexing result is [k] + self's dimensions after the mask's; values broadcast to it.
         const int64_t trailing = int64_t(self->size()) - int64_t(p.list_pos) - int64_t(t.shape.size());
         const int64_t at_k = int64_t(values->size()) - 1 - trailing;
         if (trailing < 0 || at_k < 0 || (*values)[at_k] == 1) return std::nullopt;  // broadcast over k: any count
         return (*values)[at_k];
       }},
      // masked_scatter reads at most its source's elements.
      {{"aten::masked_scatter"},
       "mask",
       [](const ArgPlace& p, const TensorSpec&, int64_t default_trues) -> std::optional<int64_t> {
         if (const auto* source = Given{p.given}.shape("source"))
           return std::min<int64_t>(default_trues, int64_t(product(*source)));
         return std::nullopt;
       }},
  });
  return table;
}

std::optional<int64_t> required_trues(const ArgPlace& p, const TensorSpec& t, int64_t default_trues) {
  const TruesRule* rule = trues_rules().find(base_name(p.op), p.name);
  return rule ? (*rule)(p, t, default_trues) : std::nullopt;
}

// Floating values a call requires (probabilities, rates), where the spec gives no :range.
const RuleTable<std::pair<double, double>>& float_range_rules() {
  static const RuleTable<std::pair<double, double>> table({
      {{"aten::multinomial"}, "self", {0.0, 1.0}},  // weights: >= 0, rows of positive sum
      {{"aten::bernoulli"}, "self", {0.0, 1.0}},
      {{"aten::bernoulli"}, "p", {0.0, 1.0}},
      {{"aten::binomial"}, "prob", {0.0, 1.0}},
      {{"aten::binomial"}, "*", {0.0, 16.0}},  // the counts
      {{"aten::poisson"}, "self", {0.0, 8.0}},
      {{"aten::_standard_gamma", "aten::_sample_dirichlet"}, "self", {0.5, 4.0}},
      {{"aten::binary_cross_entropy", "aten::binary_cross_entropy_backward"}, "self", {0.0, 1.0}},
      {{"aten::binary_cross_entropy", "aten::binary_cross_entropy_backward"}, "target", {0.0, 1.0}},
  });
  return table;
}

std::optional<std::pair<double, double>> required_float_range(const ArgPlace& p) {
  const auto* range = float_range_rules().find(base_name(p.op), p.name);
  return range ? std::optional(*range) : std::nullopt;
}

// The image a region's coordinates lie in: batch items, and height and width at the
// feature map's scale divided by spatial_scale.
struct RoiFrame {
  int64_t batch = 1;
  double height = 1, width = 1;
};

RoiFrame roi_frame(const ArgPlace& p) {
  const Given g{p.given};
  RoiFrame f;
  if (const auto* input = g.shape("input"); input && input->size() == 4) {
    f.batch = (*input)[0];
    f.height = double((*input)[2]);
    f.width = double((*input)[3]);
  } else {  // a backward: the input's sizes are arguments
    f.batch = g.integer("batch_size").value_or(1);
    f.height = double(g.integer("height").value_or(1));
    f.width = double(g.integer("width").value_or(1));
  }
  const double scale = g.number("spatial_scale").value_or(1.0);
  if (scale > 0) {
    f.height /= scale;
    f.width /= scale;
  }
  f.batch = std::max<int64_t>(f.batch, 1);
  return f;
}

// Regions (batch index, x1, y1, x2, y2) inside the image, each from 5% to 30% of it a side
// (a detector's proposals after the first stage).
at::Tensor roi_boxes(int64_t n, const RoiFrame& f, at::Generator& gen, const at::TensorOptions& draw) {
  const auto opt = draw.dtype(at::kFloat);
  const at::Tensor batch = at::randint(0, f.batch, {n, 1}, gen, opt);
  const at::Tensor frac = at::rand({n, 4}, gen, opt);
  const at::Tensor x1 = frac.select(1, 0).mul(0.7 * f.width);
  const at::Tensor y1 = frac.select(1, 1).mul(0.7 * f.height);
  const at::Tensor x2 = x1 + frac.select(1, 2).mul(0.25 * f.width).add(0.05 * f.width);
  const at::Tensor y2 = y1 + frac.select(1, 3).mul(0.25 * f.height).add(0.05 * f.height);
  return at::cat({batch, at::stack({x1, y1, x2, y2}, 1)}, 1);
}

// Offsets of `bags` bags into `indices` entries: 0 first, ascending, the last (with
// include_last_offset) equal to the number of entries.
at::Tensor bag_offsets(int64_t bags, int64_t indices, bool include_last, at::Generator& gen,
                       const at::TensorOptions& draw) {
  const auto opt = draw.dtype(at::kLong);
  const int64_t inner = std::max<int64_t>(bags - 1 - (include_last ? 1 : 0), 0);
  std::vector<at::Tensor> parts = {at::zeros({std::min<int64_t>(bags, 1)}, opt)};
  parts.push_back(std::get<0>(at::sort(at::randint(0, indices + 1, {inner}, gen, opt))));
  if (include_last && bags > 1) parts.push_back(at::full({1}, indices, opt));
  return at::cat(parts);
}

// `n` non-negative counts that add up to `total` (repeat_interleave's repeats for a given
// output_size), spread at random.
at::Tensor counts_adding_to(int64_t n, int64_t total, at::Generator& gen, const at::TensorOptions& draw) {
  const at::Tensor weights = at::rand({n}, gen, draw.dtype(at::kDouble)).add_(1e-3);
  at::Tensor counts = weights.div(weights.sum()).mul_(double(total)).floor_().to(at::kLong);
  const int64_t short_by = total - counts.sum().item<int64_t>();  // 0 <= short_by < n
  if (short_by > 0) counts.narrow(0, 0, short_by).add_(1);
  return counts;
}

// A tensor whose values must have a structure, not only a range: made whatever the spec's
// modifiers say. nullopt where the spec's shape does not fit the structure.
using StructuredRule = std::optional<at::Tensor> (*)(const ArgPlace&, const TensorSpec&, int64_t storage,
                                                     at::Generator&, const at::TensorOptions&);

// Whether the storage is the shape's elements, no more (no strides that skip any).
bool dense(const TensorSpec& t, int64_t storage) { return storage == int64_t(product(t.shape)); }

const RuleTable<StructuredRule>& structured_rules() {
  static const RuleTable<StructuredRule> table({
      {{"torchvision::nms"},
       "dets",
       [](const ArgPlace& p, const TensorSpec& t, int64_t storage, at::Generator& gen,
          const at::TensorOptions& draw) -> std::optional<at::Tensor> {
         if (!dense(t, storage) || t.shape.size() != 2 || t.shape[1] != 4) return std::nullopt;
         const int64_t n = t.shape[0];
         return nms_boxes(n, std::clamp<int64_t>(t.distinct.value_or(default_nms_kept(n)), n > 0 ? 1 : 0, n),
                          Given{p.given}.number("iou_threshold").value_or(0.5), gen, draw);
       }},
      {{"torchvision::roi_align", "torchvision::_roi_align_backward", "torchvision::roi_pool",
        "torchvision::_roi_pool_backward", "torchvision::ps_roi_align", "torchvision::_ps_roi_align_backward",
        "torchvision::ps_roi_pool", "torchvision::_ps_roi_pool_backward"},
       "rois",
       [](const ArgPlace& p, const TensorSpec& t, int64_t storage, at::Generator& gen,
          const at::TensorOptions& draw) -> std::optional<at::Tensor> {
         if (!dense(t, storage) || t.shape.size() != 2 || t.shape[1] != 5) return std::nullopt;
         return roi_boxes(t.shape[0], roi_frame(p), gen, draw);
       }},
      {{"aten::embedding_bag", "aten::_embedding_bag", "aten::_embedding_bag_forward_only"},
       "offsets",
       [](const ArgPlace& p, const TensorSpec& t, int64_t storage, at::Generator& gen,
          const at::TensorOptions& draw) -> std::optional<at::Tensor> {
         if (!dense(t, storage) || t.shape.size() != 1) return std::nullopt;
         const Given g{p.given};
         const ArgValue* v = g.find("include_last_offset");
         const bool include_last = v && std::holds_alternative<bool>(v->v) && std::get<bool>(v->v);
         return bag_offsets(storage, int64_t(elements(g.shape("indices"))), include_last, gen, draw);
       }},
      {{"aten::repeat_interleave"},
       "repeats",
       [](const ArgPlace& p, const TensorSpec& t, int64_t storage, at::Generator& gen,
          const at::TensorOptions& draw) -> std::optional<at::Tensor> {
         if (!dense(t, storage) || storage <= 1) return std::nullopt;
         if (auto total = Given{p.given}.integer("output_size"); total && *total >= 0)
           return counts_adding_to(storage, *total, gen, draw);
         return std::nullopt;
       }},
  });
  return table;
}

std::optional<at::Tensor> structured_values(const ArgPlace& p, const TensorSpec& t, int64_t storage, at::Generator& gen,
                                            const at::TensorOptions& draw) {
  const StructuredRule* rule = structured_rules().find(base_name(p.op), p.name);
  return rule ? (*rule)(p, t, storage, gen, draw) : std::nullopt;
}

// The high end of an integer argument's values [0, high): an index below the size of the
// dimension it indexes, a class below the number of classes. 0 where the call does not say.
using IntHighRule = double (*)(const ArgPlace&, const Given&);

int64_t dim_arg(const Given& g) { return g.integer("dim").value_or(0); }

const RuleTable<IntHighRule>& int_high_rules() {
  static const RuleTable<IntHighRule> table({
      {{"aten::embedding", "aten::embedding_bag", "aten::_embedding_bag", "aten::_embedding_bag_forward_only"},
       "indices",
       [](const ArgPlace&, const Given& g) { return dim_size(g.shape("weight"), 0); }},
      {{"aten::embedding_renorm"},
       "indices",
       [](const ArgPlace&, const Given& g) { return dim_size(g.shape("self"), 0); }},
      {{"aten::index_select", "aten::gather", "aten::scatter", "aten::scatter_add", "aten::scatter_reduce",
        "aten::index_add", "aten::index_copy", "aten::index_fill", "aten::index_reduce", "aten::gather_backward"},
       "index",
       [](const ArgPlace&, const Given& g) { return dim_size(g.shape("self"), dim_arg(g)); }},
      {{"aten::index_select_backward"},
       "index",
       [](const ArgPlace&, const Given& g) {
         const auto sizes = g.ints("self_sizes");
         return dim_size(&sizes, dim_arg(g));
       }},
      {{"aten::take_along_dim"},
       "indices",
       [](const ArgPlace&, const Given& g) {
         return g.integer("dim") ? dim_size(g.shape("self"), dim_arg(g)) : elements(g.shape("self"));
       }},
      {{"aten::take", "aten::put"}, "index", [](const ArgPlace&, const Given& g) { return elements(g.shape("self")); }},
      {{"aten::index", "aten::_unsafe_index", "aten::index_put", "aten::_index_put_impl", "aten::_unsafe_index_put"},
       "indices",
       [](const ArgPlace& p, const Given& g) { return dim_size(g.shape("self"), int64_t(p.list_pos)); }},
      // An index past num_weights writes outside the gradient.
      {{"aten::embedding_backward", "aten::embedding_dense_backward"},
       "indices",
       [](const ArgPlace&, const Given& g) { return double(g.integer("num_weights").value_or(0)); }},
      {{"aten::nll_loss", "aten::nll_loss_nd", "aten::nll_loss2d", "aten::cross_entropy_loss",
        "aten::nll_loss_backward", "aten::nll_loss2d_backward", "aten::multi_margin_loss"},
       "target",
       [](const ArgPlace&, const Given& g) {
         const auto* s = g.shape("self");
         return dim_size(s, s && s->size() > 1 ? 1 : 0);
       }},
      {{"aten::one_hot"},
       "self",
       [](const ArgPlace&, const Given& g) {
         return double(std::max<int64_t>(g.integer("num_classes").value_or(16), 1));
       }},
      // A flat index into one plane (volume) of the pooled input: a larger one writes outside it.
      {{"aten::max_pool2d_with_indices_backward"},
       "indices",
       [](const ArgPlace&, const Given& g) {
         const auto* s = g.shape("self");
         return s && s->size() >= 2 ? product(*s, s->size() - 2) : 0.0;
       }},
      {{"aten::max_pool3d_with_indices_backward"},
       "indices",
       [](const ArgPlace&, const Given& g) {
         const auto* s = g.shape("self");
         return s && s->size() >= 3 ? product(*s, s->size() - 3) : 0.0;
       }},
      {{"aten::max_unpool2d", "aten::max_unpool3d"},
       "indices",
       [](const ArgPlace&, const Given& g) {
         const auto sizes = g.ints("output_size");
         return sizes.empty() ? 0.0 : product(sizes);
       }},
      {{"torchvision::_roi_pool_backward"},
       "argmax",
       [](const ArgPlace&, const Given& g) {
         return double(g.integer("height").value_or(0) * g.integer("width").value_or(0));
       }},
      {{"torchvision::_ps_roi_align_backward", "torchvision::_ps_roi_pool_backward"},
       "channel_mapping",
       [](const ArgPlace&, const Given& g) { return double(g.integer("channels").value_or(0)); }},
  });
  return table;
}

}  // namespace

std::pair<double, double> int_range(const ArgPlace& p, const TensorSpec& t) {
  if (t.range) return *t.range;
  const IntHighRule* rule = int_high_rules().find(base_name(p.op), p.name);
  double hi = rule ? (*rule)(p, Given{p.given}) : 0;
  if (hi <= 0) hi = 16;
  return {0, hi};
}

at::Tensor draw_values(const ArgPlace& p, const TensorSpec& t, at::ScalarType dtype, int64_t storage,
                       at::Generator& gen, const at::TensorOptions& draw) {
  // Validity first: boxes, offsets and counts that add up to a size are made so whatever the
  // spec's modifiers say (they are not what the model's values were).
  if (auto s = structured_values(p, t, storage, gen, draw)) return *s;
  if (dtype == at::kBool) {
    // Exact counts: nonzero's, masked_select's and index's outputs are as long as the mask has
    // true elements, and index_put_'s values must match them one for one.
    const int64_t fair = t.zeros_fraction ? std::llround((1 - *t.zeros_fraction) * double(storage)) : storage / 2;
    if (auto k = required_trues(p, t, fair)) return exact_mask(storage, *k, gen, draw);
    if (t.zeros_fraction) return exact_mask(storage, fair, gen, draw);
    return at::randint(0, 2, {storage}, gen, draw.dtype(at::kLong));
  }
  at::Tensor flat;
  if (at::isFloatingType(dtype) || at::isComplexType(dtype)) {
    const auto gen_type = at::isComplexType(dtype) ? dtype : at::kFloat;
    const auto range = t.range ? t.range : required_float_range(p);
    if (range)
      flat = at::rand({storage}, gen, draw.dtype(gen_type)) * (range->second - range->first) + range->first;
    else
      flat = at::randn({storage}, gen, draw.dtype(gen_type));
  } else {
    const auto [lo, hi] = int_range(p, t);
    flat = at::randint(int64_t(lo), int64_t(hi), {storage}, gen, draw.dtype(at::kLong));
  }
  if (t.zeros_fraction && *t.zeros_fraction > 0)
    flat.masked_fill_(at::rand({storage}, gen, draw.dtype(at::kFloat)) < *t.zeros_fraction, 0);
  return flat;
}

at::Tensor nms_boxes(int64_t n, int64_t kept, double iou_threshold, at::Generator& gen, const at::TensorOptions& draw) {
  const auto opt = draw.dtype(at::kFloat);
  kept = std::clamp<int64_t>(kept, n > 0 ? 1 : 0, n);
  if (n == 0) return at::zeros({0, 4}, opt);
  // Clusters on a grid of 64-unit cells, each cluster's boxes inside its cell (48 units a side,
  // 8 from the cell's edges): boxes of different clusters never overlap.
  const int64_t side = int64_t(std::ceil(std::sqrt(double(kept))));
  // Box i of the first `kept` founds cluster i; the others join a random cluster.
  const at::Tensor cluster =
      at::cat({at::arange(kept, opt.dtype(at::kLong)), at::randint(0, kept, {n - kept}, gen, opt.dtype(at::kLong))});
  const at::Tensor cx = at::remainder(cluster, side).to(at::kFloat).mul_(64).add_(8);
  const at::Tensor cy = at::div(cluster, side, "floor").to(at::kFloat).mul_(64).add_(8);
  // Jitter of up to 2 units keeps two boxes of a cluster above an IoU of (46/50)^2 = 0.846; a
  // threshold at or above it gets identical boxes (IoU 1), which suppress all but one unless
  // the threshold is 1 (then nothing is suppressed, and nms keeps every box whatever they are).
  const double jitter = iou_threshold < 0.84 ? 2.0 : 0.0;
  const at::Tensor shift = at::rand({n, 4}, gen, opt).mul_(jitter);
  const at::Tensor x1 = cx + shift.select(1, 0);
  const at::Tensor y1 = cy + shift.select(1, 1);
  return at::stack({x1, y1, cx + 48 - shift.select(1, 2), cy + 48 - shift.select(1, 3)}, 1);
}

std::optional<int64_t> kept_by_nms(const c10::OperatorHandle& nms, const std::vector<c10::IValue>& inputs) {
  if (inputs.size() != 3 || !inputs[0].isTensor() || !inputs[1].isTensor() || !inputs[2].isDouble())
    return std::nullopt;
  std::vector<c10::IValue> stack = inputs;
  nms.callBoxed(stack);
  if (stack.empty() || !stack[0].isTensor()) return std::nullopt;
  return stack[0].toTensor().size(0);
}

int64_t default_nms_kept(int64_t boxes) { return std::max<int64_t>((boxes * 7 + 5) / 10, boxes > 0 ? 1 : 0); }

bool summarises_values(const std::string& op) {
  static const std::set<std::string_view> ops = {"aten::nonzero",
                                                 "aten::nonzero_numpy",
                                                 "aten::argwhere",
                                                 "aten::masked_select",
                                                 "aten::masked_scatter",
                                                 "aten::masked_fill",
                                                 "aten::index",
                                                 "aten::_unsafe_index",
                                                 "aten::index_put",
                                                 "aten::_index_put_impl",
                                                 "aten::_unsafe_index_put",
                                                 "aten::where",
                                                 "aten::_unique",
                                                 "aten::_unique2",
                                                 "aten::unique_dim",
                                                 "aten::unique_consecutive",
                                                 "aten::unique_dim_consecutive",
                                                 "aten::bincount",
                                                 "aten::one_hot",
                                                 "aten::repeat_interleave",
                                                 "torchvision::nms"};
  return ops.count(base_name(op)) > 0;
}

ValueSummary value_summary(const std::string& op, const std::string& arg, const at::Tensor& t, int64_t num_classes) {
  ValueSummary s;
  if (!t.defined() || t.numel() == 0 || !summarises_values(op)) return s;
  const std::string_view base = base_name(op);
  const bool size_from_zeros = one_of(base, {"aten::nonzero", "aten::nonzero_numpy", "aten::argwhere"}) ||
                               (base == "aten::where" && arg == "condition");
  if (t.scalar_type() == at::kBool || (size_from_zeros && arg == "self")) {
    const double zeros = 1.0 - double(t.count_nonzero().item<int64_t>()) / double(t.numel());
    s.zeros_fraction = std::round(zeros * 100) / 100;
    return s;
  }
  const bool spread_sets_size =
      one_of(base, {"aten::_unique", "aten::_unique2", "aten::unique_dim", "aten::unique_consecutive",
                    "aten::unique_dim_consecutive", "aten::bincount"}) ||
      (base == "aten::one_hot" && num_classes < 0) || (base == "aten::repeat_interleave" && arg == "repeats");
  if (spread_sets_size && at::isIntegralType(t.scalar_type(), false)) {
    const auto [lo, hi] = at::aminmax(t);
    const int64_t high = hi.item<int64_t>();
    if (high < std::numeric_limits<int64_t>::max()) s.range = std::pair{lo.item<int64_t>(), high + 1};
  }
  return s;
}

}  // namespace opcost
