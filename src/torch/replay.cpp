// Replaying one operator: a call bound to its schema (torch/bind), its inputs made once (and
// copied for a cold cache), then called boxed through the dispatcher, as often as the runner asks.
#include <ATen/ATen.h>
#include <ATen/DeviceAccelerator.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/InferenceMode.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "core/inventory/compiled_kernel_name.h"
#include "core/spec/cache_mode.h"
#include "core/sys/host_memory.h"
#include "core/text/text.h"
#include "torch/autocast.h"
#include "torch/bind.h"
#include "torch/device.h"
#include "torch/device_work.h"
#include "torch/dtype_codes.h"
#include "torch/out_of_memory.h"
#include "torch/replay.h"

namespace opcost {

namespace {

// What a bound call is, as the measurement and the database record it (autocast and the cold
// input sets are the caller's).
CallInfo info_of(const OpCall& call, const BoundCall& b, c10::Device device) {
  CallInfo info;
  info.op = call.op;
  info.overload = b.overload;
  info.resolution_note = b.resolution_note;
  info.canonical_args = format_args(b.canonical);
  info.schema = c10::toString(b.handle->schema());
  info.dtype = b.dtype;
  info.device_kind = device.is_cuda() ? "cuda" : "cpu";
  info.device_index = device.has_index() ? device.index() : 0;
  info.input_bytes = b.tensor_bytes;
  return info;
}

// The cache mode a replay is asked for, parsed once; its one-line refusal as a ReplayError.
CacheMode parse_replay_cache_mode(const std::string& text) {
  try {
    return parse_cache_mode(text);
  } catch (const std::invalid_argument& e) {
    throw ReplayError(e.what());
  }
}

// The schema argument indices a cache mode rotates: none when warm, every argument when cold
// (those without tensors copy as they are), the named ones for cold:<arg>,<arg>.
std::vector<std::size_t> cold_arguments(const CacheMode& mode, const c10::FunctionSchema& schema) {
  const auto& args = schema.arguments();
  std::vector<std::size_t> out;
  if (mode.is_warm()) return out;
  if (mode.rotates_all()) {
    for (std::size_t i = 0; i < args.size(); ++i) out.push_back(i);
    return out;
  }
  for (const std::string& name : mode.arguments) {
    auto it = std::find_if(args.begin(), args.end(), [&](const c10::Argument& a) { return a.name() == name; });
    if (it == args.end()) {
      std::vector<std::string> names;
      for (const auto& a : args) names.push_back(a.name());
      throw ReplayError(fmt::format("cache mode '{}': {} has no argument '{}' (its arguments: {})", to_string(mode),
                                    schema.name(), name, fmt::join(names, ", ")));
    }
    out.push_back(std::size_t(it - args.begin()));
  }
  return out;
}

std::size_t ivalue_tensor_bytes(const c10::IValue& iv) {
  if (iv.isTensor()) return iv.toTensor().defined() ? iv.toTensor().nbytes() : 0;
  std::size_t bytes = 0;
  if (iv.isTensorList())
    for (const at::Tensor& t : iv.toTensorList()) bytes += t.defined() ? t.nbytes() : 0;
  return bytes;
}

// A copy of an argument's tensors (a list's each); anything else as it is.
c10::IValue cloned(const c10::IValue& iv) {
  if (iv.isTensor()) return iv.toTensor().defined() ? c10::IValue(iv.toTensor().clone()) : iv;
  if (iv.isTensorList()) {
    c10::List<at::Tensor> copies;
    for (const at::Tensor& t : iv.toTensorList()) copies.push_back(t.defined() ? t.clone() : t);
    return copies;
  }
  return iv;
}

class PreparedCallImpl : public PreparedCall {
 public:
  PreparedCallImpl(const OpCall& call, const ReplayOptions& opt) {
    const c10::Device device = resolve_device_option(opt.device);
    c10::InferenceMode guard;
    const std::string label = fmt::format("{} {}", call.display_name(), format_args(call.args));
    std::size_t needed = 0;
    try {
      // Sizes first: inputs that cannot fit are refused with the figures, before LibTorch
      // tries (and the system may kill the process instead of failing the allocation).
      const BoundCall sizes = check_call(call, device);
      needed = sizes.tensor_bytes;
      const CacheMode cache_mode = parse_replay_cache_mode(opt.cache_mode);
      std::vector<std::size_t> cold = cold_arguments(cache_mode, sizes.handle->schema());
      // An argument that is an earlier one's tensor is not a tensor of its own: neither counted
      // nor copied (each set takes its earlier argument's copy).
      for (const auto& [a, earlier] : sizes.same_inputs) std::erase(cold, a);
      const auto free = available_host_memory_bytes();
      if (free && sizes.host_bytes_peak > *free)
        throw ReplayError(
            fmt::format("{}: the inputs need {} of host memory to make, but {} is available; use smaller shapes", label,
                        format_bytes(double(sizes.host_bytes_peak)), format_bytes(double(*free))),
            ReplayError::Kind::kOutOfMemory);
      BoundCall b = bind_call(call, device, opt.seed);
      handle_ = b.handle;
      info_ = info_of(call, b, device);
      sets_.push_back(std::move(b.inputs));
      if (!cold.empty()) {
        // Rotate over enough copies of the cold inputs that each call finds them out of cache.
        std::size_t bytes = 0;
        for (std::size_t a : cold) bytes += ivalue_tensor_bytes(sets_.front()[a]);
        const std::size_t n = cold_input_sets(bytes, opt.cold_footprint_bytes);
        for (std::size_t i = 1; i < n; ++i) {
          std::vector<c10::IValue> copy = sets_.front();
          for (std::size_t a : cold) copy[a] = cloned(copy[a]);
          for (const auto& [a, earlier] : sizes.same_inputs) copy[a] = copy[earlier];  // one tensor, as given
          sets_.push_back(std::move(copy));
        }
      }
      info_.cache_mode = to_string(cache_mode);
      info_.input_sets = sets_.size();
      device_type_ = device.type();
      autocast_ = autocast_dtype(opt.autocast);  // resolved once: call() stays lean
      if (autocast_) info_.autocast = code_of(*autocast_);
      call_checked();
    } catch (const c10::OutOfMemoryError& e) {
      throw ReplayError(out_of_memory_message(label, device, needed, e.what_without_backtrace()),
                        ReplayError::Kind::kOutOfMemory);
    } catch (const std::bad_alloc&) {
      throw ReplayError(out_of_memory_message(label, device, needed, "the allocation failed"),
                        ReplayError::Kind::kOutOfMemory);
    } catch (const c10::Error& e) {  // a LibTorch check while making the inputs: its message, no backtrace
      if (auto oom = host_allocation_failure(e.what_without_backtrace()))  // the CPU allocator's failure
        throw ReplayError(
            fmt::format("{}: {} (inputs {}); use smaller shapes", label, *oom, format_bytes(double(needed))),
            ReplayError::Kind::kOutOfMemory);
      throw ReplayError(fmt::format("{}: {}", label, first_line(e.what_without_backtrace())));
    }
  }

