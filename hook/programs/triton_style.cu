// Reaches CUDA the way PyTorch with Triton kernels (torch.compile) does: the CUDA runtime owns
// the device, the stream and the memory; the kernels are a cubin loaded with cuModuleLoadData,
// found with cuModuleGetFunction and launched with the driver: cuLaunchKernel linked directly
// (Triton 2), and cuLaunchKernelEx found with dlsym on a handle of libcuda.so.1 (Triton 3's
// launcher).
// Usage: triton_style CUBIN N_ADD N_SUM        prints "OK"
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "hook/programs/common.h"
#include "hook/programs/driver_common.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: triton_style CUBIN N_ADD N_SUM\n");
    return 2;
  }
  const int n_add = atoi(argv[2]), n_sum = atoi(argv[3]);
  // PyTorch's side: device, stream, tensors.
  CHECK(cudaSetDevice(0));
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const int n = 1024;
  float *in, *out;
  CHECK(cudaMalloc(&in, n * sizeof(float)));
  CHECK(cudaMalloc(&out, n * sizeof(float)));
  // Triton's side: the current context is the runtime's primary context.
  CHECK_CU(cuInit(0));
  CUcontext ctx;
  CHECK_CU(cuCtxGetCurrent(&ctx));
  if (ctx == nullptr) {
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, 0));
    CHECK_CU(cuCtxSetCurrent(ctx));
  }
  std::string cubin = ReadCubin(argv[1]);
  CUmodule module;
  CHECK_CU(cuModuleLoadData(&module, cubin.data()));
  CUfunction add, sum, hold;
  CHECK_CU(cuModuleGetFunction(&add, module, "triton_poi_fused_add_0"));
  CHECK_CU(cuModuleGetFunction(&sum, module, "triton_red_fused_sum_1"));
  CHECK_CU(cuModuleGetFunction(&hold, module, "hold_stream"));
  auto cu_stream = reinterpret_cast<CUstream>(stream);
  int zero = 0;
  void* hold_args[] = {&zero};
  CHECK_CU(cuLaunchKernel(hold, 1, 1, 1, 1, 1, 1, 0, cu_stream, hold_args, nullptr));
  int count = n;
  void* args[] = {&out, &in, &count};
  for (int i = 0; i < n_add; ++i) {
    CHECK_CU(cuLaunchKernel(add, n / 128, 1, 1, 128, 1, 1, 0, cu_stream, args, nullptr));
  }
  void* libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  auto launch_ex = reinterpret_cast<decltype(&cuLaunchKernelEx)>(
      libcuda != nullptr ? dlsym(libcuda, "cuLaunchKernelEx") : nullptr);
  if (launch_ex == nullptr) {
    fprintf(stderr, "no cuLaunchKernelEx in libcuda.so.1\n");
    return 1;
  }
  CUlaunchConfig config = {};
  config.gridDimX = config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 32;
  config.blockDimY = config.blockDimZ = 1;
  config.hStream = cu_stream;
  for (int i = 0; i < n_sum; ++i) CHECK_CU(launch_ex(&config, sum, args, nullptr));
  CHECK(cudaStreamSynchronize(stream));
  CHECK_CU(cuModuleUnload(module));
  printf("OK\n");
  return 0;
}
