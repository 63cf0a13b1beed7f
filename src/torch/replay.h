#pragma once
// Replaying one ATen operator through the dispatcher, built from its registered schema.
// This header is torch-free so that the CLI and reports compile without LibTorch headers.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/spec/op_call.h"
#include "core/text/text.h"

namespace opcost {

// The option texts as users give them; prepare() and identify() parse each once
// (core/spec/device_spec, core/spec/cache_mode), refusing bad text in one line.
struct ReplayOptions {
  std::string device = "auto";  // "auto" (CUDA when present), "cpu", "cuda", "cuda:N"
  uint64_t seed = 0;
  // "warm": one input set; "cold": rotate sets; "cold:<arg>,<arg>": rotate copies of those
  // arguments only, the others stay warm (a weight the model reads from memory beside an
  // activation its producer has just written; core/inventory/cache_reuse).
  std::string cache_mode = "warm";
  std::size_t cold_footprint_bytes = 256u << 20;  // cold: input sets span at least this much
  std::string autocast;                           // "", "bf16" or "fp16": replay under autocast, as the model ran
};

// Thrown for anything the user can fix: unknown op, argument that does not fit the schema,
// shapes the op rejects, out of memory. The message names the op, the argument and the fix.
class ReplayError : public std::runtime_error {
 public:
  // What a caller can do differs by kind (predict's one-line fix), so it is typed, not read
  // back from the message.
  enum class Kind {
    kOther,              // the argument language, the schema's binding, a device or cache mode
    kUnknownOperator,    // no such operator is registered in this process
    kOutOfMemory,        // the inputs or the op's outputs do not fit the device or the host
    kArgumentsRejected,  // the op ran and refused the inputs made for it
  };
  explicit ReplayError(const std::string& what, Kind kind = Kind::kOther) : std::runtime_error(what), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

// What a prepared call is: the fields the measurement and the database record.
struct CallInfo {
  std::string op, overload;
  std::string canonical_args;  // schema order, defaults omitted
  std::string schema;
  std::string dtype;        // of the first floating tensor
  std::string device_kind;  // "cuda" or "cpu"
  std::string autocast;     // "" or the autocast dtype
  int device_index = 0;
  std::size_t input_sets = 1;       // in a cold mode: cold_input_sets (1 where no cold input holds a byte)
  std::string cache_mode = "warm";  // as applied: ReplayOptions::cache_mode
  std::size_t input_bytes = 0;      // of one input set
  std::string resolution_note;      // how the overload was chosen, when the call named none
};

// Something the measurement engine loops on: one operator replayed, or a whole model step.
class PreparedCall {
 public:
  virtual ~PreparedCall() = default;
  // Binds `call` to its schema, builds inputs on the device and runs the op once to check
  // that it accepts them.
  static std::unique_ptr<PreparedCall> prepare(const OpCall& call, const ReplayOptions& opt);
  // The same checks as prepare (operator, overload, argument names and types, sizes) without
  // making a tensor or running the op: cheap enough for every entry of a spec file up front.
  // Returns how the overload was chosen when the call named none (else ""); throws ReplayError.
  static std::string check(const OpCall& call, const ReplayOptions& opt);
  // The same checks, and what the call is: its canonical arguments, overload, schema and
  // autocast, as prepare() would record them (input_sets stays 1: no cold sets are made).
  static CallInfo identify(const OpCall& call, const ReplayOptions& opt);

  const CallInfo& info() const { return info_; }
  const std::string& op() const { return info_.op; }
  const std::string& overload() const { return info_.overload; }
  const std::string& canonical_args() const { return info_.canonical_args; }
  const std::string& schema() const { return info_.schema; }
  const std::string& dtype() const { return info_.dtype; }
  const std::string& device_kind() const { return info_.device_kind; }
  const std::string& autocast() const { return info_.autocast; }
  int device_index() const { return info_.device_index; }
  std::size_t input_sets() const { return info_.input_sets; }
  std::size_t input_bytes() const { return info_.input_bytes; }
  const std::string& resolution_note() const { return info_.resolution_note; }
  virtual void call() = 0;  // one call (asynchronous on CUDA); rotates input sets when cold
  // Makes one call: whether it returned only views of its inputs and wrote to none (view,
  // permute, expand): then it launches no kernel on any device (torch/device_work.h).
  virtual bool returns_views_only() { return false; }

 protected:
  CallInfo info_;
};

// Replays of kernels torch.compile generated (ops "compiled::<kernel>", core/inventory/
// compiled_kernel_name), which the dispatcher cannot make: a face that holds the kernels (Python,
// while it runs a model) registers a maker of their replays; PreparedCall::prepare asks it for
// such a call. Without one, such a call is refused with a ReplayError saying why. The maker
// throws ReplayError for a kernel it cannot make. Process-wide; empty to unregister.
using GeneratedKernelReplayer = std::function<std::unique_ptr<PreparedCall>(const OpCall&, const ReplayOptions&)>;
void set_generated_kernel_replayer(GeneratedKernelReplayer replayer);

// The fields a generated kernel's replay records, from what its maker knows: `dtype` of its
// first floating tensor, on `device_kind`:`device_index`, `input_bytes` a set of inputs.
CallInfo generated_kernel_info(const OpCall& call, const ReplayOptions& opt, const std::string& dtype,
                               const std::string& device_kind, int device_index, std::size_t input_bytes,
                               std::size_t input_sets);

// CUDA GPUs this process sees (0 without CUDA).
int cuda_device_count();

// LibTorch's CPU allocator failing ("[enforce fail at alloc_cpu.cpp:...] ... not enough memory:
// you tried to allocate N bytes"), said as the GPU's out-of-memory error says it: "out of host
// memory: an allocation of 37.3 GiB failed, 12.0 GiB available". nullopt for any other error.
std::optional<std::string> host_allocation_failure(std::string_view torch_text);

// An inventory's call as it would be replayed (the torch half of core/spec/signature.h, written
// by torch/canonical_form as the observer writes it): `args_text` (its signature's arguments) parsed,
// dry-bound to the schema of `op_name` ("aten::add.Tensor") on the CPU and written back in
// canonical form. A signature round-trips when this returns it unchanged. Throws ReplayError
// (the schema refuses it) or std::invalid_argument (the text does not parse).
std::string canonical_signature(const std::string& op_name, const std::string& args_text);

// Names of registered operators close to `name` (for "did you mean").
std::vector<std::string> similar_op_names(const std::string& name, std::size_t max = kMaxSuggestions);

}  // namespace opcost
