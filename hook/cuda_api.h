// Every vendor call the recorder and the poller make for their own work (not the application's)
// goes through this table of function pointers. In libxtimer.so they are the real functions
// (dlsym RTLD_NEXT); unit tests install fakes with SetCudaApiForTesting.
#ifndef XTIMER_HOOK_CUDA_API_H_
#define XTIMER_HOOK_CUDA_API_H_

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

namespace xtimer {
namespace hook {

struct CudaApi {
  decltype(&::cudaPeekAtLastError) peek_at_last_error;
  decltype(&::cudaGetLastError) get_last_error;
  decltype(&::cudaStreamIsCapturing) stream_is_capturing;
  decltype(&::cudaGetDevice) get_device;
  decltype(&::cudaSetDevice) set_device;
  decltype(&::cudaEventCreateWithFlags) event_create_with_flags;
  decltype(&::cudaEventRecord) event_record;
  decltype(&::cudaEventQuery) event_query;
  decltype(&::cudaEventSynchronize) event_synchronize;
  decltype(&::cudaEventElapsedTime) event_elapsed_time;
  decltype(&::cudaStreamCreateWithFlags) stream_create_with_flags;
  decltype(&::cudaFuncGetName) func_get_name;
  // cuBLAS / cuBLASLt / NCCL: may be null when the library is not loaded.
  decltype(&::cublasGetStream_v2) cublas_get_stream;
  decltype(&::cublasGetMathMode) cublas_get_math_mode;
  decltype(&::cublasLtMatmulDescGetAttribute) lt_desc_get_attribute;
  decltype(&::cublasLtMatrixLayoutGetAttribute) lt_layout_get_attribute;
  decltype(&::ncclCommUserRank) nccl_comm_user_rank;
  decltype(&::ncclCommCount) nccl_comm_count;
  decltype(&::ncclCommCuDevice) nccl_comm_cu_device;
};

// Resolves the real functions (cold; thread-safe; idempotent). InitSlow calls it before timing
// starts, so the hot path reads the table with no check.
void InitApi();
extern CudaApi g_api __attribute__((visibility("hidden")));
inline const CudaApi& Api() { return g_api; }
// Replaces the table (tests only; call before any other use).
void SetCudaApiForTesting(const CudaApi& api);

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_CUDA_API_H_
