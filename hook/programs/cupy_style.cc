// Reaches CUDA the way CuPy does: no dynamic CUDA runtime in the process (CuPy links it
// statically, and a static runtime finds the driver with dlopen("libcuda.so.1") + dlsym of
// cuGetProcAddress, then takes every entry point from cuGetProcAddress); cuBLAS linked directly;
// kernels compiled at run time and loaded with cuModuleLoadData; a CUDA graph captured from two
// launches and replayed (cupy.cuda.Graph).
// Usage: cupy_style CUBIN N_GEMM N_LAUNCH N_REPLAY      prints "OK"
#include <cublas_v2.h>
#include <cuda.h>
#include <dlfcn.h>
#include <link.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "hook/programs/driver_common.h"

namespace {

decltype(&cuGetProcAddress_v2) g_get_proc;

// What the static runtime does for each driver function it needs.
template <typename Fn>
Fn Entry(const char* name) {
  void* p = nullptr;
  CHECK_CU(g_get_proc(name, &p, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, nullptr));
  return reinterpret_cast<Fn>(p);
}
#define ENTRY(fn) Entry<decltype(&::fn)>(#fn)

// No libcudart may be loaded: that is the point of this program.
int CountRuntimes() {
  int count = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        if (info->dlpi_name != nullptr && strstr(info->dlpi_name, "libcudart") != nullptr) {
          ++*static_cast<int*>(data);
        }
        return 0;
      },
      &count);
  return count;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: cupy_style CUBIN N_GEMM N_LAUNCH N_REPLAY\n");
    return 2;
  }
  const int n_gemm = atoi(argv[2]), n_launch = atoi(argv[3]), n_replay = atoi(argv[4]);
  void* libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  g_get_proc = libcuda != nullptr ? reinterpret_cast<decltype(g_get_proc)>(
                                        dlsym(libcuda, "cuGetProcAddress_v2"))
                                  : nullptr;
  if (g_get_proc == nullptr) {
    fprintf(stderr, "no cuGetProcAddress_v2 in libcuda.so.1\n");
    return 1;
  }
  CHECK_CU(ENTRY(cuInit)(0));
  CUcontext ctx;
  CHECK_CU(ENTRY(cuDevicePrimaryCtxRetain)(&ctx, 0));
  CHECK_CU(ENTRY(cuCtxSetCurrent)(ctx));
  CUstream stream;
  CHECK_CU(ENTRY(cuStreamCreate)(&stream, CU_STREAM_NON_BLOCKING));
  std::string cubin = ReadCubin(argv[1]);
  CUmodule module;
  CHECK_CU(ENTRY(cuModuleLoadData)(&module, cubin.data()));
  CUfunction add, hold;
  CHECK_CU(ENTRY(cuModuleGetFunction)(&add, module, "triton_poi_fused_add_0"));
  CHECK_CU(ENTRY(cuModuleGetFunction)(&hold, module, "hold_stream"));
  auto launch = ENTRY(cuLaunchKernel);
  int zero = 0;
  void* hold_args[] = {&zero};
  CHECK_CU(launch(hold, 1, 1, 1, 1, 1, 1, 0, stream, hold_args, nullptr));

  const int n = 512;
  const size_t bytes = size_t{n} * n * sizeof(float);
  CUdeviceptr a, b, c;
  for (CUdeviceptr* p : {&a, &b, &c}) CHECK_CU(ENTRY(cuMemAlloc)(p, bytes));
  std::string host(bytes, '\0');
  CHECK_CU(ENTRY(cuMemcpyHtoDAsync)(a, host.data(), bytes, stream));  // cupy.asarray
  CHECK_CU(ENTRY(cuMemsetD8Async)(b, 0, bytes, stream));             // cupy.zeros
  cublasHandle_t handle;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS ||
      cublasSetStream(handle, stream) != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "cuBLAS setup failed\n");
    return 1;
  }
  const float one = 1, none = 0;
  for (int i = 0; i < n_gemm; ++i) {  // a @ b
    if (cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, reinterpret_cast<float*>(a),
                    n, reinterpret_cast<float*>(b), n, &none, reinterpret_cast<float*>(c), n) !=
        CUBLAS_STATUS_SUCCESS) {
      fprintf(stderr, "cublasSgemm failed\n");
      return 1;
    }
  }
  int count = n * n;
  void* args[] = {&c, &a, &count};
  for (int i = 0; i < n_launch; ++i) {  // an ElementwiseKernel
    CHECK_CU(launch(add, count / 256, 1, 1, 256, 1, 1, 0, stream, args, nullptr));
  }
  // A graph of two launches (captured launches are not timed one by one: the replay is one op).
  CHECK_CU(ENTRY(cuStreamBeginCapture)(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  for (int i = 0; i < 2; ++i) {
    CHECK_CU(launch(add, count / 256, 1, 1, 256, 1, 1, 0, stream, args, nullptr));
  }
  CUgraph graph;
  CHECK_CU(ENTRY(cuStreamEndCapture)(stream, &graph));
  CUgraphExec exec;
  CHECK_CU(ENTRY(cuGraphInstantiate)(&exec, graph, 0));
  auto graph_launch = ENTRY(cuGraphLaunch);
  for (int i = 0; i < n_replay; ++i) CHECK_CU(graph_launch(exec, stream));
  std::string back(bytes, '\0');
  CHECK_CU(ENTRY(cuMemcpyDtoHAsync)(&back[0], c, bytes, stream));  // cupy.asnumpy
  CHECK_CU(ENTRY(cuStreamSynchronize)(stream));
  CHECK_CU(ENTRY(cuGraphExecDestroy)(exec));
  CHECK_CU(ENTRY(cuGraphDestroy)(graph));
  CHECK_CU(ENTRY(cuModuleUnload)(module));
  cublasDestroy(handle);
  if (CountRuntimes() != 0) {
    fprintf(stderr, "a libcudart is loaded\n");
    return 1;
  }
  printf("OK\n");
  return 0;
}
