#include "torch/observer.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/add.h>
#include <ATen/ops/ones.h>
#include <ATen/record_function.h>
#include <fmt/format.h>

#include <algorithm>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>

#include "core/inventory/cache_reuse.h"
#include "core/inventory/compiled_kernel_name.h"
#include "core/spec/op_call.h"
#include "torch/bind.h"
#include "torch/canonical_form.h"
#include "torch/dtype_codes.h"
#include "torch/input_values.h"

namespace opcost {

namespace {

// The callbacks run for every dispatcher call of the model (several hundred per forward, most
// of them nested), so the hot path allocates nothing once warm: names and layers are interned,
// tensors are kept as dtype + sizes (+ strides), and text is made after the run.

// Interns C strings. Dispatcher op names are stable pointers, so a pointer hit (checked
// against the text, as other records' names may reuse an address) skips hashing the text.
class NameTable {
 public:
  uint32_t id(const char* text) {
    if (auto it = by_ptr_.find(text); it != by_ptr_.end() && names_[it->second] == text) return it->second;
    auto [it, fresh] = by_text_.try_emplace(text, uint32_t(names_.size()));
    if (fresh) names_.emplace_back(text);
    by_ptr_[text] = it->second;
    return it->second;
  }
  uint32_t id(const std::string& text) {
    auto [it, fresh] = by_text_.try_emplace(text, uint32_t(names_.size()));
    if (fresh) names_.push_back(text);
    return it->second;
  }
  const std::string& operator[](uint32_t id) const { return names_[id]; }

