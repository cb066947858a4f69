#include "hook/driver_hooks.h"

#include "hook/real.h"
#include "hook/recorder.h"
#include "hook/shim_table.h"

namespace xtimer {
namespace hook {
namespace {

Real<decltype(&::cuFuncGetName)> g_func_get_name{"cuFuncGetName"};

// Handing out a shim needs none of the timing machinery (a shim starts the hook at its first
// call, or passes through); a process known to have timing off gets the vendor's functions.
// Never starts the hook: dlsym runs inside library constructors, under the loader's lock.
bool Active() { return g_mode.load(std::memory_order_acquire) != kOff; }

}  // namespace

bool DriverKernelTimed(CUfunction f, uint32_t* name_id) {
  KernelTable& kt = Kernels();
  if (!kt.filter_enabled() || f == nullptr) return false;
  const char* mangled = nullptr;
  auto get_name = g_func_get_name.get_optional();
  if (get_name == nullptr || get_name(&mangled, f) != CUDA_SUCCESS) mangled = nullptr;
  return kt.Classify(f, mangled, name_id);
}

void* ShimFor(const char* name, void* found) {
  if (found == nullptr || t_in_hook) return found;
  const ShimEntry* e = FindShim(name);
  if (e == nullptr || e->shim == found) return found;
  HookScope scope;
  ErrnoSaver saver;
  if (!Active()) return found;
  return e->real() == found ? e->shim : found;
}

CUresult OnGetProcAddress(decltype(&::cuGetProcAddress_v2) real, const char* symbol, void** pfn,
                          int version, cuuint64_t flags, CUdriverProcAddressQueryResult* status) {
  CUresult r = real(symbol, pfn, version, flags, status);
  if (r != CUDA_SUCCESS || pfn == nullptr || *pfn == nullptr || t_in_hook) return r;
  bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  const ShimEntry* e = FindDriverShim(symbol, per_thread);
  if (e == nullptr) return r;
  HookScope scope;
  ErrnoSaver saver;
  if (!Active()) return r;
  if (version != CUDA_VERSION) {
    // The real driver hands out internal entry points, not its exported symbols: compare what it
    // gives for our header's version instead (same function: same ABI as our shim's).
    void* ours = nullptr;
    if (real(symbol, &ours, CUDA_VERSION, flags, nullptr) != CUDA_SUCCESS || ours != *pfn) {
      return r;
    }
  }
  *pfn = e->shim;
  return r;
}

}  // namespace hook
}  // namespace xtimer