  void call() override {
    stack_ = sets_[next_];
    if (++next_ == sets_.size()) next_ = 0;
    if (!autocast_) {
      handle_->callBoxed(stack_);
    } else {
      AutocastScope scope(autocast_, device_type_);  // a few thread-local stores per call
      handle_->callBoxed(stack_);
    }
  }

  bool returns_views_only() override {
    c10::InferenceMode guard;  // as the inputs were made (an in-place op refuses them outside it)
    const std::vector<c10::IValue> inputs = sets_[next_];  // the set this call takes (IValues share the tensors)
    call();
    return outputs_are_views_of_inputs(handle_->schema(), inputs, stack_);
  }

 private:
  // The first call, with the op's own error text wrapped in ours.
  void call_checked() {
    try {
      call();
      if (device_type_ == c10::DeviceType::CUDA) at::accelerator::synchronizeDevice(info_.device_index);
    } catch (const c10::OutOfMemoryError&) {
      throw;
    } catch (const std::bad_alloc&) {
      throw;
    } catch (const c10::Error& e) {
      if (is_out_of_memory_text(e.what_without_backtrace())) throw;  // reported as such by the constructor
      throw ReplayError(fmt::format("{} rejected the arguments {}:\n  {}\n  schema: {}",
                                    info_.op + (info_.overload.empty() ? "" : "." + info_.overload),
                                    info_.canonical_args, e.what_without_backtrace(), info_.schema),
                        ReplayError::Kind::kArgumentsRejected);
    }
  }

  std::optional<c10::OperatorHandle> handle_;
  std::optional<at::ScalarType> autocast_;
  c10::DeviceType device_type_ = c10::DeviceType::CPU;
  std::size_t next_ = 0;
  std::vector<std::vector<c10::IValue>> sets_;
  std::vector<c10::IValue> stack_;
};

}  // namespace

CallInfo PreparedCall::identify(const OpCall& call, const ReplayOptions& opt) {
  try {
    const c10::Device device = resolve_device_option(opt.device);
    CallInfo info = info_of(call, check_call(call, device), device);
    if (const auto a = autocast_dtype(opt.autocast)) info.autocast = code_of(*a);
    return info;
  } catch (const c10::Error& e) {
    throw ReplayError(fmt::format("{}: {}", call.display_name(), first_line(e.what_without_backtrace())));
  }
}

std::string PreparedCall::check(const OpCall& call, const ReplayOptions& opt) {
  return identify(call, opt).resolution_note;
}

namespace {
std::mutex g_replayer_mutex;
GeneratedKernelReplayer g_replayer;
}  // namespace

void set_generated_kernel_replayer(GeneratedKernelReplayer replayer) {
  std::lock_guard lock(g_replayer_mutex);
  g_replayer = std::move(replayer);
}

CallInfo generated_kernel_info(const OpCall& call, const ReplayOptions& opt, const std::string& dtype,
                               const std::string& device_kind, int device_index, std::size_t input_bytes,
                               std::size_t input_sets) {
  CallInfo info;
  info.op = call.op;
  info.overload = call.overload;
  info.canonical_args = format_args(call.args);  // as the observer wrote them: positions, no schema
  info.schema = "a kernel torch.compile generated (no schema: arguments by position)";
  info.dtype = dtype;
  info.device_kind = device_kind;
  info.device_index = device_index;
  info.autocast = opt.autocast;  // the model's, so that its look-up finds the row
  info.cache_mode = opt.cache_mode;
  info.input_bytes = input_bytes;
  info.input_sets = input_sets;
  return info;
}

std::unique_ptr<PreparedCall> PreparedCall::prepare(const OpCall& call, const ReplayOptions& opt) {
  if (is_compiled_kernel_name(call.op)) {
    GeneratedKernelReplayer replayer;
    {
      std::lock_guard lock(g_replayer_mutex);
      replayer = g_replayer;
    }
    if (!replayer) throw ReplayError(fmt::format("{}: {}", call.display_name(), kGeneratedKernelNotHere));
    return replayer(call, opt);
  }
  return std::make_unique<PreparedCallImpl>(call, opt);
}

}  // namespace opcost
