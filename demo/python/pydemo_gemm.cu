// pydemo_gemm: the cuBLAS half of the Python demo job (demo/python/pydemo.py), loaded by Python
// with ctypes.CDLL (dlopen RTLD_LOCAL) only after several steps: a library that reaches
// libcublas.so.13 (and libcudart.so.13) for the first time long after the job started, as a
// framework loads cuBLAS on the first matmul.
//
// One call runs, on the caller's stream, a bf16 cublasGemmEx (fp32 compute) and an fp32
// cublasSgemm of dim x dim x dim, then synchronizes. Inputs are filled once with copies; the
// products are not checked (the simulator models a GEMM's time but computes nothing).
#include <cublas_v2.h>
#include <cuda_bf16.h>

#include <vector>

#include "demo/python/pydemo_status.h"

#define PYDEMO_CUBLAS(call)                                                                  \
  do {                                                                                       \
    cublasStatus_t st_ = (call);                                                             \
    if (st_ != CUBLAS_STATUS_SUCCESS) {                                                      \
      return pydemo::Fail("%s:%d: %s failed: %s (%s = %d)", __FILE__, __LINE__, #call,       \
                          cublasGetStatusString(st_), cublasGetStatusName(st_),              \
                          static_cast<int>(st_));                                            \
    }                                                                                        \
  } while (0)

namespace {

struct Gemm {
  int dim = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  __nv_bfloat16* a16 = nullptr;
  __nv_bfloat16* b16 = nullptr;
  __nv_bfloat16* c16 = nullptr;
  float* a32 = nullptr;
  float* b32 = nullptr;
  float* c32 = nullptr;
};

void Release(Gemm* g) {
  if (g->blas != nullptr) cublasDestroy(g->blas);
  for (void* p : {static_cast<void*>(g->a16), static_cast<void*>(g->b16),
                  static_cast<void*>(g->c16), static_cast<void*>(g->a32),
                  static_cast<void*>(g->b32), static_cast<void*>(g->c32)}) {
    if (p != nullptr) cudaFree(p);
  }
  delete g;
}

int Setup(Gemm* g) {
  const size_t elems = static_cast<size_t>(g->dim) * g->dim;
  PYDEMO_CUBLAS(cublasCreate(&g->blas));
  PYDEMO_CUBLAS(cublasSetStream(g->blas, g->stream));
  for (__nv_bfloat16** p : {&g->a16, &g->b16, &g->c16}) {
    PYDEMO_CUDA(cudaMalloc(p, elems * sizeof(__nv_bfloat16)));
  }
  for (float** p : {&g->a32, &g->b32, &g->c32}) PYDEMO_CUDA(cudaMalloc(p, elems * sizeof(float)));
  // Inputs of 1/dim (a power of two for the default dims), so that products stay small.
  std::vector<float> host32(elems, 1.0f / g->dim);
  std::vector<__nv_bfloat16> host16(elems, __float2bfloat16(1.0f / g->dim));
  for (__nv_bfloat16* p : {g->a16, g->b16}) {
    PYDEMO_CUDA(cudaMemcpy(p, host16.data(), elems * sizeof(__nv_bfloat16),
                           cudaMemcpyHostToDevice));
  }
  for (float* p : {g->a32, g->b32}) {
    PYDEMO_CUDA(cudaMemcpy(p, host32.data(), elems * sizeof(float), cudaMemcpyHostToDevice));
  }
  return 0;
}

}  // namespace

PYDEMO_API const char* pydemo_gemm_last_error() { return pydemo::last_error; }

// stream: a cudaStream_t of the current device (pydemo_core_stream). *out: the handle.
PYDEMO_API int pydemo_gemm_open(void* stream, int dim, void** out) {
  if (dim < 1 || dim > 16384) return pydemo::Fail("pydemo_gemm_open: bad dim %d", dim);
  auto* g = new Gemm;
  g->dim = dim;
  g->stream = static_cast<cudaStream_t>(stream);
  if (Setup(g) != 0) {
    Release(g);
    return 1;
  }
  *out = g;
  return 0;
}

// Two GEMMs of dim^3 (bf16 GemmEx, fp32 Sgemm) on the stream; returns once they are done.
PYDEMO_API int pydemo_gemm_run(void* handle) {
  auto* g = static_cast<Gemm*>(handle);
  const float one = 1.0f, zero = 0.0f;
  const int d = g->dim;
  PYDEMO_CUBLAS(cublasGemmEx(g->blas, CUBLAS_OP_N, CUBLAS_OP_N, d, d, d, &one, g->a16,
                             CUDA_R_16BF, d, g->b16, CUDA_R_16BF, d, &zero, g->c16, CUDA_R_16BF,
                             d, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  PYDEMO_CUBLAS(cublasSgemm(g->blas, CUBLAS_OP_N, CUBLAS_OP_N, d, d, d, &one, g->a32, d, g->b32,
                            d, &zero, g->c32, d));
  PYDEMO_CUDA(cudaStreamSynchronize(g->stream));
  return 0;
}

PYDEMO_API int pydemo_gemm_close(void* handle) {
  Release(static_cast<Gemm*>(handle));
  return 0;
}
