#pragma once
// The L2 cache size of a CUDA device, from the driver (libcuda, loaded at run time with
// dlopen: no build or link dependency, as for NVML). Torch-free.
#include <cstdint>
#include <optional>
#include <string>

namespace opcost {

// Bytes of L2 on the CUDA device of this ordinal (as CUDA numbers the visible devices);
// nullopt, with `why` set, where the driver cannot say.
std::optional<std::uint64_t> cuda_l2_cache_bytes(int ordinal, std::string* why = nullptr);

}  // namespace opcost
