#pragma once
// Replaying under autocast, as the model ran (torch.autocast): the dtype a user names and the
// scope that switches autocast on for one call.
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

#include <optional>
#include <string>

namespace opcost {

// The autocast dtype a user names ("bf16", "fp16", "half"...); nullopt for "". Throws
// ReplayError for anything else.
std::optional<at::ScalarType> autocast_dtype(const std::string& name);

// Autocast to `dtype` (nullopt does nothing) on one device type for the scope's life, as
// torch.autocast does: ops on the autocast lists cast their inputs.
class AutocastScope {
 public:
  AutocastScope(std::optional<at::ScalarType> dtype, c10::DeviceType device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  c10::DeviceType device_;
  bool active_ = false, was_enabled_ = false;
  at::ScalarType was_dtype_ = at::kFloat;
};

}  // namespace opcost
