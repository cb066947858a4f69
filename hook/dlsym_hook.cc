// The C side of the dlsym interposer (dlsym_trampoline.S).
#include "hook/driver_hooks.h"
#include "hook/resolve.h"

// dlsym(handle, name) for a library handle: the real lookup, then our shim when the result is
// the vendor function one of our shims wraps.
extern "C" __attribute__((visibility("hidden"))) void* xtimer_dlsym_on_handle(void* handle,
                                                                               const char* name) {
  return xtimer::hook::ShimFor(name, xtimer::hook::RealDlsym(handle, name));
}
