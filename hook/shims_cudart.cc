// Shims for the CUDA runtime entries of hooked_functions.inc, and their table (shim_table.h).
// Nothing else belongs here.
#include "hook/interpose.h"
#include "hook/shim_table.h"

namespace format = ::xtimer::format;
using ::xtimer::hook::Kernels;

#define CUDART_TIMED XT_GEN_TIMED
#define CUDART_KERNEL XT_GEN_KERNEL
#define CUDART_SYNC XT_GEN_SYNC
#define CUDART_CUSTOM XT_GEN_CUSTOM
#include "hook/hooked_functions.inc"

namespace {
const ::xtimer::hook::ShimEntry kShims[] = {
#define CUDART_TIMED XT_SHIM_ENTRY
#define CUDART_KERNEL XT_SHIM_ENTRY
#define CUDART_SYNC XT_SHIM_ENTRY
#define CUDART_CUSTOM XT_SHIM_ENTRY
#include "hook/hooked_functions.inc"
};
}  // namespace

::xtimer::hook::ShimTable xtimer::hook::CudartShims() {
  return {kShims, sizeof(kShims) / sizeof(kShims[0])};
}
