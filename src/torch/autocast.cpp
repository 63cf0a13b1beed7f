#include "torch/autocast.h"

#include <ATen/autocast_mode.h>
#include <fmt/format.h>

#include "core/spec/arg_value.h"
#include "torch/dtype_codes.h"
#include "torch/replay.h"

namespace opcost {

std::optional<at::ScalarType> autocast_dtype(const std::string& name) {
  if (name.empty()) return std::nullopt;
  const auto code = canonical_dtype(name);
  if (!code || (*code != "bf16" && *code != "f16"))
    throw ReplayError(fmt::format("autocast dtype '{}' is not supported (use bf16 or fp16)", name));
  return scalar_type_of(*code);
}

AutocastScope::AutocastScope(std::optional<at::ScalarType> dtype, c10::DeviceType device) : device_(device) {
  if (!dtype) return;
  active_ = true;
  was_enabled_ = at::autocast::is_autocast_enabled(device_);
  was_dtype_ = at::autocast::get_autocast_dtype(device_);
  at::autocast::set_autocast_enabled(device_, true);
  at::autocast::set_autocast_dtype(device_, *dtype);
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  at::autocast::set_autocast_enabled(device_, was_enabled_);
  at::autocast::set_autocast_dtype(device_, was_dtype_);
  if (!was_enabled_) at::autocast::clear_cache();
}

}  // namespace opcost
