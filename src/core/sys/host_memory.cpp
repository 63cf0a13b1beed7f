#include "core/sys/host_memory.h"

#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <string>

namespace opcost {

namespace {

// The value of `key` (in kB) in a /proc file of "Key:   123 kB" lines.
std::optional<std::size_t> proc_kb(const char* path, const std::string& key) {
  std::ifstream in(path);
  std::string name;
  std::size_t kb = 0;
  std::string unit;
  while (in >> name >> kb) {
    std::getline(in, unit);
    if (name == key + ":") return kb * 1024;
  }
  return std::nullopt;
}

std::optional<std::size_t> read_number(const char* path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return std::nullopt;
  try {
    return std::stoull(text);
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace

std::optional<std::size_t> available_host_memory_bytes() {
  std::optional<std::size_t> best = proc_kb("/proc/meminfo", "MemAvailable");
  auto take = [&](std::size_t v) { best = std::min(best.value_or(v), v); };
  // cgroup v2, then v1: the container's own limit.
  for (auto [limit_path, usage_path] :
       {std::pair{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
        std::pair{"/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"}}) {
    const auto limit = read_number(limit_path), usage = read_number(usage_path);
    if (limit && usage && *limit < (std::size_t(1) << 60)) {
      take(*limit > *usage ? *limit - *usage : 0);
      break;
    }
  }
  // ulimit -v: the address space left.
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    const std::size_t used = proc_kb("/proc/self/status", "VmSize").value_or(0);
    take(as.rlim_cur > used ? as.rlim_cur - used : 0);
  }
  return best;
}

}  // namespace opcost
