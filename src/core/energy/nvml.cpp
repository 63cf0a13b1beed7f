#include "core/energy/nvml.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace opcost {

namespace throttle {
std::string describe(uint64_t r) {
  static const std::pair<uint64_t, const char*> names[] = {
      {kGpuIdle, "gpu_idle"},       {kAppClocks, "app_clocks"},        {kSwPowerCap, "sw_power_cap"},
      {kHwSlowdown, "hw_slowdown"}, {kSyncBoost, "sync_boost"},        {kSwThermal, "sw_thermal"},
      {kHwThermal, "hw_thermal"},   {kHwPowerBrake, "hw_power_brake"}, {kDisplayClocks, "display_clocks"}};
  std::string out;
  for (auto [bit, name] : names)
    if (r & bit) out += (out.empty() ? "" : ",") + std::string(name);
  return out.empty() ? "none" : out;
}
}  // namespace throttle

namespace {
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
constexpr nvmlReturn_t kSuccess = 0, kInsufficientSize = 7;
constexpr unsigned kFieldPowerInstant = 186;

// nvmlFieldValue_t: 40 bytes on LP64 (checked against nvml.h on the H100 machine).
struct FieldValue {
  unsigned fieldId;
  unsigned scopeId;
  long long timestamp;
  long long latencyUsec;
  int valueType;
  int nvmlReturn;
  union {
    double d;
    unsigned ui;
    unsigned long ul;
    unsigned long long ull;
    long long sll;
  } value;
};
static_assert(sizeof(FieldValue) == 40);

// nvmlProcessInfo_t (v2/v3 share the leading fields we read).
struct ProcessInfoV3 {
  unsigned pid;
  unsigned long long usedGpuMemory;
  unsigned gpuInstanceId;
  unsigned computeInstanceId;
  unsigned long long usedGpuCcProtectedMemory;
};
struct ProcessInfoV2 {
  unsigned pid;
  unsigned long long usedGpuMemory;
  unsigned gpuInstanceId;
  unsigned computeInstanceId;
};
}  // namespace

struct NvmlApi {
  void* lib = nullptr;
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*device_count)(unsigned*) = nullptr;
  nvmlReturn_t (*handle_by_index)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*handle_by_uuid)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*energy)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*field_values)(nvmlDevice_t, int, FieldValue*) = nullptr;
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*throttle)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*processes_v3)(nvmlDevice_t, unsigned*, ProcessInfoV3*) = nullptr;
  nvmlReturn_t (*processes_v2)(nvmlDevice_t, unsigned*, ProcessInfoV2*) = nullptr;
  nvmlReturn_t (*driver_version)(char*, unsigned) = nullptr;
  nvmlReturn_t (*cuda_driver_version)(int*) = nullptr;

  ~NvmlApi() {
    if (shutdown) shutdown();
    if (lib) dlclose(lib);
  }
};

namespace {
template <typename F>
void resolve(void* lib, F& fn, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (void* p = dlsym(lib, n)) {
      fn = reinterpret_cast<F>(p);
      return;
    }
  }
}
}  // namespace

