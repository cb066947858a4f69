// A second "extension module" for the local-scope test, loaded only after several steps: it
// brings cuBLAS (DT_NEEDED libcublas, itself needing libcublasLt) into its own private scope.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "hook/programs/common.h"

// `count` SGEMMs of n×n×n on device 0; returns 0.
extern "C" __attribute__((visibility("default"))) int xt_local_gemms(int n, int count) {
  CHECK(cudaSetDevice(0));
  cublasHandle_t h;
  CHECK_BLAS(cublasCreate(&h));
  float *a, *b, *c;
  size_t bytes = static_cast<size_t>(n) * n * sizeof(float);
  CHECK(cudaMalloc(&a, bytes));
  CHECK(cudaMalloc(&b, bytes));
  CHECK(cudaMalloc(&c, bytes));
  const float one = 1.0f, zero = 0.0f;
  for (int i = 0; i < count; ++i) {
    CHECK_BLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n));
  }
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(c));
  CHECK_BLAS(cublasDestroy(h));
  return 0;
}
