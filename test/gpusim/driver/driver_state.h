// State shared by the driver API entry points of the simulated libcuda.so.1: initialization,
// contexts, the calling thread's context stack, handle validation, and the mapping of the
// engine's (runtime-numbered) errors to CUresult. The GPU itself is the engine
// (test/gpusim/cudart/engine.h), shared with the simulated runtime.
#ifndef XTIMER_TEST_GPUSIM_DRIVER_DRIVER_STATE_H_
#define XTIMER_TEST_GPUSIM_DRIVER_DRIVER_STATE_H_

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "test/gpusim/cudart/engine.h"
#include "test/gpusim/cudart/kernels.h"

struct CUctx_st {
  int device = 0;
  bool primary = false;
  unsigned flags = 0;
};

struct CUmod_st {
  std::vector<const xtsim::KernelInfo*> functions;
};

namespace xtsim {
namespace driver {

// The engine's errors use the runtime's numbering; the errors the two APIs share have the same
// values (cudaErrorInvalidValue = CUDA_ERROR_INVALID_VALUE = 1, ..., NotReady = 600).
CUresult FromRuntime(cudaError_t e);

// Every entry point but cuInit, cuDriverGetVersion and cuGetErrorName/String starts here:
// CUDA_ERROR_NOT_INITIALIZED before cuInit ("If cuInit() has not been called, any function from
// the driver API will return CUDA_ERROR_NOT_INITIALIZED", cuda.h, cuInit) and in a child forked
// after CUDA was initialized (as the simulated runtime).
CUresult CheckInit();
void MarkInitialized();

// The primary context of `device` (one per device, for the life of the process).
CUctx_st* PrimaryContext(int device);
// Whether `ctx` is a live context (primary, or created and not destroyed).
bool ValidContext(CUctx_st* ctx);
CUctx_st* NewContext(int device, unsigned flags);
bool DestroyContext(CUctx_st* ctx);

// The calling thread's context stack (top = current).
std::vector<CUctx_st*>& ContextStack();
// Makes the top of the stack current for the engine (its device is the thread's device).
void SyncCurrentDevice();
// CheckInit, then the current context: CUDA_ERROR_INVALID_CONTEXT when the thread has none.
CUresult Current(CUctx_st** ctx);
// CheckInit, a current context, then the stream (0: the legacy stream, or the per-thread one
// for the _ptsz / _ptds entry points).
CUresult ResolveStream(CUstream stream, bool per_thread, Stream** out);

// cuFuncGetName, cuLaunchKernel: the function when `f` belongs to a loaded module.
const KernelInfo* FindFunction(CUfunction f);
void AddModule(CUmod_st* module);
bool RemoveModule(CUmod_st* module);

}  // namespace driver
}  // namespace xtsim

// Declares and defines a driver entry point and its per-thread default stream twin (name_ptsz /
// name_ptds, as the real library exports them): the twin treats stream 0 as CU_STREAM_PER_THREAD.
#define XTSIM_CU_STREAM_API(name, twin, params, impl_default, impl_pt) \
  extern "C" CUresult twin params;                                      \
  extern "C" CUresult name params { return impl_default; }             \
  extern "C" CUresult twin params { return impl_pt; }

#endif  // XTIMER_TEST_GPUSIM_DRIVER_DRIVER_STATE_H_
