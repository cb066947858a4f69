// Provokes CUDA launch and API errors and prints what the application sees: return values,
// cudaGetLastError / cudaPeekAtLastError and errno. hook:program_test runs it with and without
// libxtimer.so (timing every kernel) and requires identical output.
#include <cuda_runtime.h>

#include <cerrno>
#include <cstdio>

#include "hook/programs/common.h"

__global__ void k(float* x) {
  if (x) x[threadIdx.x] = 1.0f;
}
static void host_function(float*) {}

int main() {
  cudaStream_t s;
  SHOW(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float* d = nullptr;
  SHOW(cudaMalloc(&d, 1 << 20));
  // A good launch.
  k<<<1, 32, 0, s>>>(d);
  SHOW(cudaGetLastError());
  // Bad block size: cudaErrorInvalidConfiguration, sticky in the last-error slot until read.
  k<<<1, 2048, 0, s>>>(d);
  SHOW(cudaPeekAtLastError());
  SHOW(cudaPeekAtLastError());
  // A timed op while an error is pending: the hook must not disturb it.
  SHOW(cudaMemsetAsync(d, 0, 1024, s));
  k<<<1, 32, 0, s>>>(d);
  SHOW(cudaGetLastError());
  SHOW(cudaGetLastError());
  // An unregistered function.
  void* args[] = {&d};
  SHOW(cudaLaunchKernel(reinterpret_cast<const void*>(&host_function), dim3(1), dim3(1), args, 0,
                        s));
  SHOW(cudaGetLastError());
  // Zero grid.
  k<<<0, 32, 0, s>>>(d);
  SHOW(cudaGetLastError());
  // A failing copy (past the end of the allocation) and memset.
  SHOW(cudaMemcpyAsync(d, d, 4 << 20, cudaMemcpyDeviceToDevice, s));
  SHOW(cudaGetLastError());
  SHOW(cudaMemset(d, 0, 8 << 20));
  SHOW(cudaGetLastError());
  // A failing sync on a destroyed stream, and a good one.
  SHOW(cudaStreamSynchronize(s));
  SHOW(cudaGetLastError());
  SHOW(cudaFree(d));
  SHOW(cudaStreamDestroy(s));
  SHOW(cudaDeviceSynchronize());
  SHOW(cudaGetLastError());
  printf("done\n");
  return 0;
}
