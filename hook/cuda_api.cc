#include "hook/cuda_api.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <mutex>

#include "hook/real.h"

namespace xtimer {
namespace hook {

void* ResolveNext(const char* name) {
  void* p = dlsym(RTLD_NEXT, name);
  if (p == nullptr) {
    char buf[256];
    int n = snprintf(buf, sizeof(buf), "xtimer[%d]: %s not found after libxtimer.so\n",
                     static_cast<int>(getpid()), name);
    if (n > 0) {
      ssize_t ignored = write(2, buf, static_cast<size_t>(n) < sizeof(buf) ? n : sizeof(buf) - 1);
      (void)ignored;
    }
  }
  return p;
}

namespace {

template <typename Fn>
Fn Next(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

std::once_flag g_once;
bool g_for_testing = false;

}  // namespace

CudaApi g_api;

void InitApi() {
  std::call_once(g_once, [] {
    if (g_for_testing) return;
#define XT_NEXT(field, fn) g_api.field = Next<decltype(&::fn)>(#fn)
    XT_NEXT(peek_at_last_error, cudaPeekAtLastError);
    XT_NEXT(get_last_error, cudaGetLastError);
    XT_NEXT(stream_is_capturing, cudaStreamIsCapturing);
    XT_NEXT(get_device, cudaGetDevice);
    XT_NEXT(set_device, cudaSetDevice);
    XT_NEXT(event_create_with_flags, cudaEventCreateWithFlags);
    XT_NEXT(event_record, cudaEventRecord);
    XT_NEXT(event_query, cudaEventQuery);
    XT_NEXT(event_synchronize, cudaEventSynchronize);
    XT_NEXT(event_elapsed_time, cudaEventElapsedTime);
    XT_NEXT(stream_create_with_flags, cudaStreamCreateWithFlags);
    XT_NEXT(func_get_name, cudaFuncGetName);
    XT_NEXT(cublas_get_stream, cublasGetStream_v2);
    XT_NEXT(cublas_get_math_mode, cublasGetMathMode);
    XT_NEXT(lt_desc_get_attribute, cublasLtMatmulDescGetAttribute);
    XT_NEXT(lt_layout_get_attribute, cublasLtMatrixLayoutGetAttribute);
    XT_NEXT(nccl_comm_user_rank, ncclCommUserRank);
    XT_NEXT(nccl_comm_count, ncclCommCount);
    XT_NEXT(nccl_comm_cu_device, ncclCommCuDevice);
#undef XT_NEXT
  });
}

void SetCudaApiForTesting(const CudaApi& api) {
  g_for_testing = true;
  g_api = api;
  InitApi();
}

}  // namespace hook
}  // namespace xtimer