 private:
  std::unordered_map<const char*, uint32_t> by_ptr_;
  std::unordered_map<std::string, uint32_t> by_text_;
  std::vector<std::string> names_;
};

struct TensorSlot {
  at::ScalarType dtype;
  // On the CPU: a Python number wrapped as a 0-dim CPU tensor beside CUDA tensors
  // (`x * 0.5` is aten::mul.Tensor with other=f64[] on the CPU) must replay so, not on the GPU.
  bool cpu = false;
  c10::SmallVector<int64_t, 5> sizes, strides;  // strides only when not contiguous
  std::uintptr_t address = 0;                   // where its data starts, and how many bytes it
  std::uint64_t bytes = 0;                      // spans: only where inputs are classed by cache
  // Of its values, what the op's cost or output size depends on (a mask's density): only for the
  // ops torch/input_values names, read in the inventory step.
  ValueSummary values;
  // The earlier argument that passed this very tensor (-1: none): self-attention gives
  // aten::_native_multi_head_attention one tensor as query, key and value, and only then does
  // it take its fused path (on the H100, ViT-B/16's replayed apart ran 3.5x the model's time).
  int same_as_arg = -1;
};

// What the observer keeps of an input: tensors as dtype and geometry (no data, no reference
// that would keep activations alive), everything else as the IValue itself. A Tensor?[]
// (aten::index's indices, with None for the dimensions taken whole) keeps its Nones.
using OptionalTensors = std::vector<std::optional<TensorSlot>>;
using Slot = std::variant<TensorSlot, std::vector<TensorSlot>, OptionalTensors, c10::IValue>;

struct Call {
  std::optional<c10::OperatorHandle> handle;  // none for a kernel torch.compile generated
  uint32_t kernel = 0;                        // such a kernel's record name (name id)
  std::vector<Slot> slots;
  uint32_t layer = 0;
  bool backward = false;
  std::vector<uint32_t> nested;  // name ids
  // Host clock (ns) after the call's inputs were recorded, and when it returned: the call's
  // host time in the model, and the host time between calls (module code, scopes, freeing).
  int64_t start_ns = 0, end_ns = 0, gap_ns = 0;
  std::vector<TensorTouch> outputs;  // only where inputs are classed by cache
};

// One observation. Callbacks may run on several threads (autograd's device threads), so
// shared state is behind a mutex; each thread keeps its own stacks.
struct Capture {
  uint64_t generation = 0;
  const ObserveOptions* options = nullptr;
  std::mutex mu;
  NameTable names;                                 // op names and layers
  uint32_t top = 0, autograd = 0, accumulate = 0;  // ids of "", "(autograd)", "(accumulate-grad)"
  std::vector<Call> calls;
  std::unordered_map<uint64_t, std::optional<c10::OperatorHandle>> handles;  // (name id, overload id)
  std::unordered_map<int64_t, uint32_t> seq_layer;                           // autograd sequence nr -> forward layer
  // When the latest call on any thread returned (at first: when the body began). Gaps are
  // measured from it, so that a thread's first call (autograd's device thread, in backward)
  // counts the host time since the previous call, not since the step began.
  int64_t body_start_ns = 0, last_end_ns = 0;
};

std::atomic<Capture*> g_capture{nullptr};
std::atomic<uint64_t> g_generation{0};

struct Frame {
  uint32_t layer;
  bool backward = false;
};

// Entries of ThreadState::ops besides an index into Capture::calls.
constexpr int kNested = -1;       // a dispatcher op inside an outer one
constexpr int kTransparent = -2;  // a record that is not a dispatcher op

struct ThreadState {
  uint64_t generation = 0;
  std::vector<Frame> scopes;  // open USER_SCOPE and BACKWARD_FUNCTION records
  std::vector<int> ops;       // open FUNCTION records
  int open_ops = 0;           // how many of `ops` are dispatcher ops
  int outer = -1;             // the open outermost call
};

int64_t now_ns() { return std::chrono::steady_clock::now().time_since_epoch().count(); }

thread_local ThreadState tl;

// A forward call run with grad numbers the backward node it makes (its sequence number): that
// node's kernels are then costs of the call's layer. An ATen call only claims a number no one
// holds (an outer call's claim stands for its nested ones); a Python autograd Function's apply
// (a compiled region's CompiledFunction) numbers its node for certain and replaces any claim.
// Called with the capture's mutex held.
enum class Claim { kIfFree, kCertain };
void claim_backward_layer(Capture& c, const at::RecordFunction& fn, bool in_backward, uint32_t layer, Claim claim) {
  if (!c.options->backward || in_backward || fn.seqNr() < 0) return;
  if (claim == Claim::kCertain)
    c.seq_layer.insert_or_assign(fn.seqNr(), layer);
  else
    c.seq_layer.try_emplace(fn.seqNr(), layer);
}

ThreadState& state_for(const Capture& c) {
  if (tl.generation != c.generation) tl = ThreadState{c.generation};
  return tl;
}

// Where a tensor's data lies, for the cache classing: its first element and the bytes of its
// elements. Tensors without storage (none in an eager model) count as touching nothing.
TensorTouch touch_of(const at::Tensor& t, int arg) {
  if (!t.has_storage() || !t.storage().data()) return {0, 0, arg};
  const auto first =
      reinterpret_cast<std::uintptr_t>(t.storage().data()) + std::uintptr_t(t.storage_offset()) * t.itemsize();
  return {first, std::uint64_t(t.numel()) * t.itemsize(), arg};
}

TensorSlot tensor_slot(const at::Tensor& t, bool locate) {
  TensorSlot s{t.scalar_type(), t.is_cpu(), c10::SmallVector<int64_t, 5>(t.sizes().begin(), t.sizes().end()), {}};
  if (!t.is_contiguous()) s.strides.assign(t.strides().begin(), t.strides().end());
  if (locate) {
    const TensorTouch where = touch_of(t, 0);
    s.address = where.address;
    s.bytes = where.bytes;
  }
  return s;
}

TensorSpec spec_of(const TensorSlot& s) {
  TensorSpec t;
  t.dtype = code_of(s.dtype);
  t.shape.assign(s.sizes.begin(), s.sizes.end());
  if (!s.strides.empty()) t.strides = std::vector<int64_t>(s.strides.begin(), s.strides.end());
  t.zeros_fraction = s.values.zeros_fraction;
  if (s.values.range) t.range = std::pair{double(s.values.range->first), double(s.values.range->second)};
  t.distinct = s.values.distinct;
  return t;
}

// A list of tensors and Nones with at least one tensor (a Tensor?[] argument), else nullopt.
std::optional<OptionalTensors> optional_tensors(const c10::IValue& v, bool locate) {
  if (!v.isList()) return std::nullopt;
  OptionalTensors out;
  bool any = false;
  for (const c10::IValue& e : v.toListRef()) {
    if (e.isNone() || (e.isTensor() && !e.toTensor().defined())) {
      out.emplace_back();
    } else if (e.isTensor()) {
      out.emplace_back(tensor_slot(e.toTensor(), locate));
      any = true;
    } else {
      return std::nullopt;
    }
  }
  if (!any) return std::nullopt;
  return out;
}

Slot slot_of(const c10::IValue& v, bool locate) {
  if (v.isTensor()) {
    const auto& t = v.toTensor();
    if (!t.defined()) return c10::IValue();  // C++'s "no tensor" is Python's None
    return tensor_slot(t, locate);
  }
  if (v.isTensorList()) {
    std::vector<TensorSlot> slots;
    for (const at::Tensor& t : v.toTensorList()) slots.push_back(tensor_slot(t, locate));
    return slots;
  }
  if (auto ts = optional_tensors(v, locate)) return std::move(*ts);
  return v;
}

// Marks each tensor argument that is the very tensor of an earlier one (TensorSlot::same_as_arg).
// Arguments, not items of a list: a list's tensors are made one by one on replay.
void mark_same_tensors(Call& call, const at::RecordFunction& fn) {
  const auto inputs = fn.inputs();
  constexpr std::size_t kMostArguments = 64;  // a key's byte holds the index; ATen's take fewer
  for (std::size_t i = 1; i < call.slots.size() && i < inputs.size() && i < kMostArguments; ++i) {
    auto* t = std::get_if<TensorSlot>(&call.slots[i]);
    if (!t) continue;
    const c10::TensorImpl* impl = inputs[i].toTensor().unsafeGetTensorImpl();
    for (std::size_t j = 0; j < i; ++j)
      if (std::holds_alternative<TensorSlot>(call.slots[j]) && inputs[j].isTensor() &&
          inputs[j].toTensor().unsafeGetTensorImpl() == impl) {
        t->same_as_arg = int(j);
        break;
      }
  }
}

// Reads the values the op's cost depends on into the slot (a mask's density). The reads are
// ATen calls: made without records, so the observer does not see its own work; a tensor that
// cannot be read (a fake or meta tensor) keeps its shape only.
void summarise(TensorSlot& slot, const std::string& op, const std::string& arg, const at::Tensor& t,
               int64_t num_classes) {
  if (!t.defined() || t.is_meta() || !t.has_storage()) return;
  try {
    at::DisableRecordFunctionGuard no_records;
    slot.values = value_summary(op, arg, t, num_classes);
  } catch (const std::exception&) {}
}

void summarise_values(Call& call, const at::RecordFunction& fn, const std::string& op) {
  const auto& args = call.handle->schema().arguments();
  const auto inputs = fn.inputs();
  int64_t num_classes = -1;  // one_hot's: its values matter only when it is -1
  for (std::size_t i = 0; i < args.size() && i < inputs.size(); ++i)
    if (args[i].name() == "num_classes" && inputs[i].isInt()) num_classes = inputs[i].toInt();
  for (std::size_t i = 0; i < call.slots.size() && i < args.size() && i < inputs.size(); ++i) {
    const std::string& arg = args[i].name();
    if (auto* t = std::get_if<TensorSlot>(&call.slots[i])) summarise(*t, op, arg, inputs[i].toTensor(), num_classes);
    if (auto* ts = std::get_if<OptionalTensors>(&call.slots[i])) {
      const auto list = inputs[i].toListRef();
      for (std::size_t j = 0; j < ts->size() && j < list.size(); ++j)
        if ((*ts)[j] && list[j].isTensor()) summarise(*(*ts)[j], op, arg, list[j].toTensor(), num_classes);
    }
  }
  // The boxes nms keeps set the cost of what follows it: the count this call kept, on its boxes.
  if (op == "torchvision::nms" && !call.slots.empty())
    if (auto* dets = std::get_if<TensorSlot>(&call.slots[0])) {
      try {
        at::DisableRecordFunctionGuard no_records;
        dets->values.distinct = kept_by_nms(*call.handle, std::vector<c10::IValue>(inputs.begin(), inputs.end()));
      } catch (const std::exception&) {  // inputs that cannot be read again (fake tensors): shape only
      }
    }
}

// Appends a compact binary key of the slot to `key`; false when the value is of a kind not
// keyed (then the call is formatted on its own). Identical calls (a ResNet repeats most of its
// convolutions) share one formatting.
bool append_key(std::string& key, const Slot& s) {
  auto put = [&](const void* p, std::size_t n) { key.append(static_cast<const char*>(p), n); };
  auto put_tensor = [&](const TensorSlot& t) {
    key += char(t.dtype);
    key += t.cpu ? 'c' : 'd';
    key += char(t.sizes.size());
    put(t.sizes.data(), t.sizes.size() * sizeof(int64_t));
    key += char(t.strides.size());
    put(t.strides.data(), t.strides.size() * sizeof(int64_t));
    if (t.values.zeros_fraction) {
      key += 'z';
      put(&*t.values.zeros_fraction, sizeof(double));
    }
    if (t.values.range) {
      key += 'r';
      put(&*t.values.range, sizeof(*t.values.range));
    }
    if (t.values.distinct) {
      key += 'd';
      put(&*t.values.distinct, sizeof(int64_t));
    }
    if (t.same_as_arg >= 0) {
      key += '@';  // no slot's tag: an alias never reads as the next slot
      key += char(t.same_as_arg);
    }
  };
  if (auto* t = std::get_if<TensorSlot>(&s)) {
    key += 'T';
    put_tensor(*t);
    return true;
  }
  if (auto* ts = std::get_if<std::vector<TensorSlot>>(&s)) {
    key += 'L';
    key += char(ts->size());
    for (const auto& t : *ts) put_tensor(t);
    return true;
  }
  if (auto* ts = std::get_if<OptionalTensors>(&s)) {
    key += 'O';
    key += char(ts->size());
    for (const auto& t : *ts) {
      key += t ? 'T' : 'N';
      if (t) put_tensor(*t);
    }
    return true;
  }
  const auto& v = std::get<c10::IValue>(s);
  if (v.isNone()) {
    key += 'N';
  } else if (v.isBool()) {
    key += v.toBool() ? 'y' : 'n';
  } else if (v.isInt()) {
    const int64_t i = v.toInt();
    key += 'i';
    put(&i, sizeof i);
  } else if (v.isDouble()) {
    const double d = v.toDouble();
    key += 'd';
    put(&d, sizeof d);
  } else if (v.isIntList()) {
    key += 'I';
    const auto l = v.toIntList();
    key += char(l.size());
    for (int64_t i : l) put(&i, sizeof i);
  } else if (v.isString()) {
    key += 's';
    key += v.toStringRef();
    key += '\0';
  } else {
    return false;
  }
  return true;
}

// Set while open_layer_scope opens a scope that names its layer inside a backward node too.
thread_local bool tl_opening_backward_layer = false;

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  Capture* c = g_capture.load(std::memory_order_acquire);
  if (!c) return nullptr;
  // Taken first: the bookkeeping below then counts inside the call, not in the gap before it
  // (the gaps are the model's own code, which the prediction uses).
  const int64_t start_ns = now_ns();
  ThreadState& t = state_for(*c);
  const bool in_backward = !t.scopes.empty() && t.scopes.back().backward;
  std::lock_guard lock(c->mu);
  if (fn.scope() == at::RecordScope::USER_SCOPE) {
    if (!in_backward) {
      t.scopes.push_back({c->names.id(fn.name()), false});
    } else if (tl_opening_backward_layer) {
      t.scopes.push_back({c->names.id(fn.name()), true});  // a generated backward kernel's forward layer
    } else {
      t.scopes.push_back(t.scopes.back());  // a scope inside a backward node keeps its layer
    }
    return nullptr;
  }
  if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
    auto it = c->seq_layer.find(fn.seqNr());
    // Gradient accumulation into parameters has no forward op (and no sequence number).
    const bool accumulate = std::string_view(fn.name()).find("AccumulateGrad") != std::string_view::npos;
    t.scopes.push_back({it != c->seq_layer.end() ? it->second : accumulate ? c->accumulate : c->autograd, true});
    return nullptr;
  }
  if (t.open_ops > 0) {  // nested inside an outer op: count it there
    if (t.outer >= 0) {
      Call& outer = c->calls[t.outer];
      outer.nested.push_back(c->names.id(fn.name()));
      claim_backward_layer(*c, fn, outer.backward, outer.layer, Claim::kIfFree);
    }
    t.ops.push_back(kNested);
    ++t.open_ops;
    return nullptr;
  }
  const uint64_t key = uint64_t(c->names.id(fn.name())) << 32 | c->names.id(fn.overload_name());
  auto [it, fresh] = c->handles.try_emplace(key);
  if (fresh) it->second = c10::Dispatcher::singleton().findSchema({fn.name(), fn.overload_name()});
  // Not a dispatcher op: an autograd engine or profiler range is seen through; a kernel that
  // torch.compile generated (its launch recorded by open_compiled_kernel_record) is a call of its own.
  if (!it->second && !is_compiled_kernel_name(fn.name())) {
    // A Python autograd Function's apply: its backward node's layer is the one it ran in.
    claim_backward_layer(*c, fn, in_backward, t.scopes.empty() ? c->top : t.scopes.back().layer, Claim::kCertain);
    t.ops.push_back(kTransparent);
    return nullptr;
  }
  Call call;
  call.handle = it->second;
  if (!call.handle) call.kernel = uint32_t(key >> 32);
  if (c->options->inputs) {  // timing steps allocate nothing per call
    call.nested.reserve(8);
    call.slots.reserve(fn.num_inputs());
    const bool locate = c->options->cache_bytes > 0;
    for (const auto& v : fn.inputs()) call.slots.push_back(slot_of(v, locate));
    mark_same_tensors(call, fn);
    if (const std::string& op = c->names[uint32_t(key >> 32)]; summarises_values(op)) summarise_values(call, fn, op);
  }
  const bool host_times_only = c->options->host_times_only;
  if (!t.scopes.empty()) {
    call.layer = t.scopes.back().layer;
    call.backward = t.scopes.back().backward;
  } else if (!host_times_only) {
    call.layer = c->options->layer_source ? c->names.id(c->options->layer_source()) : c->top;
  }
  claim_backward_layer(*c, fn, call.backward, call.layer, Claim::kIfFree);
  t.outer = int(c->calls.size());
  t.ops.push_back(t.outer);
  ++t.open_ops;
  call.start_ns = start_ns;
  call.gap_ns = std::max<int64_t>(0, start_ns - c->last_end_ns);
  c->calls.push_back(std::move(call));
  // Until this call ends (on_end switches it back), its nested calls run without records.
  if (host_times_only) at::enableRecordFunction(false);
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  Capture* c = g_capture.load(std::memory_order_acquire);
  if (!c || tl.generation != c->generation) return;
  ThreadState& t = tl;
  if (fn.scope() == at::RecordScope::USER_SCOPE || fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
    if (!t.scopes.empty()) t.scopes.pop_back();
    return;
  }
  if (t.ops.empty()) return;
  const int top = t.ops.back();
  t.ops.pop_back();
  if (top == kTransparent) return;
  if (top >= 0) {
    const int64_t end = now_ns();
    if (c->options->host_times_only) at::enableRecordFunction(true);
    std::lock_guard lock(c->mu);
    Call& call = c->calls[top];
    call.end_ns = end;
    c->last_end_ns = std::max(c->last_end_ns, end);
    if (c->options->cache_bytes > 0)
      for (const auto& v : fn.outputs()) {
        if (v.isTensor() && v.toTensor().defined()) call.outputs.push_back(touch_of(v.toTensor(), -1));
        if (v.isTensorList())
          for (const at::Tensor& t : v.toTensorList()) call.outputs.push_back(touch_of(t, -1));
      }
  }
  if (--t.open_ops == 0) t.outer = -1;
}

}  // namespace

