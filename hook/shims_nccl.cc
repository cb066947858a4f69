// Shims for the NCCL entries of hooked_functions.inc, and their table (shim_table.h).
// Nothing else belongs here.
#include "hook/interpose.h"
#include "hook/shim_table.h"

namespace format = ::xtimer::format;

#define NCCL_OP XT_GEN_NCCL_OP
#define NCCL_CUSTOM XT_GEN_CUSTOM
#include "hook/hooked_functions.inc"

namespace {
const ::xtimer::hook::ShimEntry kShims[] = {
#define NCCL_OP XT_SHIM_ENTRY
#define NCCL_CUSTOM XT_SHIM_ENTRY
#include "hook/hooked_functions.inc"
};
}  // namespace

::xtimer::hook::ShimTable xtimer::hook::NcclShims() {
  return {kShims, sizeof(kShims) / sizeof(kShims[0])};
}