Nvml::Nvml(const std::string& library) {
  auto api = std::make_shared<NvmlApi>();
  api->lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!api->lib) {
    const char* err = dlerror();
    reason_ = fmt::format("NVML not loaded: {} (no NVIDIA driver on this machine?)", err ? err : library);
    return;
  }
  void* l = api->lib;
  resolve(l, api->init, {"nvmlInit_v2", "nvmlInit"});
  resolve(l, api->shutdown, {"nvmlShutdown"});
  resolve(l, api->error_string, {"nvmlErrorString"});
  resolve(l, api->device_count, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"});
  resolve(l, api->handle_by_index, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"});
  resolve(l, api->handle_by_uuid, {"nvmlDeviceGetHandleByUUID"});
  resolve(l, api->name, {"nvmlDeviceGetName"});
  resolve(l, api->uuid, {"nvmlDeviceGetUUID"});
  resolve(l, api->energy, {"nvmlDeviceGetTotalEnergyConsumption"});
  resolve(l, api->power, {"nvmlDeviceGetPowerUsage"});
  resolve(l, api->field_values, {"nvmlDeviceGetFieldValues"});
  resolve(l, api->clock, {"nvmlDeviceGetClockInfo"});
  resolve(l, api->temperature, {"nvmlDeviceGetTemperature"});
  resolve(l, api->power_limit, {"nvmlDeviceGetPowerManagementLimit"});
  resolve(l, api->throttle, {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"});
  resolve(l, api->processes_v3, {"nvmlDeviceGetComputeRunningProcesses_v3"});
  resolve(l, api->processes_v2, {"nvmlDeviceGetComputeRunningProcesses_v2"});
  resolve(l, api->driver_version, {"nvmlSystemGetDriverVersion"});
  resolve(l, api->cuda_driver_version, {"nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"});
  if (!api->init || !api->device_count || !api->handle_by_index) {
    reason_ = fmt::format("{} lacks nvmlInit/nvmlDeviceGetCount/nvmlDeviceGetHandleByIndex", library);
    return;
  }
  const nvmlReturn_t rc = api->init();
  if (rc != kSuccess) {
    api->shutdown = nullptr;  // never initialised: do not shut down
    reason_ = fmt::format("nvmlInit failed: {} (code {})", api->error_string ? api->error_string(rc) : "?", rc);
    return;
  }
  api_ = std::move(api);
}

const Nvml& Nvml::instance() {
  static const Nvml nvml([] {
    const char* lib = std::getenv("OPCOST_NVML_LIBRARY");
    return std::string(lib && *lib ? lib : "libnvidia-ml.so.1");
  }());
  return nvml;
}

unsigned Nvml::device_count() const {
  unsigned n = 0;
  if (!api_ || api_->device_count(&n) != kSuccess) return 0;
  return n;
}

std::optional<std::string> Nvml::driver_version() const {
  char buf[96] = {};
  if (!api_ || !api_->driver_version || api_->driver_version(buf, sizeof buf) != kSuccess) return std::nullopt;
  return std::string(buf);
}

std::optional<std::string> Nvml::cuda_driver_version() const {
  int v = 0;
  if (!api_ || !api_->cuda_driver_version || api_->cuda_driver_version(&v) != kSuccess) return std::nullopt;
  return fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
}

std::optional<NvmlDevice> Nvml::device_for_cuda_ordinal(int ordinal) const {
  if (!api_ || ordinal < 0) return std::nullopt;
  // CUDA numbers only the visible devices; map through CUDA_VISIBLE_DEVICES when it is set.
  std::string entry = std::to_string(ordinal);
  if (const char* vis = std::getenv("CUDA_VISIBLE_DEVICES"); vis && *vis) {
    std::vector<std::string> items;
    std::string cur;
    for (const char* p = vis;; ++p) {
      if (*p == ',' || *p == '\0') {
        items.push_back(cur);
        cur.clear();
        if (!*p) break;
      } else if (*p != ' ') {
        cur += *p;
      }
    }
    if (ordinal >= int(items.size())) return std::nullopt;
    entry = items[ordinal];
  }
  nvmlDevice_t h = nullptr;
  if (!entry.empty() && std::isdigit(static_cast<unsigned char>(entry[0]))) {
    if (api_->handle_by_index(unsigned(std::stoul(entry)), &h) != kSuccess) return std::nullopt;
  } else if (api_->handle_by_uuid) {
    if (api_->handle_by_uuid(entry.c_str(), &h) != kSuccess) return std::nullopt;
  } else {
    return std::nullopt;
  }
  return NvmlDevice(api_, h);
}

std::optional<std::string> NvmlDevice::name() const {
  char buf[96] = {};
  if (!api_->name || api_->name(h_, buf, sizeof buf) != kSuccess) return std::nullopt;
  return std::string(buf);
}

std::optional<std::string> NvmlDevice::uuid() const {
  char buf[96] = {};
  if (!api_->uuid || api_->uuid(h_, buf, sizeof buf) != kSuccess) return std::nullopt;
  return std::string(buf);
}

std::optional<uint64_t> NvmlDevice::total_energy_mJ() const {
  unsigned long long mj = 0;
  if (!api_->energy || api_->energy(h_, &mj) != kSuccess) return std::nullopt;
  return mj;
}

std::optional<double> NvmlDevice::power_W() const {
  unsigned mw = 0;
  if (!api_->power || api_->power(h_, &mw) != kSuccess) return std::nullopt;
  return mw / 1000.0;
}

std::optional<double> NvmlDevice::instant_power_W() const {
  if (!api_->field_values) return std::nullopt;
  FieldValue fv{};
  fv.fieldId = kFieldPowerInstant;
  if (api_->field_values(h_, 1, &fv) != kSuccess || fv.nvmlReturn != kSuccess) return std::nullopt;
  return fv.value.ui / 1000.0;  // unsigned int, mW
}

std::optional<unsigned> NvmlDevice::sm_clock_MHz() const {
  unsigned v = 0;
  if (!api_->clock || api_->clock(h_, /*NVML_CLOCK_SM*/ 1, &v) != kSuccess) return std::nullopt;
  return v;
}

std::optional<unsigned> NvmlDevice::mem_clock_MHz() const {
  unsigned v = 0;
  if (!api_->clock || api_->clock(h_, /*NVML_CLOCK_MEM*/ 2, &v) != kSuccess) return std::nullopt;
  return v;
}

std::optional<unsigned> NvmlDevice::temperature_C() const {
  unsigned v = 0;
  if (!api_->temperature || api_->temperature(h_, /*NVML_TEMPERATURE_GPU*/ 0, &v) != kSuccess) return std::nullopt;
  return v;
}

std::optional<double> NvmlDevice::power_limit_W() const {
  unsigned mw = 0;
  if (!api_->power_limit || api_->power_limit(h_, &mw) != kSuccess) return std::nullopt;
  return mw / 1000.0;
}

std::optional<uint64_t> NvmlDevice::throttle_reasons() const {
  unsigned long long r = 0;
  if (!api_->throttle || api_->throttle(h_, &r) != kSuccess) return std::nullopt;
  return r;
}

std::optional<std::vector<unsigned>> NvmlDevice::other_processes(unsigned self_pid) const {
  std::vector<unsigned> pids;
  auto collect = [&](auto fn, auto tag) -> bool {
    using Info = decltype(tag);
    std::vector<Info> infos(64);
    unsigned n = unsigned(infos.size());
    const nvmlReturn_t rc = fn(h_, &n, infos.data());
    if (rc != kSuccess && rc != kInsufficientSize) return false;
    for (unsigned i = 0; i < n && i < infos.size(); ++i)
      if (infos[i].pid != self_pid) pids.push_back(infos[i].pid);
    return true;
  };
  if (api_->processes_v3 && collect(api_->processes_v3, ProcessInfoV3{})) return pids;
  if (api_->processes_v2 && collect(api_->processes_v2, ProcessInfoV2{})) return pids;
  return std::nullopt;
}

}  // namespace opcost
