#include "core/sys/cuda_cache.h"

#include <dlfcn.h>
#include <fmt/format.h>

namespace opcost {

namespace {
// The driver API's own types and constants (cuda.h), declared here so that nothing needs the
// toolkit's headers.
using CUresult = int;
using CUdevice = int;
constexpr int kL2CacheSizeAttribute = 38;  // CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE
}  // namespace

std::optional<std::uint64_t> cuda_l2_cache_bytes(int ordinal, std::string* why) {
  auto fail = [&](std::string text) -> std::optional<std::uint64_t> {
    if (why) *why = std::move(text);
    return std::nullopt;
  };
  // Never closed: the CUDA runtime in this process holds the same library open anyway.
  static void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return fail("the CUDA driver (libcuda.so.1) could not be loaded");
  auto init = reinterpret_cast<CUresult (*)(unsigned)>(dlsym(lib, "cuInit"));
  auto get = reinterpret_cast<CUresult (*)(CUdevice*, int)>(dlsym(lib, "cuDeviceGet"));
  auto attribute = reinterpret_cast<CUresult (*)(int*, int, CUdevice)>(dlsym(lib, "cuDeviceGetAttribute"));
  if (!init || !get || !attribute) return fail("the CUDA driver lacks cuDeviceGetAttribute");
  CUdevice device = 0;
  int bytes = 0;
  if (CUresult r = init(0)) return fail(fmt::format("cuInit failed (CUresult {})", r));
  if (CUresult r = get(&device, ordinal)) return fail(fmt::format("no CUDA device {} (CUresult {})", ordinal, r));
  if (CUresult r = attribute(&bytes, kL2CacheSizeAttribute, device))
    return fail(fmt::format("the L2 size of CUDA device {} is unknown (CUresult {})", ordinal, r));
  if (bytes <= 0) return fail(fmt::format("CUDA device {} reports no L2", ordinal));
  return std::uint64_t(bytes);
}

}  // namespace opcost
