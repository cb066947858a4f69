// What the hook does for the paths that reach CUDA without binding an interposed symbol:
// kernels launched through the driver (named by cuFuncGetName), entry points asked of
// cuGetProcAddress, and functions asked of dlsym on a library handle. Both hand out our shim in
// place of the vendor's function, so that the operation is timed like a call by symbol.
#ifndef XTIMER_HOOK_DRIVER_HOOKS_H_
#define XTIMER_HOOK_DRIVER_HOOKS_H_

#include <cuda.h>

#include <cstdint>

namespace xtimer {
namespace hook {

// Kernel launches through the driver, cold path: whether the kernel `f` is timed (every kernel,
// or XTIMER_KERNEL_FILTER's, matched against the demangled cuFuncGetName), with its name id;
// caches the answer for `f`. The driver has no last-error state, so asking cannot disturb the
// application's.
bool DriverKernelTimed(CUfunction f, uint32_t* name_id);

// The shim to hand out for `name` when a lookup found `found`: our shim when `found` is the very
// function that shim calls (the same library's definition), else `found` unchanged.
void* ShimFor(const char* name, void* found);

// cuGetProcAddress: the real lookup, then, for a hooked entry point whose ABI at `version` is the
// one our shim has (the driver gives the same function for `version` and for the CUDA version
// the hook is built against), our shim. Calls made by the hook or the vendor libraries inside a
// hook (t_in_hook) get the driver's own function.
CUresult OnGetProcAddress(decltype(&::cuGetProcAddress_v2) real, const char* symbol, void** pfn,
                          int version, cuuint64_t flags, CUdriverProcAddressQueryResult* status);

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_DRIVER_HOOKS_H_
