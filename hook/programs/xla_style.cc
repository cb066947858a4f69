// Reaches CUDA the way XLA (JAX) does: every library is opened with dlopen(RTLD_LOCAL) and every
// function taken with dlsym on its handle (XLA's stubs for the driver, the runtime, cuBLAS and
// NCCL); the driver's launch function comes from cuGetProcAddress. Links no CUDA library.
// Usage: xla_style CUBIN N_GEMM N_ALLREDUCE N_LAUNCH      prints "OK"
#include <cublas_v2.h>
#include <cuda.h>
#include <dlfcn.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "hook/programs/driver_common.h"

namespace {

void* Open(const char* name) {
  void* h = dlopen(name, RTLD_LAZY | RTLD_LOCAL);
  if (h == nullptr) {
    fprintf(stderr, "dlopen %s: %s\n", name, dlerror());
    exit(1);
  }
  return h;
}

// dlsym typed by the header's declaration, as XLA's generated stubs do.
#define STUB(handle, fn) reinterpret_cast<decltype(&::fn)>(Sym(handle, #fn))
void* Sym(void* handle, const char* name) {
  void* p = dlsym(handle, name);
  if (p == nullptr) {
    fprintf(stderr, "dlsym %s: %s\n", name, dlerror());
    exit(1);
  }
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: xla_style CUBIN N_GEMM N_ALLREDUCE N_LAUNCH\n");
    return 2;
  }
  const int n_gemm = atoi(argv[2]), n_allreduce = atoi(argv[3]), n_launch = atoi(argv[4]);
  void* cuda = Open("libcuda.so.1");
  Open("libcudart.so.13");  // loaded by XLA's runtime stub, used here by nothing directly
  void* cublas = Open("libcublas.so.13");
  void* nccl = Open("libnccl.so.2");

  CHECK_CU(STUB(cuda, cuInit)(0));
  CUcontext ctx;
  CHECK_CU(STUB(cuda, cuDevicePrimaryCtxRetain)(&ctx, 0));
  CHECK_CU(STUB(cuda, cuCtxSetCurrent)(ctx));
  CUstream stream;
  CHECK_CU(STUB(cuda, cuStreamCreate)(&stream, CU_STREAM_NON_BLOCKING));
  const int n = 256;
  const size_t bytes = n * n * sizeof(float);
  CUdeviceptr a, b, c;
  for (CUdeviceptr* p : {&a, &b, &c}) CHECK_CU(STUB(cuda, cuMemAlloc_v2)(p, bytes));

  // The kernel: module from the cubin, launch function from cuGetProcAddress.
  std::string cubin = ReadCubin(argv[1]);
  CUmodule module;
  CHECK_CU(STUB(cuda, cuModuleLoadData)(&module, cubin.data()));
  CUfunction add, hold;
  CHECK_CU(STUB(cuda, cuModuleGetFunction)(&add, module, "triton_poi_fused_add_0"));
  CHECK_CU(STUB(cuda, cuModuleGetFunction)(&hold, module, "hold_stream"));
  void* launch_fn = nullptr;
  CUdriverProcAddressQueryResult status;
  CHECK_CU(STUB(cuda, cuGetProcAddress_v2)("cuLaunchKernel", &launch_fn, CUDA_VERSION,
                                           CU_GET_PROC_ADDRESS_DEFAULT, &status));
  auto launch = reinterpret_cast<decltype(&cuLaunchKernel)>(launch_fn);
  int zero = 0;
  void* hold_args[] = {&zero};
  CHECK_CU(launch(hold, 1, 1, 1, 1, 1, 1, 0, stream, hold_args, nullptr));
  std::string host(bytes, '\0');
  CHECK_CU(STUB(cuda, cuMemcpyHtoDAsync_v2)(a, host.data(), bytes, stream));
  CHECK_CU(STUB(cuda, cuMemsetD32Async)(b, 0x3f800000u, n * n, stream));
  int count = n * n;
  void* args[] = {&c, &a, &count};
  for (int i = 0; i < n_launch; ++i) {
    CHECK_CU(launch(add, count / 256, 1, 1, 256, 1, 1, 0, stream, args, nullptr));
  }

  // cuBLAS through its stub.
  cublasHandle_t handle;
  if (STUB(cublas, cublasCreate_v2)(&handle) != CUBLAS_STATUS_SUCCESS ||
      STUB(cublas, cublasSetStream_v2)(handle, stream) != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "cuBLAS setup failed\n");
    return 1;
  }
  const float one = 1, none = 0;
  auto sgemm = STUB(cublas, cublasSgemm_v2);
  for (int i = 0; i < n_gemm; ++i) {
    if (sgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, reinterpret_cast<float*>(a), n,
              reinterpret_cast<float*>(b), n, &none, reinterpret_cast<float*>(c), n) !=
        CUBLAS_STATUS_SUCCESS) {
      fprintf(stderr, "cublasSgemm failed\n");
      return 1;
    }
  }

  // NCCL through its stub: a communicator of one rank.
  ncclUniqueId id;
  ncclComm_t comm;
  if (STUB(nccl, ncclGetUniqueId)(&id) != ncclSuccess ||
      STUB(nccl, ncclCommInitRank)(&comm, 1, id, 0) != ncclSuccess) {
    fprintf(stderr, "NCCL setup failed\n");
    return 1;
  }
  auto all_reduce = STUB(nccl, ncclAllReduce);
  for (int i = 0; i < n_allreduce; ++i) {
    if (all_reduce(reinterpret_cast<void*>(c), reinterpret_cast<void*>(c), n * n, ncclFloat,
                   ncclSum, comm, stream) != ncclSuccess) {
      fprintf(stderr, "ncclAllReduce failed\n");
      return 1;
    }
  }
  CHECK_CU(STUB(cuda, cuStreamSynchronize)(stream));
  STUB(nccl, ncclCommDestroy)(comm);
  STUB(cublas, cublasDestroy_v2)(handle);
  printf("OK\n");
  return 0;
}
