#pragma once
// Records every ATen call a piece of code makes, through a RecordFunction observer, and
// builds the inventory. Torch-free header.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/inventory/inventory.h"

namespace opcost {

struct ObserveOptions {
  // Attribute backward ops to the forward layer whose op created their autograd node
  // (sequence numbers). Costs a map insert per forward op, so only for --train.
  bool backward = false;
  // Layer of an op that runs outside any USER_SCOPE record (TorchScript's module hierarchy).
  std::function<std::string()> layer_source;
  // Record each call's inputs, for its signature. Without them calls carry their op name
  // only: for timing passes, which then cost far less (asking for inputs makes the
  // dispatcher box the arguments of every op, nested ones included).
  bool inputs = true;
  // Host times only: each outermost call's op name and host times, nothing about layers or
  // nested calls. RecordFunction is switched off on the thread while an outermost call runs,
  // so its nested calls (most of a step's dispatcher calls) cost the model nothing extra.
  // For the timing steps, whose calls are the signature step's.
  bool host_times_only = false;
  // Class each call's inputs as read from the GPU's L2 or from memory, against this capacity
  // (core/inventory/cache_reuse; InventoryEntry::cold_args). 0: not classed. Needs `inputs`,
  // and asks for every outermost call's outputs too.
  std::uint64_t cache_bytes = 0;
};

// Runs `body` once with the observer installed. The first call's host gap is the time from the
// start of `body`; `Inventory::host_after_last_call_us` the time after the last one. The outermost dispatcher call of
// each operation is the unit (aten::linear, not the aten::addmm inside it); records that are not dispatcher ops
// (autograd engine ranges, profiler ranges) are transparent. Inputs are summarised as dtype/shape/strides and scalars,
// and turned into canonical signatures after the run. The layer is the innermost USER_SCOPE record open at the call (""
// outside any); a backward op's layer is its forward op's. Ops on other threads (the autograd engine's device threads)
// are seen too.
Inventory observe(const std::function<void()>& body, const ObserveOptions& options = {});

// Opens a layer scope on this thread (a USER_SCOPE record, as a built-in module's forward
// opens) until the matching close_layer_scope(): for faces that cannot wrap a C++ scope
// around a module's forward, such as Python's module hooks. Cheap, and not a dispatcher op,
// so it never shows in an inventory. Scopes nest; a close without an open does nothing.
// Inside a backward node a scope keeps the node's layer (its forward op's), unless
// `names_backward_layer`: then its calls are that layer's backward calls (a kernel of a
// compiled backward graph, whose forward layer inductor's provenance knows). Outside a backward
// node the flag changes nothing.
void open_layer_scope(const std::string& name, bool names_backward_layer = false);
void close_layer_scope();

// A launch of a kernel that torch.compile generated, made visible to the observer: inductor's
// generated code calls its Triton and C++ kernels directly, past the dispatcher, so the faces
// (Python) open a record around each launch while a step is observed. The record is a FUNCTION
// record named "compiled::<kernel>.<source hash>" (core/inventory/compiled_kernel_name) whose
// inputs are the launch's arguments, each as its text in the argument language ("f32[4,32]",
// "128"); the observer takes it as an outermost call. `touches` are, for each tensor argument,
// its data's address, its bytes and its argument index (flat triples), so that the cache classing
// sees what the kernel reads and writes. Opened on this thread until the matching close;
// inactive (costing next to nothing) while no observer is installed.
void open_compiled_kernel_record(const std::string& record_name, const std::vector<std::string>& args,
                                 const std::vector<int64_t>& touches = {});
void close_compiled_kernel_record();

}  // namespace opcost
