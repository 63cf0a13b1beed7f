#include "torch/out_of_memory.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <charconv>
#include <cstdint>
#include <optional>

#include "core/sys/host_memory.h"
#include "core/text/text.h"
#include "torch/replay.h"

namespace opcost {

std::string first_line(std::string_view text) { return std::string(text.substr(0, text.find('\n'))); }

bool is_out_of_memory_text(std::string_view text) {
  for (const char* s : {"out of memory", "can't allocate memory", "not enough memory", "Cannot allocate memory"})
    if (text.find(s) != std::string_view::npos) return true;
  return false;
}

std::optional<std::string> host_allocation_failure(std::string_view text) {
  if (text.find("CPUAllocator") == std::string_view::npos || !is_out_of_memory_text(text)) return std::nullopt;
  std::string asked = "an allocation";
  constexpr std::string_view kTried = "tried to allocate ";
  if (const auto at = text.find(kTried); at != std::string_view::npos) {
    std::uint64_t bytes = 0;
    const char* start = text.data() + at + kTried.size();
    if (const auto [end, ec] = std::from_chars(start, text.data() + text.size(), bytes); ec == std::errc())
      asked = fmt::format("an allocation of {}", format_bytes(double(bytes)));
  }
  const auto free = available_host_memory_bytes();
  // A limit on the process's address space (ulimit -v) fails allocations the memory could hold.
  rlimit limit{};
  const bool limited = getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY;
  return fmt::format("out of host memory: {} failed{}{}", asked,
                     free ? fmt::format(", {} available", format_bytes(double(*free))) : "",
                     limited ? fmt::format(" (and this process may map at most {} in all: ulimit -v)",
                                           format_bytes(double(limit.rlim_cur)))
                             : "");
}

std::string out_of_memory_message(const std::string& label, c10::Device device, std::size_t input_bytes,
                                  std::string_view torch_text) {
  std::string free;
  if (device.is_cpu())
    if (auto bytes = available_host_memory_bytes()) free = fmt::format(", {} available", format_bytes(double(*bytes)));
  return fmt::format("{}: out of memory on {} (inputs {}{}; {}); use smaller shapes{}", label, device.str(),
                     format_bytes(double(input_bytes)), free, first_line(torch_text),
                     device.is_cuda() ? ", or free the GPU's memory" : "");
}

}  // namespace opcost
