// Prints what the application sees around the first and a later call of every hooked family
// (return value, errno, cudaPeekAtLastError), with the families in the order given, so that each
// can be the process's first hooked call (the one that starts the hook). hook:program_test runs
// it with and without libxtimer.so, under torchrun-, Slurm- and MPI-style environments, with and
// without a daemon, and requires identical output.
// Usage: first_calls FAMILY...   FAMILY: copy kernel sync gemm lt nccl
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "hook/programs/common.h"

__global__ void timed_kernel_first(float* x) {}

static float* Buffer(size_t bytes) {
  float* p = nullptr;
  CHECK(cudaMalloc(&p, bytes));
  return p;
}

static void Copies(cudaStream_t s) {
  float* d = Buffer(1 << 16);
  static float host[1024];
  SHOW(cudaMemcpy(d, host, sizeof(host), cudaMemcpyHostToDevice));
  SHOW(cudaMemcpyAsync(host, d, sizeof(host), cudaMemcpyDeviceToHost, s));
  SHOW(cudaMemsetAsync(d, 0, 4096, s));
  SHOW(cudaStreamSynchronize(s));
}

static void Kernels(cudaStream_t s) {
  float* d = Buffer(4096);
  for (int i = 0; i < 2; ++i) {
    errno = 4242;
    timed_kernel_first<<<1, 32, 0, s>>>(d);
    printf("%-70s -> errno %d, peek %d\n", "timed_kernel_first<<<1, 32, 0, s>>>(d)", errno,
           static_cast<int>(cudaPeekAtLastError()));
  }
  timed_kernel_first<<<1, 4096, 0, s>>>(d);  // invalid configuration: an error pending ...
  SHOW(cudaMemsetAsync(d, 0, 64, s));        // ... while a hooked call runs
  SHOW(cudaGetLastError());
}

static void Syncs(cudaStream_t s) {
  SHOW(cudaStreamSynchronize(s));
  SHOW(cudaDeviceSynchronize());
  SHOW(cudaStreamSynchronize(s));
}

static void Gemms(cudaStream_t s) {
  cublasHandle_t h;
  CHECK_BLAS(cublasCreate(&h));
  CHECK_BLAS(cublasSetStream(h, s));
  float *a = Buffer(64 * 64 * 4), *b = Buffer(64 * 64 * 4), *c = Buffer(64 * 64 * 4);
  const float one = 1, zero = 0;
  for (int i = 0; i < 2; ++i) {
    SHOW(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &one, a, 64, b, 64, &zero, c, 64));
  }
  SHOW(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, -1, 64, 64, &one, a, 64, b, 64, &zero, c, 64));
  SHOW(cudaStreamSynchronize(s));
  CHECK_BLAS(cublasDestroy(h));
}

static void LtMatmuls(cudaStream_t s) {
  cublasLtHandle_t h;
  CHECK_BLAS(cublasLtCreate(&h));
  cublasLtMatmulDesc_t desc;
  CHECK_BLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasLtMatrixLayout_t layout;
  CHECK_BLAS(cublasLtMatrixLayoutCreate(&layout, CUDA_R_32F, 64, 64, 64));
  float *a = Buffer(64 * 64 * 4), *b = Buffer(64 * 64 * 4), *c = Buffer(64 * 64 * 4);
  const float one = 1, zero = 0;
  for (int i = 0; i < 2; ++i) {
    SHOW(cublasLtMatmul(h, desc, &one, a, layout, b, layout, &zero, c, layout, c, layout, nullptr,
                        nullptr, 0, s));
  }
  SHOW(cudaStreamSynchronize(s));
  CHECK_BLAS(cublasLtMatrixLayoutDestroy(layout));
  CHECK_BLAS(cublasLtMatmulDescDestroy(desc));
  CHECK_BLAS(cublasLtDestroy(h));
}

static void Collectives(cudaStream_t s) {
  ncclComm_t comm;
  int devices[1] = {0};
  SHOW(ncclCommInitAll(&comm, 1, devices));
  float* d = Buffer(4096);
  for (int i = 0; i < 2; ++i) SHOW(ncclAllReduce(d, d, 1024, ncclFloat, ncclSum, comm, s));
  SHOW(ncclGroupStart());
  SHOW(ncclBroadcast(d, d, 1024, ncclFloat, 0, comm, s));
  SHOW(ncclGroupEnd());
  SHOW(ncclAllReduce(d, d, 1024, ncclFloat, ncclSum, nullptr, s));  // invalid communicator
  SHOW(cudaStreamSynchronize(s));
  SHOW(ncclCommDestroy(comm));
}

int main(int argc, char** argv) {
  cudaStream_t s;
  CHECK(cudaSetDevice(0));
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (int i = 1; i < argc; ++i) {
    printf("== %s\n", argv[i]);
    if (strcmp(argv[i], "copy") == 0) Copies(s);
    else if (strcmp(argv[i], "kernel") == 0) Kernels(s);
    else if (strcmp(argv[i], "sync") == 0) Syncs(s);
    else if (strcmp(argv[i], "gemm") == 0) Gemms(s);
    else if (strcmp(argv[i], "lt") == 0) LtMatmuls(s);
    else if (strcmp(argv[i], "nccl") == 0) Collectives(s);
    else {
      fprintf(stderr, "unknown family %s\n", argv[i]);
      return 2;
    }
  }
  printf("OK\n");
  return 0;
}
