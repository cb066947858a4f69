// Shims for the cuBLAS and cuBLASLt entries of hooked_functions.inc, and their table
// (shim_table.h). Nothing else belongs here.
#include "hook/interpose.h"
#include "hook/shim_table.h"

namespace format = ::xtimer::format;

#define CUBLAS_TIMED XT_GEN_TIMED
#include "hook/hooked_functions.inc"

namespace {
const ::xtimer::hook::ShimEntry kShims[] = {
#define CUBLAS_TIMED XT_SHIM_ENTRY
#include "hook/hooked_functions.inc"
};
}  // namespace

::xtimer::hook::ShimTable xtimer::hook::CublasShims() {
  return {kShims, sizeof(kShims) / sizeof(kShims[0])};
}
