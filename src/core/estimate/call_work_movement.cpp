// call_work for operators that move data and compute nothing: embedding lookups, copies,
// concatenation, gathers, and views. A view (reshape of a row-major tensor, transpose, ...)
// only makes new metadata: zero FLOPs and zero bytes, a real figure of a real and cheap call
// (nullopt still says the arguments do not fit). A gather reads only the rows or elements it
// selects: the least bytes, as if each were read once.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/estimate/call_work_args.h"
#include "core/estimate/call_work_families.h"

namespace opcost::call_work_families {

using namespace call_work_args;

namespace {

bool is_index(const TensorSpec* t) { return t != nullptr && (t->dtype == "i64" || t->dtype == "i32"); }

CallWork moved(double bytes) {
  CallWork work{OpFamily::kDataMovement};
  work.bytes = bytes;
  return work;
}

// embedding: weight [V, D] and indices [...] of integers; each index reads a row of D and
// writes it to the output. Nothing is computed. The least read is the rows gathered, or the
// whole table where there are more indices than rows (a row asked twice is read once at least:
// a 1000-row table gathered 32768 times stays in the cache).
std::optional<CallWork> embedding(const OpCall& call) {
  const TensorSpec *w = tensor(call, "weight"), *idx = tensor(call, "indices");
  if (w == nullptr || w->shape.size() != 2 || !is_index(idx)) return std::nullopt;
  const double rows = elements(idx->shape) * double(w->shape[1]) * dtype_bytes(w->dtype);
  CallWork work{OpFamily::kEmbedding};
  work.bytes = bytes_of(idx) + std::min(rows, bytes_of(w)) + rows;
  return work;
}

// embedding_backward(grad [..., D], indices [...], num_weights, ...) and embedding_dense_backward
// (grad_output, ...): the weight's gradient
// [num_weights, D] zeroed and each row of grad added at its index: grad and the indices read.
std::optional<CallWork> embedding_backward(const OpCall& call) {
  // embedding_dense_backward names its gradient grad_output.
  const TensorSpec* grad = tensor(call, call.op == "aten::embedding_backward" ? "grad" : "grad_output");
  const TensorSpec* idx = tensor(call, "indices");
  const auto rows = int_arg(call, "num_weights", -1);
  const auto sparse = bool_arg(call, "sparse", false);  // a sparse gradient writes only its rows: no figure
  if (grad == nullptr || grad->shape.empty() || !is_index(idx) || !rows || *rows < 0 || !sparse || *sparse ||
      elements(idx->shape) * double(grad->shape.back()) != elements(grad->shape))
    return std::nullopt;
  CallWork work{OpFamily::kEmbedding};
  work.flops = elements(grad->shape);
  work.bytes = bytes_of(grad) + bytes_of(idx) + double(*rows) * double(grad->shape.back()) * dtype_bytes(grad->dtype);
  return work;
}

// copy_(self, src): src, broadcast to self's shape, read; self written. copy_.Tensor names its
// source `other`; copy_ of a number fills self.
std::optional<CallWork> copy(const OpCall& call) {
  const TensorSpec* self = tensor(call, "self");
  if (self == nullptr) return std::nullopt;
  const TensorSpec* src = tensor(call, "src") != nullptr ? tensor(call, "src") : tensor(call, "other");
  if (src == nullptr) {
    const NamedArg* number = named(call, "other");
    if (number == nullptr ||
        !(std::holds_alternative<int64_t>(number->value.v) || std::holds_alternative<double>(number->value.v)))
      return std::nullopt;
  } else if (broadcast(self->shape, src->shape) != self->shape) {
    return std::nullopt;
  }
  return moved(bytes_of(src) + bytes_of(self));
}

// clone reads and writes self; _to_copy writes it in `dtype` when given; contiguous copies
// only a tensor not laid out in `memory_format` already (else it returns self).
std::optional<CallWork> copied(const OpCall& call) {
  const TensorSpec* self = tensor(call, "self");
  if (self == nullptr) return std::nullopt;
  if (call.op == "aten::_to_copy") {
    const auto dtype = dtype_arg(call, "dtype", self->dtype);
    if (!dtype) return std::nullopt;
    return moved(bytes_of(self) + elements(self->shape) * dtype_bytes(*dtype));
  }
  if (call.op == "aten::contiguous") {
    const NamedArg* format = named(call, "memory_format");
    const auto* word = format == nullptr ? nullptr : std::get_if<ArgValue::Word>(&format->value.v);
    if (format != nullptr && word == nullptr) return std::nullopt;
    const std::string_view name = word == nullptr ? "contiguous_format" : std::string_view(word->text);
    const std::size_t rank = self->shape.size();
    if (!(name == "contiguous_format" || (name == "channels_last" && rank == 4) ||
          (name == "channels_last_3d" && rank == 5)))
      return std::nullopt;
    if (laid_out_as(*self, name)) return moved(0);
  }
  return moved(2 * bytes_of(self));
}

// cat(tensors, dim): the tensors' sizes agree but along dim, where the output's add up; a
// 1-d tensor of 0 elements is skipped, as PyTorch does. stack(tensors, dim): equal shapes, a
// new dimension of their number. Written in the dtype the inputs promote to.
std::optional<CallWork> joined(const OpCall& call) {
  const NamedArg* list_arg = named(call, "tensors");
  const auto* list = list_arg == nullptr ? nullptr : std::get_if<ArgList>(&list_arg->value.v);
  const auto dim = int_arg(call, "dim", 0);
  if (list == nullptr || list->empty() || !dim) return std::nullopt;
  std::vector<const TensorSpec*> inputs, joined;
  for (const ArgValue& item : *list) {
    const auto* t = std::get_if<TensorSpec>(&item.v);
    if (t == nullptr) return std::nullopt;
    inputs.push_back(t);
    const bool legacy_empty = t->shape == Shape{0};
    if (call.op == "aten::stack" || !legacy_empty) joined.push_back(t);
  }
  double out = 0;
  if (!joined.empty()) {
    const Shape& first = joined.front()->shape;
    const bool stack = call.op == "aten::stack";
    const auto d = wrap_dim(*dim, first.size() + (stack ? 1 : 0));
    if (!d || (!stack && first.empty())) return std::nullopt;
    for (const TensorSpec* t : joined) {
      if (t->shape.size() != first.size()) return std::nullopt;
      for (std::size_t k = 0; k < first.size(); ++k)
        if (t->shape[k] != first[k] && (stack || k != *d)) return std::nullopt;
      out += elements(t->shape);
    }
  }
  double read = 0;
  for (const TensorSpec* t : inputs) read += bytes_of(t);
  return moved(read + out * promoted_bytes(inputs));
}

// index_select(self, dim, index [n]): the n selected slices along dim read and written.
// gather(self, dim, index): the output has index's shape, one element read per output.
std::optional<CallWork> gathered(const OpCall& call) {
  const TensorSpec *self = tensor(call, "self"), *index = tensor(call, "index");
  const NamedArg* dim_arg = named(call, "dim");
  const auto* dim = dim_arg == nullptr ? nullptr : std::get_if<int64_t>(&dim_arg->value.v);
  if (self == nullptr || !is_index(index) || dim == nullptr) return std::nullopt;
  const auto d = wrap_dim(*dim, self->shape.size());
  if (!d) return std::nullopt;
  double outputs = elements(index->shape);
  if (call.op == "aten::index_select") {
    if (index->shape.size() > 1) return std::nullopt;
    for (std::size_t k = 0; k < self->shape.size(); ++k)
      if (k != *d) outputs *= double(self->shape[k]);
  } else {
    // gather: index has self's rank, no larger than self but along dim.
    if (index->shape.size() != self->shape.size()) return std::nullopt;
    for (std::size_t k = 0; k < self->shape.size(); ++k)
      if (k != *d && index->shape[k] > self->shape[k]) return std::nullopt;
  }
  // As embedding's: the least read is what is selected, or all of self where that is less.
  const double selected = outputs * dtype_bytes(self->dtype);
  return moved(bytes_of(index) + std::min(selected, bytes_of(self)) + selected);
}

// to(dtype=...): a copy in the new dtype, or self itself (no work) where the dtype is self's and
// `copy` is not asked. A `device` argument that moves the tensor off the GPU, or onto it from a
// tensor the inventory placed elsewhere, is a transfer over the bus, not counted here: a spec
// names a tensor's device only where it is not the replay's (TensorSpec::device).
std::optional<CallWork> converted(const OpCall& call) {
  const TensorSpec* self = tensor(call, "self");
  if (self == nullptr) return std::nullopt;
  if (const NamedArg* device = named(call, "device"); device != nullptr && !device->value.is_none()) {
    const auto* word = std::get_if<ArgValue::Word>(&device->value.v);
    if (word == nullptr || self->device || !word->text.starts_with("cuda")) return std::nullopt;
  }
  const TensorSpec* other = tensor(call, "other");  // to.other: other's dtype, on other's device
  if (other != nullptr && other->device != self->device) return std::nullopt;
  const auto dtype = other != nullptr ? std::optional(other->dtype) : dtype_arg(call, "dtype", self->dtype);
  const auto copy = bool_arg(call, "copy", false);
  if (!dtype || !copy) return std::nullopt;
  // memory_format: absent, None or preserve_format keep self's layout; contiguous_format,
  // channels_last (4-d) or channels_last_3d (5-d) copy a self not laid out so already.
  bool relaid = false;
  if (const NamedArg* format = named(call, "memory_format"); format != nullptr && !format->value.is_none()) {
    const auto* word = std::get_if<ArgValue::Word>(&format->value.v);
    if (word == nullptr) return std::nullopt;
    const std::string_view name = word->text;
    const std::size_t rank = self->shape.size();
    if (name != "preserve_format") {
      if (!(name == "contiguous_format" || (name == "channels_last" && rank == 4) ||
            (name == "channels_last_3d" && rank == 5)))
        return std::nullopt;
      relaid = !laid_out_as(*self, name);
    }
  }
  if (*dtype == self->dtype && !*copy && !relaid) return moved(0);
  return moved(bytes_of(self) + elements(self->shape) * dtype_bytes(*dtype));
}

// dropout(input, p, train): in eval, or at p = 0, the input itself (no work); in training a
// random mask (one byte an element) and the output written, one operation an element.
std::optional<CallWork> dropped(const OpCall& call) {
  const TensorSpec* in = tensor(call, call.op == "aten::dropout" ? "input" : "self");
  const auto train = bool_arg(call, "train", true);
  const NamedArg* p_arg = named(call, "p");
  const auto* p_int = p_arg == nullptr ? nullptr : std::get_if<int64_t>(&p_arg->value.v);
  const auto* p_real = p_arg == nullptr ? nullptr : std::get_if<double>(&p_arg->value.v);
  if (in == nullptr || !train || (p_int == nullptr && p_real == nullptr)) return std::nullopt;
  const double p = p_int != nullptr ? double(*p_int) : *p_real;
  if (!(p >= 0 && p <= 1)) return std::nullopt;
  if (!*train || p == 0) return moved(0);
  CallWork work = moved(2 * bytes_of(in) + elements(in->shape));
  work.flops = elements(in->shape);
  return work;
}

// pad(self, pad, mode, value): pad holds (before, after) pairs from the last dimension back;
// negative entries crop. The output written, the input read (all of it, at least once).
std::optional<CallWork> padded(const OpCall& call) {
  const TensorSpec* self = tensor(call, "self");
  const NamedArg* pad_arg = named(call, "pad");
  const auto pad = pad_arg == nullptr ? std::nullopt : ints(pad_arg->value);
  if (self == nullptr || !pad || pad->size() % 2 != 0 || pad->size() > 2 * self->shape.size()) return std::nullopt;
  if (const NamedArg* mode = named(call, "mode"); mode != nullptr && !mode->value.is_none()) {
    const auto* word = std::get_if<ArgValue::Word>(&mode->value.v);
    if (word == nullptr ||
        !(word->text == "constant" || word->text == "reflect" || word->text == "replicate" || word->text == "circular"))
      return std::nullopt;
  }
  Shape out = self->shape;
  for (std::size_t k = 0; k < pad->size() / 2; ++k) {
    const double size = double(out[out.size() - 1 - k]) + double((*pad)[2 * k]) + double((*pad)[2 * k + 1]);
    if (!(size >= 0 && size < 9e18)) return std::nullopt;
    out[out.size() - 1 - k] = int64_t(size);
  }
  return moved(bytes_of(self) + elements(out) * dtype_bytes(self->dtype));
}

// roll(self, shifts, dims): every element read and written once; shifts and dims pair up (no
// dims: one shift of the flattened tensor).
std::optional<CallWork> rolled(const OpCall& call) {
  const TensorSpec* self = tensor(call, "self");
  const NamedArg *shifts_arg = named(call, "shifts"), *dims_arg = named(call, "dims");
  const auto shifts = shifts_arg == nullptr ? std::nullopt : ints(shifts_arg->value);
  const auto dims = dims_arg == nullptr ? std::optional(Shape{}) : ints(dims_arg->value);
  if (self == nullptr || !shifts || !dims || shifts->empty() ||
      (dims->empty() ? shifts->size() != 1 : dims->size() != shifts->size()) ||
      !std::all_of(dims->begin(), dims->end(), [&](int64_t d) { return wrap_dim(d, self->shape.size()).has_value(); }))
    return std::nullopt;
  return moved(2 * bytes_of(self));
}

// index(self, indices): advanced indexing by integer tensors (None keeps a dimension whole).
// The index tensors broadcast together; the output has that shape times the dimensions not
// indexed. As a gather's, the least read is what is selected, or all of self where that is less.
// A bool mask selects as many elements as its values say: no figure.
std::optional<CallWork> indexed(const OpCall& call) {
  const TensorSpec* self = tensor(call, "self");
  const NamedArg* list_arg = named(call, "indices");
  const auto* list = list_arg == nullptr ? nullptr : std::get_if<ArgList>(&list_arg->value.v);
  if (self == nullptr || list == nullptr || list->empty() || list->size() > self->shape.size()) return std::nullopt;
  Shape indexed_shape;
  double kept = 1, index_bytes = 0;
  bool any = false;
  for (std::size_t k = 0; k < self->shape.size(); ++k) {
    const ArgValue* item = k < list->size() ? &(*list)[k] : nullptr;
    if (item == nullptr || item->is_none()) {
      kept *= double(self->shape[k]);
      continue;
    }
    const auto* t = std::get_if<TensorSpec>(&item->v);
    if (!is_index(t)) return std::nullopt;
    const auto b = any ? broadcast(indexed_shape, t->shape) : std::optional(t->shape);
    if (!b) return std::nullopt;
    indexed_shape = *b;
    any = true;
    index_bytes += bytes_of(t);
  }
  if (!any) return std::nullopt;
  const double selected = elements(indexed_shape) * kept * dtype_bytes(self->dtype);
  return moved(index_bytes + std::min(selected, bytes_of(self)) + selected);
}

// --- Views: zero work once the arguments fit. -------------------------------------------------

// A size for view, reshape, _unsafe_view: at most one -1 (inferred), the rest >= 0, as many
// elements as self.
std::optional<Shape> resolved_size(const TensorSpec& self, const ArgValue& v) {
  auto size = ints(v);
  if (!size) return std::nullopt;
  const auto inferred = std::count(size->begin(), size->end(), int64_t(-1));
  double known = 1;
  for (int64_t s : *size)
    if (s != -1) known *= double(s);
  if (inferred > 1 || std::any_of(size->begin(), size->end(), [](int64_t s) { return s < -1; })) return std::nullopt;
  const double total = elements(self.shape);
  if (inferred == 1) {
    // The inferred size must be whole and an int64 (a hostile shape's would not be).
    if (known == 0 || total / known != std::floor(total / known) || total / known >= 9.2e18) return std::nullopt;
    *std::find(size->begin(), size->end(), int64_t(-1)) = int64_t(total / known);
  } else if (known != total) {
    return std::nullopt;
  }
  return size;
}

bool dims_fit(const OpCall& call, std::string_view name, std::size_t rank) {
  const NamedArg* a = named(call, name);
  const auto dims = a == nullptr ? std::nullopt : ints(a->value);
  if (!dims) return false;
  return std::all_of(dims->begin(), dims->end(), [&](int64_t d) { return wrap_dim(d, rank).has_value(); });
}

// view, reshape, _unsafe_view: new sizes of the same elements; reshape copies (read and
// write) a tensor whose strides no view can express, view refuses it.
std::optional<CallWork> reshaped(const OpCall& call) {
  const TensorSpec* self = tensor(call, "self");
  if (self == nullptr) return std::nullopt;
  const NamedArg* size_arg = named(call, call.op == "aten::reshape" ? "shape" : "size");
  if (size_arg == nullptr && call.op == "aten::view" && named(call, "dtype") != nullptr) {
    return dtype_arg(call, "dtype", self->dtype) ? std::optional(moved(0)) : std::nullopt;  // view.dtype
  }
  const auto size = size_arg == nullptr ? std::nullopt : resolved_size(*self, size_arg->value);
  if (!size) return std::nullopt;
  if (call.op == "aten::_unsafe_view" || viewable_as(*self, *size)) return moved(0);
  if (call.op == "aten::view") return std::nullopt;
  return moved(2 * bytes_of(self));
}

// flatten(self, start_dim, end_dim): the dimensions from start to end made one, as reshape
// does it: a view where the strides allow one, else a copy.
std::optional<CallWork> flattened(const OpCall& call) {
  const TensorSpec* self = tensor(call, "self");
  if (self == nullptr) return std::nullopt;
  const std::size_t rank = self->shape.size();
  const auto start = int_arg(call, "start_dim", 0), end = int_arg(call, "end_dim", -1);
  const auto first = start ? wrap_dim(*start, rank) : std::nullopt, last = end ? wrap_dim(*end, rank) : std::nullopt;
  if (!first || !last || *first > *last) return std::nullopt;
  if (rank == 0) return moved(0);
  Shape out(self->shape.begin(), self->shape.begin() + std::ptrdiff_t(*first));
  double merged = 1;
  for (std::size_t k = *first; k <= *last; ++k) merged *= double(self->shape[k]);
  if (!(merged < 9e18)) return std::nullopt;
  out.push_back(int64_t(merged));
  out.insert(out.end(), self->shape.begin() + std::ptrdiff_t(*last) + 1, self->shape.end());
  return viewable_as(*self, out) ? moved(0) : moved(2 * bytes_of(self));
}

// split(self, split_size, dim), split_with_sizes(self, split_sizes, dim), chunk(self, chunks,
// dim): views of self along dim.
std::optional<CallWork> split(const OpCall& call) {
  const TensorSpec* self = tensor(call, "self");
  if (self == nullptr || self->shape.empty()) return std::nullopt;
  const auto dim = int_arg(call, "dim", 0);
  const auto d = dim ? wrap_dim(*dim, self->shape.size()) : std::nullopt;
  if (!d) return std::nullopt;
  const int64_t size = self->shape[*d];
  const NamedArg* size_list = named(call, "split_size");  // split.sizes: a list, as split_with_sizes
  const bool listed = size_list != nullptr && std::holds_alternative<ArgList>(size_list->value.v);
  if (call.op == "aten::split_with_sizes" || listed) {
    const NamedArg* sizes_arg = listed ? size_list : named(call, "split_sizes");
    const auto sizes = sizes_arg == nullptr ? std::nullopt : ints(sizes_arg->value);
    double total = 0;
    if (sizes)
      for (int64_t s : *sizes) total += s < 0 ? -1e30 : double(s);
    return sizes && total == double(size) ? std::optional(moved(0)) : std::nullopt;
  }
  const auto n = int_arg(call, call.op == "aten::chunk" ? "chunks" : "split_size", -1);
  const bool fits = n && (call.op == "aten::chunk" ? *n >= 1 : (*n >= 1 || (*n == 0 && size == 0)));
  return fits ? std::optional(moved(0)) : std::nullopt;
}

// Every other view: its dimension arguments in range (a permutation a permutation, expand's
// sizes matching), then zero.
std::optional<CallWork> viewed(const OpCall& call) {
  const TensorSpec* self = tensor(call, "self");
  if (self == nullptr) return std::nullopt;
  const std::string_view op = call.op;
  const std::size_t rank = self->shape.size();
  bool fits = true;
  if (op == "aten::transpose") {
    fits = dims_fit(call, "dim0", rank) && dims_fit(call, "dim1", rank);
  } else if (op == "aten::t") {
    fits = rank <= 2;
  } else if (op == "aten::permute") {
    const NamedArg* a = named(call, "dims");
    const auto dims = a == nullptr ? std::nullopt : ints(a->value);
    std::vector<bool> seen(rank, false);
    fits = dims && dims->size() == rank;
    for (std::size_t k = 0; fits && k < rank; ++k) {
      const auto d = wrap_dim((*dims)[k], rank);
      fits = d && !seen[*d];
      if (fits) seen[*d] = true;
    }
  } else if (op == "aten::expand") {
    const NamedArg* a = named(call, "size");
    const auto size = a == nullptr ? std::nullopt : ints(a->value);
    fits = size && size->size() >= rank;
    for (std::size_t k = 0; fits && k < size->size(); ++k) {
      const std::size_t lead = size->size() - rank;  // new leading dimensions: no -1
      const int64_t s = (*size)[k];
      fits = k < lead ? s >= 0 : (s == -1 || s == self->shape[k - lead] || (self->shape[k - lead] == 1 && s >= 0));
    }
  } else if (op == "aten::unsqueeze") {
    const auto d = int_arg(call, "dim", 0);
    fits = named(call, "dim") != nullptr && d && wrap_dim(*d, rank + 1);
  } else if (op == "aten::squeeze") {
    fits = named(call, "dim") == nullptr || dims_fit(call, "dim", rank);
  } else if (op == "aten::slice") {
    const auto d = int_arg(call, "dim", 0), step = int_arg(call, "step", 1);
    const auto start = int_arg(call, "start", 0), end = int_arg(call, "end", 0);
    fits = rank >= 1 && d && wrap_dim(*d, rank) && step && *step >= 1 && start && end;
  } else if (op == "aten::select") {
    // dim and index have no default; index counts from the end when negative.
    const auto d = int_arg(call, "dim", 0), index = int_arg(call, "index", 0);
    fits = rank >= 1 && named(call, "dim") != nullptr && named(call, "index") != nullptr && d && index;
    const std::size_t k = fits ? wrap_dim(*d, rank).value_or(rank) : rank;
    fits = k < rank && *index >= -self->shape[k] && *index < self->shape[k];
  } else if (op == "aten::as_strided") {
    const NamedArg *size_arg = named(call, "size"), *stride_arg = named(call, "stride");
    const auto size = size_arg == nullptr ? std::nullopt : ints(size_arg->value);
    const auto stride = stride_arg == nullptr ? std::nullopt : ints(stride_arg->value);
    const auto offset = int_arg(call, "storage_offset", 0);
    const auto negative = [](const Shape& s) {
      return std::any_of(s.begin(), s.end(), [](int64_t x) { return x < 0; });
    };
    fits = size && stride && size->size() == stride->size() && !negative(*size) && !negative(*stride) && offset &&
           *offset >= 0;
  }
  // detach, detach_, alias and lift_fresh take only self.
  return fits ? std::optional(moved(0)) : std::nullopt;
}

using F = OpFamily;
constexpr CountedOperator kMovement[] = {
    {"aten::embedding", F::kEmbedding, embedding},
    {"aten::embedding_backward", F::kEmbedding, embedding_backward},
    {"aten::embedding_dense_backward", F::kEmbedding, embedding_backward},
    {"aten::copy_", F::kDataMovement, copy},
    {"aten::clone", F::kDataMovement, copied},
    {"aten::contiguous", F::kDataMovement, copied},
    {"aten::_to_copy", F::kDataMovement, copied},
    {"aten::cat", F::kDataMovement, joined},
    {"aten::stack", F::kDataMovement, joined},
    {"aten::index_select", F::kDataMovement, gathered},
    {"aten::gather", F::kDataMovement, gathered},
    {"aten::view", F::kDataMovement, reshaped},
    {"aten::reshape", F::kDataMovement, reshaped},
    {"aten::_unsafe_view", F::kDataMovement, reshaped},
    {"aten::transpose", F::kDataMovement, viewed},
    {"aten::permute", F::kDataMovement, viewed},
    {"aten::t", F::kDataMovement, viewed},
    {"aten::expand", F::kDataMovement, viewed},
    {"aten::unsqueeze", F::kDataMovement, viewed},
    {"aten::squeeze", F::kDataMovement, viewed},
    {"aten::slice", F::kDataMovement, viewed},
    {"aten::select", F::kDataMovement, viewed},
    {"aten::as_strided", F::kDataMovement, viewed},
    {"aten::detach", F::kDataMovement, viewed},
    {"aten::alias", F::kDataMovement, viewed},
    {"aten::detach_", F::kDataMovement, viewed},
    {"aten::lift_fresh", F::kDataMovement, viewed},
    {"aten::flatten", F::kDataMovement, flattened},
    {"aten::split", F::kDataMovement, split},
    {"aten::split_with_sizes", F::kDataMovement, split},
    {"aten::chunk", F::kDataMovement, split},
    {"aten::to", F::kDataMovement, converted},
    {"aten::dropout", F::kDataMovement, dropped},
    {"aten::dropout_", F::kDataMovement, dropped},
    {"aten::pad", F::kDataMovement, padded},
    {"aten::roll", F::kDataMovement, rolled},
    {"aten::index", F::kDataMovement, indexed},
};

}  // namespace

std::span<const CountedOperator> movement_operators() { return kMovement; }

}  // namespace opcost::call_work_families
