#pragma once
// How much memory this process can still take on the host: the least of what the kernel
// reports available, what the cgroup allows, and what `ulimit -v` leaves. Torch-free.
#include <cstddef>
#include <optional>

namespace opcost {

// nullopt when nothing could be read (not Linux).
std::optional<std::size_t> available_host_memory_bytes();

}  // namespace opcost
