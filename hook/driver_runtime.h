// The runtime functions the hook uses for its own timing (CudartCore, cuda_api.h), made of the
// driver API, for processes that have no dynamic CUDA runtime: CuPy links the runtime statically
// and JAX or Triton may reach the GPU through the driver alone. Driver events are the runtime's
// events, and driver streams its streams, so the recorder and the poller work unchanged.
//
// How the runtime's semantics map:
//   - Last error: the driver keeps none (every call returns its status), so peek and get
//     answer cudaSuccess and the hook never has an application error to step around.
//   - Devices: a device is current through a context. get_device is cuCtxGetDevice of the
//     thread's current context, and remembers that context as the device's (the first seen);
//     set_device makes the remembered context current (cuCtxSetCurrent). The poller thus only
//     ever uses contexts the application made, and never creates one (cuDevicePrimaryCtxRetain
//     would). A device whose context the application never made current on a timed call cannot
//     be set. A process that uses several contexts on one device has its ops on the other
//     contexts untimed (events belong to the context that made them).
//   - Events, streams, capture status and the thread's capture mode map one to one
//     (cuEventCreate/Record/Query/Synchronize/ElapsedTime, cuStreamCreate,
//     cuStreamIsCapturing, cuThreadExchangeStreamCaptureMode; the flags and enumerators have
//     the same values), and a CUresult becomes the cudaError_t of the same number.
#ifndef XTIMER_HOOK_DRIVER_RUNTIME_H_
#define XTIMER_HOOK_DRIVER_RUNTIME_H_

#include "hook/cuda_api.h"

namespace xtimer {
namespace hook {

// Fills `core` with the adapters when a loaded libcuda defines every driver function they need;
// false (and `core` untouched) otherwise. Cold.
bool FillFromDriver(CudartCore* core);

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_DRIVER_RUNTIME_H_
