// The simulated driver API on the engine, with the simulated runtime linked beside it (one GPU,
// two front ends). XTIMER_SIM_KERNEL_TIMES is set by the BUILD rule.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"

namespace {

extern "C" CUresult cuLaunchKernel_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned,
                                         unsigned, unsigned, unsigned, CUstream, void**, void**);

const char kPtx[] =
    "//\n.version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry add_kernel(.param .u64 p)\n{ ret; }\n"
    ".visible .entry _Z10slow_scalePfi(.param .u64 p, .param .u32 n)\n{ ret; }\n"
    ".visible .entry hold_kernel()\n{ ret; }\n";

class DriverTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx_, 0), CUDA_SUCCESS);
  }
  void SetUp() override { ASSERT_EQ(cuCtxSetCurrent(ctx_), CUDA_SUCCESS); }

  CUfunction Function(const char* name) {
    CUmodule module;
    EXPECT_EQ(cuModuleLoadData(&module, kPtx), CUDA_SUCCESS);
    CUfunction f = nullptr;
    EXPECT_EQ(cuModuleGetFunction(&f, module, name), CUDA_SUCCESS);
    return f;
  }

  // A 300 ms kernel first keeps the simulated GPU ahead of the host, so that host time (slow under
  // sanitizers or on a loaded machine) does not leak into a measured interval.
  void Hold(CUstream s) {
    ASSERT_EQ(cuLaunchKernel(Function("hold_kernel"), 1, 1, 1, 1, 1, 1, 0, s, nullptr, nullptr),
              CUDA_SUCCESS);
  }

  static CUcontext ctx_;
};
CUcontext DriverTest::ctx_ = nullptr;

