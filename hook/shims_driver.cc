// Shims for the CUDA driver entries of hooked_functions.inc, and their table (shim_table.h).
// Nothing else belongs here.
#include "hook/interpose.h"
#include "hook/shim_table.h"

namespace format = ::xtimer::format;

#define DRIVER_TIMED XT_GEN_DRIVER_TIMED
#define DRIVER_KERNEL XT_GEN_DRIVER_KERNEL
#define DRIVER_CUSTOM XT_GEN_DRIVER_CUSTOM
#include "hook/hooked_functions.inc"

namespace {
const ::xtimer::hook::ShimEntry kShims[] = {
#define DRIVER_TIMED XT_DRIVER_SHIM_ENTRY
#define DRIVER_KERNEL XT_DRIVER_SHIM_ENTRY
#define DRIVER_CUSTOM XT_DRIVER_SHIM_ENTRY
#include "hook/hooked_functions.inc"
};
}  // namespace

::xtimer::hook::ShimTable xtimer::hook::DriverShims() {
  return {kShims, sizeof(kShims) / sizeof(kShims[0])};
}
