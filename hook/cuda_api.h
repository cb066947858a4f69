// Every vendor call the recorder and the poller make for their own work (not the application's)
// goes through this table. The runtime's functions are resolved together, once libcudart is
// found (resolve.h: global scope or a local one); until then nothing is timed. cuBLAS, cuBLASLt
// and NCCL functions are resolved at their first use, since those libraries often arrive late.
#ifndef XTIMER_HOOK_CUDA_API_H_
#define XTIMER_HOOK_CUDA_API_H_

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <atomic>

#include "hook/real.h"

namespace xtimer {
namespace hook {

// The runtime functions the hook needs for its own work: every one of these is set once
// CudartReady() has returned true. In a process without a CUDA runtime (CuPy links it
// statically), they are adapters over the driver (driver_runtime.h).
struct CudartCore {
#define XT_CUDART_CORE(X)                                                            \
  X(peek_at_last_error, cudaPeekAtLastError) X(get_last_error, cudaGetLastError)     \
  X(stream_is_capturing, cudaStreamIsCapturing) X(get_device, cudaGetDevice)         \
  X(set_device, cudaSetDevice) X(event_create_with_flags, cudaEventCreateWithFlags)  \
  X(event_record, cudaEventRecord) X(event_query, cudaEventQuery)                    \
  X(event_synchronize, cudaEventSynchronize)                                         \
  X(event_elapsed_time, cudaEventElapsedTime)                                        \
  X(stream_create_with_flags, cudaStreamCreateWithFlags)                             \
  X(exchange_capture_mode, cudaThreadExchangeStreamCaptureMode)
#define XT_CUDART_FIELD(field, fn) decltype(&::fn) field = nullptr;
  XT_CUDART_CORE(XT_CUDART_FIELD)
#undef XT_CUDART_FIELD
};

struct CudaApi : CudartCore {
  // Resolved at first use; null when absent (older runtimes lack cudaFuncGetName, and cuBLAS,
  // cuBLASLt and NCCL may not be loaded yet).
  Real<decltype(&::cudaFuncGetName)> func_get_name{"cudaFuncGetName"};
  // CUDA 12.8 and later: the device a stream belongs to (host syncs of one thread driving
  // several devices are recorded on the stream's device).
  Real<decltype(&::cudaStreamGetDevice)> stream_get_device{"cudaStreamGetDevice"};
  Real<decltype(&::cublasGetStream_v2)> cublas_get_stream{"cublasGetStream_v2"};
  Real<decltype(&::cublasGetMathMode)> cublas_get_math_mode{"cublasGetMathMode"};
  Real<decltype(&::cublasLtMatmulDescGetAttribute)> lt_desc_get_attribute{
      "cublasLtMatmulDescGetAttribute"};
  Real<decltype(&::cublasLtMatrixLayoutGetAttribute)> lt_layout_get_attribute{
      "cublasLtMatrixLayoutGetAttribute"};
  Real<decltype(&::ncclCommUserRank)> nccl_comm_user_rank{"ncclCommUserRank"};
  Real<decltype(&::ncclCommCount)> nccl_comm_count{"ncclCommCount"};
  Real<decltype(&::ncclCommCuDevice)> nccl_comm_cu_device{"ncclCommCuDevice"};
};

// Sets the calling thread's stream-capture interaction mode for the life of the object and
// restores the previous one. A thread of the hook's in cudaStreamCaptureModeRelaxed may query and
// synchronize its own events while any thread captures: in the default global mode such a call
// from any thread invalidates an application's global-mode capture (cudaStreamBeginCapture,
// cudaThreadExchangeStreamCaptureMode; capture_rules.h of the simulator). Needs CudartReady().
class CaptureModeScope {
 public:
  explicit CaptureModeScope(cudaStreamCaptureMode mode);
  ~CaptureModeScope();
  CaptureModeScope(const CaptureModeScope&) = delete;
  CaptureModeScope& operator=(const CaptureModeScope&) = delete;

 private:
  cudaStreamCaptureMode previous_;
  bool set_;
};

extern CudaApi g_api __attribute__((visibility("hidden")));
extern std::atomic<bool> g_cudart_ready __attribute__((visibility("hidden")));

// Tries to resolve the runtime's functions (cold; retried only after the process loaded a new
// object). True when all are set.
bool ResolveCudart();
// Whether the runtime table is usable: one acquire load once it is.
inline bool CudartReady() {
  return __builtin_expect(g_cudart_ready.load(std::memory_order_acquire), 1) || ResolveCudart();
}
inline const CudaApi& Api() { return g_api; }

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_CUDA_API_H_