TEST(DriverInitTest, EveryCallBeforeCuInitFails) {
  // Runs first (declared first, and the suite below initializes).
  int count = -1;
  EXPECT_EQ(cuDeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
  CUcontext ctx;
  EXPECT_EQ(cuCtxGetCurrent(&ctx), CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(cuInit(1), CUDA_ERROR_INVALID_VALUE);
  int version = 0;
  EXPECT_EQ(cuDriverGetVersion(&version), CUDA_SUCCESS);
  EXPECT_EQ(version, 13000);
}

TEST_F(DriverTest, NoCurrentContextIsAnError) {
  ASSERT_EQ(cuCtxSetCurrent(nullptr), CUDA_SUCCESS);
  CUcontext ctx = reinterpret_cast<CUcontext>(1);
  EXPECT_EQ(cuCtxGetCurrent(&ctx), CUDA_SUCCESS);
  EXPECT_EQ(ctx, nullptr);
  CUdeviceptr p;
  EXPECT_EQ(cuMemAlloc(&p, 256), CUDA_ERROR_INVALID_CONTEXT);
  ASSERT_EQ(cuCtxPushCurrent(ctx_), CUDA_SUCCESS);
  EXPECT_EQ(cuMemAlloc(&p, 0), CUDA_ERROR_INVALID_VALUE);
  CUdevice dev = -1;
  EXPECT_EQ(cuCtxGetDevice(&dev), CUDA_SUCCESS);
  EXPECT_EQ(dev, 0);
}

TEST_F(DriverTest, ModulesNameTheirKernels) {
  CUmodule module;
  ASSERT_EQ(cuModuleLoadData(&module, kPtx), CUDA_SUCCESS);
  CUfunction f;
  EXPECT_EQ(cuModuleGetFunction(&f, module, "missing"), CUDA_ERROR_NOT_FOUND);
  ASSERT_EQ(cuModuleGetFunction(&f, module, "_Z10slow_scalePfi"), CUDA_SUCCESS);
  const char* name = nullptr;
  ASSERT_EQ(cuFuncGetName(&name, f), CUDA_SUCCESS);
  EXPECT_STREQ(name, "_Z10slow_scalePfi");
  const unsigned char junk[] = {1, 2, 3, 4, 0};
  CUmodule bad;
  EXPECT_EQ(cuModuleLoadData(&bad, junk), CUDA_ERROR_INVALID_IMAGE);
  ASSERT_EQ(cuModuleUnload(module), CUDA_SUCCESS);
  EXPECT_EQ(cuFuncGetName(&name, f), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr),
            CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(DriverTest, DriverEventsTimeALaunchByItsModelledDuration) {
  CUfunction f = Function("_Z10slow_scalePfi");  // 40 us (XTIMER_SIM_KERNEL_TIMES)
  CUstream s;
  ASSERT_EQ(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUevent a, b;
  ASSERT_EQ(cuEventCreate(&a, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&b, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  float ms = 0;
  EXPECT_EQ(cuEventElapsedTime(&ms, a, b), CUDA_ERROR_INVALID_HANDLE);  // never recorded
  Hold(s);
  ASSERT_EQ(cuEventRecord(a, s), CUDA_SUCCESS);
  EXPECT_EQ(cuLaunchKernel(f, 1, 1, 1, 2048, 1, 1, 0, s, nullptr, nullptr),
            CUDA_ERROR_INVALID_VALUE);  // block too large
  ASSERT_EQ(cuLaunchKernel(f, 4, 1, 1, 128, 1, 1, 0, s, nullptr, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(b, s), CUDA_SUCCESS);
  EXPECT_EQ(cuEventElapsedTime(&ms, a, b), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(cuEventQuery(b), CUDA_ERROR_NOT_READY);
  ASSERT_EQ(cuEventSynchronize(b), CUDA_SUCCESS);
  ASSERT_EQ(cuEventElapsedTime(&ms, a, b), CUDA_SUCCESS);
  EXPECT_NEAR(ms, 0.040, 1e-6);
  EXPECT_EQ(cuEventQuery(b), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
}

TEST_F(DriverTest, RuntimeStreamsAndEventsAreDriverHandles) {
  // One GPU behind both APIs: a stream and events of the runtime time a driver launch.
  CUfunction f = Function("add_kernel");  // 15 us
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  cudaEvent_t a, b;
  ASSERT_EQ(cudaEventCreate(&a), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&b), cudaSuccess);
  Hold(reinterpret_cast<CUstream>(s));
  ASSERT_EQ(cudaEventRecord(a, s), cudaSuccess);
  ASSERT_EQ(cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, reinterpret_cast<CUstream>(s), nullptr,
                           nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(cudaEventRecord(b, s), cudaSuccess);
  ASSERT_EQ(cuEventSynchronize(reinterpret_cast<CUevent>(b)), CUDA_SUCCESS);
  float ms = 0;
  ASSERT_EQ(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
  EXPECT_NEAR(ms, 0.015, 1e-6);
}

TEST_F(DriverTest, CopiesAndSetsMoveBytes) {
  CUdeviceptr d;
  ASSERT_EQ(cuMemAlloc(&d, 64), CUDA_SUCCESS);
  CUstream s;
  ASSERT_EQ(cuStreamCreate(&s, CU_STREAM_DEFAULT), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD32Async(d, 0x01020304u, 16, s), CUDA_SUCCESS);
  uint32_t out[16] = {};
  ASSERT_EQ(cuMemcpyDtoHAsync(out, d, sizeof(out), s), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
  for (uint32_t v : out) EXPECT_EQ(v, 0x01020304u);
  EXPECT_EQ(cuMemsetD32Async(d + 2, 0, 4, s), CUDA_ERROR_INVALID_VALUE);  // misaligned
  EXPECT_EQ(cuMemsetD8Async(d, 0, 65, s), CUDA_ERROR_INVALID_VALUE);      // past the end
  const uint32_t in[4] = {7, 8, 9, 10};
  ASSERT_EQ(cuMemcpyHtoD(d, in, sizeof(in)), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoH(out, d, sizeof(in)), CUDA_SUCCESS);
  EXPECT_EQ(memcmp(out, in, sizeof(in)), 0);
  EXPECT_EQ(cuMemFree(d), CUDA_SUCCESS);
}

TEST_F(DriverTest, GetProcAddressGivesTheDriversOwnEntryPoints) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status;
  ASSERT_EQ(cuGetProcAddress("cuLaunchKernel", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &status),
            CUDA_SUCCESS);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SUCCESS);
  EXPECT_EQ(fn, reinterpret_cast<void*>(&cuLaunchKernel));
  ASSERT_EQ(cuGetProcAddress("cuLaunchKernel", &fn, 13000,
                             CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &status),
            CUDA_SUCCESS);
  EXPECT_EQ(fn, reinterpret_cast<void*>(&cuLaunchKernel_ptsz));
  ASSERT_EQ(cuGetProcAddress("cuMemAlloc", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &status),
            CUDA_SUCCESS);
  EXPECT_EQ(fn, reinterpret_cast<void*>(&cuMemAlloc_v2));  // cuda.h's mapping of the name
  ASSERT_EQ(cuGetProcAddress("cuGraphInstantiate", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT,
                             &status),
            CUDA_SUCCESS);
  EXPECT_EQ(fn, reinterpret_cast<void*>(&cuGraphInstantiateWithFlags));  // not the old _v2
  EXPECT_EQ(cuGetProcAddress("cuNoSuchThing", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &status),
            CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  EXPECT_EQ(fn, nullptr);
}

TEST_F(DriverTest, CapturedDriverWorkReplaysInAGraph) {
  CUfunction f = Function("_Z10slow_scalePfi");  // 40 us
  CUstream s;
  ASSERT_EQ(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  CUstreamCaptureStatus st;
  ASSERT_EQ(cuStreamIsCapturing(s, &st), CUDA_SUCCESS);
  EXPECT_EQ(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr), CUDA_SUCCESS);
  }
  CUgraph graph;
  ASSERT_EQ(cuStreamEndCapture(s, &graph), CUDA_SUCCESS);
  CUgraphExec exec;
  ASSERT_EQ(cuGraphInstantiate(&exec, graph, 0), CUDA_SUCCESS);
  CUevent a, b;
  ASSERT_EQ(cuEventCreate(&a, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&b, 0), CUDA_SUCCESS);
  Hold(s);
  ASSERT_EQ(cuEventRecord(a, s), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(exec, s), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(b, s), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
  float ms = 0;
  ASSERT_EQ(cuEventElapsedTime(&ms, a, b), CUDA_SUCCESS);
  EXPECT_NEAR(ms, 0.080, 1e-6);
  EXPECT_EQ(cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(graph), CUDA_SUCCESS);
}

}  // namespace
