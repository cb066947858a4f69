// pydemo_nvtx: NVTX v3 push/pop ranges for Python, loaded with ctypes.CDLL as the other modules of
// demo/python are. NVTX v3 is header-only (nvtx3/nvToolsExt.h from the CUDA toolkit): the first
// call looks up an injection library in NVTX_INJECTION64_PATH (xtimer-launch sets it to
// libxtimer.so) and forwards every later call to it; without one the calls do nothing. This is
// what torch.cuda.nvtx.range_push/range_pop do. See docs/demo.md.
#include <nvtx3/nvToolsExt.h>

#include "demo/python/pydemo_status.h"

// The demo's modules share this ABI (pydemo.Library); NVTX calls cannot fail.
PYDEMO_API const char* pydemo_nvtx_last_error() { return pydemo::last_error; }

// nvtxRangePushA's result: the level of the new range (0 for the outermost), or a negative
// value when no tool is attached.
PYDEMO_API int pydemo_nvtx_push(const char* message) { return nvtxRangePushA(message); }

// nvtxRangePop's result: the level of the range ended, or negative.
PYDEMO_API int pydemo_nvtx_pop() { return nvtxRangePop(); }
