// An NVTX injection library for tests: what nsys is to a program using NVTX, without nsys.
// Loaded through NVTX_INJECTION64_PATH, it writes every range pushed ("push NAME") and popped
// ("pop") to the file named by OPCOST_NVTX_LOG, so a test can check what `--nvtx` emits.
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace {

std::FILE* g_log = nullptr;
std::mutex g_mutex;

int push(const char* name) {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fprintf(g_log, "push %s\n", name);
  return 0;
}
int pop() {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fprintf(g_log, "pop\n");
  return 0;
}

}  // namespace

extern "C" int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  const char* path = std::getenv("OPCOST_NVTX_LOG");
  if (!path || !(g_log = std::fopen(path, "w"))) return 0;
  std::setvbuf(g_log, nullptr, _IOLBF, 0);
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!callbacks || !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size)) return 0;
  *table[NVTX_CBID_CORE_RangePushA] = reinterpret_cast<NvtxFunctionPointer>(&push);
  *table[NVTX_CBID_CORE_RangePop] = reinterpret_cast<NvtxFunctionPointer>(&pop);
  return 1;
}
