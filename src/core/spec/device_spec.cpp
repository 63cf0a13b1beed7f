#include "core/spec/device_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <stdexcept>

#include "core/text/text.h"

namespace opcost {

DeviceSpec parse_device_spec(std::string_view text, std::string_view where) {
  if (text == "auto") return DeviceSpec::automatic();
  if (text == "cpu") return DeviceSpec::cpu();
  if (text == "cuda") return DeviceSpec::cuda();
  if (text.starts_with("cuda:")) {
    const std::string_view digits = text.substr(5);
    int index = -1;
    // One spelling per index (no leading zero), so that to_string gives the text back.
    const bool all_digits =
        !digits.empty() && digits.size() <= 3 && (digits.size() == 1 || digits[0] != '0') &&
        std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (all_digits) std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (index >= 0 && index <= kMaxCudaIndex) return DeviceSpec::cuda(index);
  }
  const std::string what =
      fmt::format("unknown device '{}' (use auto, cpu, cuda or cuda:N)", printable_one_line(text, 60));
  throw std::invalid_argument(where.empty() ? what : fmt::format("{}: {}", where, what));
}

std::string to_string(const DeviceSpec& device) {
  switch (device.kind) {
    case DeviceSpec::Kind::automatic:
      return "auto";
    case DeviceSpec::Kind::cpu:
      return "cpu";
    case DeviceSpec::Kind::cuda:
      break;
  }
  return device.index ? fmt::format("cuda:{}", *device.index) : "cuda";
}

std::string device_kind_name(const DeviceSpec& device) {
  return device.is_cuda() ? "cuda" : to_string(device);  // cuda:N's kind is "cuda"
}

}  // namespace opcost
