// Every exported shim by name, for the paths that hand out function pointers instead of binding
// symbols: dlsym on a library handle (dlsym_hook.cc) and cuGetProcAddress (driver_hooks.cc).
// Each shims_*.cc builds its table from hooked_functions.inc.
#ifndef XTIMER_HOOK_SHIM_TABLE_H_
#define XTIMER_HOOK_SHIM_TABLE_H_

#include <cstddef>

namespace xtimer {
namespace hook {

struct ShimEntry {
  const char* name;  // the exported name ("cuMemcpyHtoDAsync_v2")
  const char* base;  // driver entries: the name cuGetProcAddress is asked for; else nullptr
  bool per_thread;   // driver entries: the _ptsz / _ptds variant of `base`
  void* shim;        // our exported definition
  void* (*real)();   // the vendor's definition as the shim resolves it (null while unresolved)
};

struct ShimTable {
  const ShimEntry* entries;
  size_t count;
};

// One per shims file.
ShimTable CudartShims();
ShimTable CublasShims();
ShimTable NcclShims();
ShimTable DriverShims();

// The shim exported as `name`, or nullptr. Cold (a linear search over the few hundred names).
const ShimEntry* FindShim(const char* name);
// The driver shim for the entry point `base` (its per-thread default stream variant when
// `per_thread`), or nullptr.
const ShimEntry* FindDriverShim(const char* base, bool per_thread);

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_SHIM_TABLE_H_
