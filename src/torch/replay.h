#pragma once
// Replaying one ATen operator through the dispatcher, built from its registered schema.
// This header is torch-free so that the CLI and reports compile without LibTorch headers.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/spec/op_call.h"

namespace opcost {

struct ReplayOptions {
  std::string device = "auto";  // "auto" (CUDA when present), "cpu", "cuda", "cuda:N"
  uint64_t seed = 0;
  std::string cache_mode = "warm";          // "warm": one input set; "cold": rotate sets
  std::size_t cold_footprint_bytes = 256u << 20;  // cold: input sets span at least this much
  std::string autocast;  // "", "bf16" or "fp16": replay under autocast, as the model ran
};

// Thrown for anything the user can fix: unknown op, argument that does not fit the schema,
// shapes the op rejects, out of memory. The message names the op, the argument and the fix.
class ReplayError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class PreparedCall {
 public:
  virtual ~PreparedCall() = default;
  // Binds `call` to its schema, builds inputs on the device and runs the op once to check
  // that it accepts them.
  static std::unique_ptr<PreparedCall> prepare(const OpCall& call, const ReplayOptions& opt);

  virtual const std::string& op() const = 0;
  virtual const std::string& overload() const = 0;
  virtual const std::string& canonical_args() const = 0;  // schema order, defaults omitted
  virtual const std::string& schema() const = 0;
  virtual const std::string& dtype() const = 0;          // of the first floating tensor
  virtual const std::string& device_kind() const = 0;    // "cuda" or "cpu"
  virtual const std::string& autocast() const = 0;       // "" or the autocast dtype
  virtual int device_index() const = 0;
  virtual std::size_t input_sets() const = 0;             // > 1 in cold mode
  virtual std::size_t input_bytes() const = 0;            // of one input set
  virtual void call() = 0;  // one call (asynchronous on CUDA); rotates input sets when cold
};

// Names of registered operators close to `name` (for "did you mean").
std::vector<std::string> similar_op_names(const std::string& name, std::size_t max = 3);

}  // namespace opcost