namespace {
thread_local std::vector<std::unique_ptr<at::RecordFunction>> tl_layer_scopes;
}  // namespace

void open_layer_scope(const std::string& name, bool names_backward_layer) {
  auto rf = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
  if (rf->isActive()) {
    struct Flag {  // reset however before() returns
      explicit Flag(bool on) { tl_opening_backward_layer = on; }
      ~Flag() { tl_opening_backward_layer = false; }
    } flag(names_backward_layer);
    rf->before(name);
  }
  tl_layer_scopes.push_back(std::move(rf));
}

void close_layer_scope() {
  if (!tl_layer_scopes.empty()) tl_layer_scopes.pop_back();  // its destructor ends the record
}

namespace {
// A record's inputs are a view of values it does not own: they live here while it is open.
struct KernelRecord {
  std::string name;
  std::vector<c10::IValue> inputs;
  std::unique_ptr<at::RecordFunction> record;
};
thread_local std::vector<KernelRecord> tl_kernel_records;
}  // namespace

void open_compiled_kernel_record(const std::string& record_name, const std::vector<std::string>& args,
                                 const std::vector<int64_t>& touches) {
  KernelRecord& r = tl_kernel_records.emplace_back();
  // Nothing to record for (a measurement loop's replays, the model's timed steps): an empty
  // entry keeps opens and closes paired, and no allocation is made.
  if (!at::hasCallbacks()) return;
  r.name = record_name;
  r.inputs.assign(args.begin(), args.end());
  if (!touches.empty()) r.inputs.emplace_back(c10::List<int64_t>(touches));  // last: after every argument
  r.record = std::make_unique<at::RecordFunction>(at::RecordScope::FUNCTION);
  if (r.record->isActive())
    r.record->before(std::string_view(r.name), c10::ArrayRef<const c10::IValue>(r.inputs.data(), r.inputs.size()));
}

