#pragma once
// The device a user asks to measure on ("auto", "cpu", "cuda", "cuda:N"), parsed once, so that
// code asks is_cuda() instead of comparing strings. Torch-free: what "auto" resolves to (CUDA
// when a GPU is present) is the torch layer's (torch/bind.h resolve_device).
#include <optional>
#include <string>
#include <string_view>

namespace opcost {

struct DeviceSpec {
  enum class Kind { automatic, cpu, cuda };
  Kind kind = Kind::automatic;
  std::optional<int> index;  // cuda:N; nullopt for "cuda" (the first GPU) and the others

  static DeviceSpec automatic() { return {}; }
  static DeviceSpec cpu() { return {Kind::cpu, std::nullopt}; }
  static DeviceSpec cuda(std::optional<int> index = std::nullopt) { return {Kind::cuda, index}; }

  bool is_auto() const { return kind == Kind::automatic; }
  bool is_cpu() const { return kind == Kind::cpu; }
  bool is_cuda() const { return kind == Kind::cuda; }  // "cuda" or "cuda:N" (not "auto")
  bool operator==(const DeviceSpec&) const = default;
};

// Highest N accepted in "cuda:N" (LibTorch's device index is 8 bits, signed).
inline constexpr int kMaxCudaIndex = 127;

// Parses "auto", "cpu", "cuda" or "cuda:N". Throws std::invalid_argument, one line:
// "unknown device '<text>' (use auto, cpu, cuda or cuda:N)", prefixed by "<where>: " when given.
DeviceSpec parse_device_spec(std::string_view text, std::string_view where = {});

// "auto", "cpu", "cuda" or "cuda:N": parse_device_spec reads it back as the same spec.
std::string to_string(const DeviceSpec& device);

// The kind a resolved device records ("cuda" or "cpu", as Measurement::env.device_kind and
// CallInfo::device_kind are written); "auto" has no kind until resolved, and prints "auto".
std::string device_kind_name(const DeviceSpec& device);

}  // namespace opcost