void close_compiled_kernel_record() {
  if (!tl_kernel_records.empty()) tl_kernel_records.pop_back();  // the record ends before its inputs go
}

namespace {

// Runs `body` with the observer's callbacks installed, the calls recorded into `capture`;
// returns when the body ended (steady clock, ns).
int64_t run_observed(Capture& capture, const std::function<void()>& body, const ObserveOptions& options) {
  Capture* expected = nullptr;
  if (!g_capture.compare_exchange_strong(expected, &capture))
    throw std::logic_error("opcost::observe: another observation is already running");
  // Global, not thread-local: backward ops of CUDA tensors run on autograd's device threads.
  // Timing steps need no layers: scope records then cost the model nothing either.
  std::unordered_set<at::RecordScope, std::hash<at::RecordScope>> scopes = {at::RecordScope::FUNCTION};
  if (!options.host_times_only) scopes.insert({at::RecordScope::USER_SCOPE, at::RecordScope::BACKWARD_FUNCTION});
  const auto handle = at::addGlobalCallback(at::RecordFunctionCallback(on_start, on_end)
                                                .needsInputs(options.inputs && !options.host_times_only)
                                                .needsOutputs(options.cache_bytes > 0 && !options.host_times_only)
                                                .scopes(scopes));
  auto stop = [&] {
    at::removeCallback(handle);
    g_capture.store(nullptr, std::memory_order_release);
  };
  try {
    capture.body_start_ns = capture.last_end_ns = now_ns();
    body();
  } catch (...) {
    stop();
    throw;
  }
  const int64_t body_end_ns = now_ns();
  stop();
  return body_end_ns;
}

// Which inputs of each call the model reads from memory rather than L2, by argument index;
// empty when the options class none.
std::vector<std::vector<int>> cold_inputs_of(const Capture& capture, const ObserveOptions& options) {
  if (options.cache_bytes == 0 || !options.inputs || options.host_times_only) return {};
  std::vector<CallTouches> touches;
  touches.reserve(capture.calls.size());
  for (const auto& call : capture.calls) {
    CallTouches& t = touches.emplace_back();
    // A generated kernel's tensors come as (address, bytes, argument) triples after its texts.
    const auto* last = call.handle || call.slots.empty() ? nullptr : std::get_if<c10::IValue>(&call.slots.back());
    if (last && last->isIntList()) {
      const auto triples = last->toIntList();
      for (std::size_t k = 0; k + 2 < triples.size(); k += 3)
        t.push_back({std::uintptr_t(triples.get(k)), std::uint64_t(triples.get(k + 1)), int(triples.get(k + 2))});
      continue;
    }
    for (std::size_t i = 0; i < call.slots.size(); ++i) {
      if (auto* s = std::get_if<TensorSlot>(&call.slots[i])) t.push_back({s->address, s->bytes, int(i)});
      if (auto* ts = std::get_if<std::vector<TensorSlot>>(&call.slots[i]))
        for (const auto& s : *ts) t.push_back({s.address, s.bytes, int(i)});
      if (auto* ts = std::get_if<OptionalTensors>(&call.slots[i]))
        for (const auto& s : *ts)
          if (s) t.push_back({s->address, s->bytes, int(i)});
    }
    t.insert(t.end(), call.outputs.begin(), call.outputs.end());
  }
  return cold_inputs(touches, options.cache_bytes);
}

// Whether any tensor of the call is on a device (not the CPU).
bool touches_device(const Call& call) {
  bool on_device = false;
  for (const auto& s : call.slots) {
    if (auto* t = std::get_if<TensorSlot>(&s)) on_device |= !t->cpu;
    if (auto* ts = std::get_if<std::vector<TensorSlot>>(&s))
      for (const auto& t : *ts) on_device |= !t.cpu;
    if (auto* ts = std::get_if<OptionalTensors>(&s))
      for (const auto& t : *ts) on_device |= t && !t->cpu;
  }
  return on_device;
}

// A generated kernel's arguments have no schema: they are named by position (arg0, arg1, ...).
// The face records each as its text in the argument language ("f32[4,32]", "128"), as it has
// no tensors of LibTorch's to hand over; text that does not read as a value is kept as a string.
std::string compiled_kernel_args(const Call& call) {
  std::vector<NamedArg> named;
  for (std::size_t i = 0; i < call.slots.size(); ++i) {
    const auto* iv = std::get_if<c10::IValue>(&call.slots[i]);
    if (!iv || !iv->isString()) continue;
    const std::string text = iv->toStringRef();
    ArgValue value;
    try {
      value = parse_value(text);
    } catch (const std::exception&) {
      value = ArgValue{ArgValue::Word{text}};
    }
    named.push_back({compiled_kernel_arg_name(i), std::move(value)});
  }
  return format_args(named);
}

// The functional twin of an out= overload (aten::addmm.out -> aten::addmm): the op of the same
// name whose arguments are the out= overload's less its outputs, name for name and type for
// type. torch.compile's generated code calls ATen through out= overloads (its matrix products,
// into buffers it planned); a replay allocates its output instead, which the same kernels write,
// so such a call is listed, measured and looked up as its twin. None where no twin matches.
std::optional<c10::OperatorHandle> functional_twin(const c10::FunctionSchema& out_schema) {
  std::vector<const c10::Argument*> inputs;
  for (const auto& a : out_schema.arguments()) {
    if (!a.is_out()) {
      if (inputs.size() < std::size_t(&a - out_schema.arguments().data())) return std::nullopt;  // an output first
      inputs.push_back(&a);
    }
  }
  for (const auto& name : c10::Dispatcher::singleton().getAllOpNames()) {
    if (name.name != out_schema.name() || name.overload_name == out_schema.overload_name()) continue;
    auto handle = c10::Dispatcher::singleton().findSchema(name);
    if (!handle) continue;
    const auto& args = handle->schema().arguments();
    if (args.size() != inputs.size()) continue;
    bool same = true;
    for (std::size_t i = 0; i < args.size() && same; ++i)
      same =
          !args[i].is_out() && args[i].name() == inputs[i]->name() && args[i].type()->str() == inputs[i]->type()->str();
    if (same) return handle;
  }
  return std::nullopt;
}

// The call's canonical arguments (torch/canonical_form), from what the observer kept of them,
// as `schema`'s (the call's own, or its functional twin's: the first arguments of both).
// `step_on_device`: some call of the step touched a device tensor.
std::string signature_args(const Call& call, const c10::FunctionSchema& schema, bool step_on_device) {
  const auto& args = schema.arguments();
  // A CPU tensor keeps its device in the signature in a step that runs on a device: in a call
  // that also has device tensors, and in one that has none, which the model ran on the CPU.
  // Replayed on the device, such a call costs kernels the step never ran: AdamW's step counters
  // are CPU tensors, and BERT's training step on the H100 read 199 + 199 `item` calls a step as
  // 4 ms of device-to-host copies (its predicted time +10.7%; 2026-11-27-h100-training-loss).
  const bool on_device = step_on_device || touches_device(call);
  auto spec = [&](const TensorSlot& t) {
    TensorSpec out = spec_of(t);
    if (on_device && t.cpu) out.device = "cpu";
    if (t.same_as_arg >= 0 && std::size_t(t.same_as_arg) < args.size()) out.same_as = args[t.same_as_arg].name();
    return out;
  };
  std::vector<ArgValue> values;
  for (std::size_t i = 0; i < args.size() && i < call.slots.size(); ++i) {
    const Slot& s = call.slots[i];
    if (auto* t = std::get_if<TensorSlot>(&s)) {
      values.push_back(ArgValue{spec(*t)});
    } else if (auto* ts = std::get_if<std::vector<TensorSlot>>(&s)) {
      ArgList l;
      for (const auto& t : *ts) l.push_back(ArgValue{spec(t)});
      values.push_back(ArgValue{l});
    } else if (auto* ots = std::get_if<OptionalTensors>(&s)) {
      ArgList l;
      for (const auto& t : *ots) l.push_back(t ? ArgValue{spec(*t)} : ArgValue{ArgValue::None{}});
      values.push_back(ArgValue{l});
    } else {
      values.push_back(canonical_value(args[i], std::get<c10::IValue>(s)));
    }
  }
  return canonical_args(schema, std::move(values));
}

// Whether a call returned views of its arguments and wrote none. The schema's `Tensor(a) self ->
// Tensor(a)` says only that the result MAY alias `self`: contiguous, reshape, flatten and to()
// copy when they must (a transposed input, another dtype), and launch a kernel then. So the
// call's outputs must also start inside an input's data, as the observer saw them (outputs are
// kept where inputs are classed by cache, else no call is taken for a view: it only costs time).
bool returned_views(const Call& call, const c10::FunctionSchema& schema) {
  if (schema.returns().empty() || call.outputs.empty()) return false;
  for (const c10::Argument& a : schema.arguments())
    if (a.alias_info() && a.alias_info()->isWrite()) return false;
  const bool annotated = std::all_of(schema.returns().begin(), schema.returns().end(), [&](const c10::Argument& r) {
    const c10::AliasInfo* out = r.alias_info();
    if (!out || out->isWrite() || out->beforeSets().empty()) return false;
    return std::any_of(schema.arguments().begin(), schema.arguments().end(), [&](const c10::Argument& a) {
      return a.alias_info() && a.alias_info()->beforeSets() == out->beforeSets();
    });
  });
  if (!annotated) return false;
  const auto inside = [](const TensorTouch& out, const TensorSlot& in) {
    return in.address != 0 && out.address >= in.address &&
           out.address < in.address + std::max<std::uint64_t>(in.bytes, 1);
  };
  return std::all_of(call.outputs.begin(), call.outputs.end(), [&](const TensorTouch& out) {
    return std::any_of(call.slots.begin(), call.slots.end(), [&](const Slot& s) {
      const auto* t = std::get_if<TensorSlot>(&s);
      return t && inside(out, *t);
    });
  });
}

// The recorded calls as inventory entries. Calls whose inputs key alike (most of a model's
// repeated layers) share one formatted signature.
Inventory inventory_of(const Capture& capture, const std::vector<std::vector<int>>& cold) {
  InventoryBuilder builder;
  std::unordered_map<std::string, std::string> formatted;           // call key -> canonical args
  std::map<std::string, std::optional<c10::OperatorHandle>> twins;  // out= overload -> its functional twin
  std::string key;
  const bool step_on_device =
      std::any_of(capture.calls.begin(), capture.calls.end(), [](const Call& c) { return touches_device(c); });
  for (std::size_t n = 0; n < capture.calls.size(); ++n) {
    const Call& call = capture.calls[n];
    const c10::FunctionSchema* schema = call.handle ? &call.handle->schema() : nullptr;
    if (schema && is_out_overload(*schema)) {
      auto [twin, fresh] = twins.try_emplace(schema->operator_name().name + "." + schema->overload_name());
      if (fresh) twin->second = functional_twin(*schema);
      if (twin->second) schema = &twin->second->schema();
    }
    // A generated kernel is "compiled::<kernel>" with its source's hash as the overload.
    const auto [op, overload] = schema ? std::pair{schema->name(), schema->overload_name()}
                                       : split_compiled_kernel_name(capture.names[call.kernel]);
    std::vector<std::string> nested;
    for (uint32_t id : call.nested) nested.push_back(capture.names[id]);
    const char* phase = call.backward ? "backward" : "forward";
    // A view reads no memory: none of its inputs is cold (a cold replay would make copies of them).
    const bool views = schema && returned_views(call, *schema);
    std::vector<std::string> cold_args;
    if (!cold.empty() && !views)
      for (int i : cold[n]) {
        if (!call.handle) {
          cold_args.push_back(compiled_kernel_arg_name(std::size_t(i)));
        } else if (const auto& args = schema->arguments(); std::size_t(i) < args.size()) {
          cold_args.push_back(args[i].name());
        }
      }
    key.assign(op).append(1, '.').append(overload).append(1, '\0');
    bool keyed = true;
    for (const auto& s : call.slots) {
      // A generated kernel's touches (its tensors' addresses, last) differ launch by launch; its
      // signature is its argument texts alone.
      const auto* v = std::get_if<c10::IValue>(&s);
      if (!call.handle && v && v->isIntList()) continue;
      keyed = keyed && append_key(key, s);
    }
    const auto known = keyed ? formatted.find(key) : formatted.end();
    const std::string text = known != formatted.end() ? known->second
                             : schema                 ? signature_args(call, *schema, step_on_device)
                                                      : compiled_kernel_args(call);
    builder.add(op, overload, text, capture.names[call.layer], nested, phase, cold_args, views);
    builder.time_last((call.end_ns - call.start_ns) * 1e-3, call.gap_ns * 1e-3);
    if (keyed && known == formatted.end()) formatted.emplace(key, text);
  }
  return builder.take();
}

}  // namespace

Inventory observe(const std::function<void()>& body, const ObserveOptions& options) {
  Capture capture;
  capture.generation = ++g_generation;
  capture.options = &options;
  capture.calls.reserve(4096);  // no reallocation (and moves of every call) while the model runs
  capture.top = capture.names.id(std::string());
  capture.autograd = capture.names.id(std::string("(autograd)"));
  capture.accumulate = capture.names.id(std::string("(accumulate-grad)"));
  const int64_t body_end_ns = run_observed(capture, body, options);
  const std::vector<std::vector<int>> cold = cold_inputs_of(capture, options);
  Inventory inv = inventory_of(capture, cold);
  if (!cold.empty()) inv.cache_bytes = options.cache_bytes;
  inv.host_step_us = (body_end_ns - capture.body_start_ns) * 1e-3;
  inv.host_after_last_call_us = (body_end_ns - capture.last_end_ns) * 1e-3;
  return inv;
}

}  // namespace opcost
