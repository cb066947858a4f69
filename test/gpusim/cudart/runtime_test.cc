// Unit tests of the simulated CUDA runtime, through the public CUDA runtime API.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "test/gpusim/common/sim_env.h"
#include "test/gpusim/sim_api.h"

extern "C" void __cudaRegisterFunction(void**, const char*, char*, const char*, int, uint3*, uint3*,
                                       dim3*, dim3*, int*);

namespace {

constexpr double kKernelUs = 20.0;  // XTIMER_SIM_KERNEL_TIMES below gives test kernels 20 us

void KernelStub() {}
void SlowKernelStub() {}
void HoldKernelStub() {}

const void* Kernel() {
  static const bool registered = [] {
    __cudaRegisterFunction(nullptr, reinterpret_cast<const char*>(&KernelStub), nullptr,
                           "_Z10testKernelPfi", -1, nullptr, nullptr, nullptr, nullptr, nullptr);
    __cudaRegisterFunction(nullptr, reinterpret_cast<const char*>(&SlowKernelStub), nullptr,
                           "_Z10slowKernelv", -1, nullptr, nullptr, nullptr, nullptr, nullptr);
    __cudaRegisterFunction(nullptr, reinterpret_cast<const char*>(&HoldKernelStub), nullptr,
                           "_Z10holdKernelv", -1, nullptr, nullptr, nullptr, nullptr, nullptr);
    return true;
  }();
  (void)registered;
  return reinterpret_cast<const void*>(&KernelStub);
}

const void* SlowKernel() {
  Kernel();
  return reinterpret_cast<const void*>(&SlowKernelStub);
}

// 300 ms: holds a stream ahead of the host while a test enqueues work behind it.
const void* HoldKernel() {
  Kernel();
  return reinterpret_cast<const void*>(&HoldKernelStub);
}

cudaError_t Launch(const void* k, cudaStream_t s, dim3 grid = dim3(4), dim3 block = dim3(128)) {
  return cudaLaunchKernel(k, grid, block, nullptr, 0, s);
}

float Elapsed(cudaEvent_t a, cudaEvent_t b) {
  float ms = -1;
  EXPECT_EQ(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
  return ms;
}

class RuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cudaGetLastError();
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
    ASSERT_EQ(cudaEventCreate(&start_), cudaSuccess);
    ASSERT_EQ(cudaEventCreate(&stop_), cudaSuccess);
  }
  void TearDown() override {
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    EXPECT_EQ(cudaStreamDestroy(stream_), cudaSuccess);
    EXPECT_EQ(cudaEventDestroy(start_), cudaSuccess);
    EXPECT_EQ(cudaEventDestroy(stop_), cudaSuccess);
  }
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

TEST_F(RuntimeTest, DevicesAndVersions) {
  int n = 0;
  ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  EXPECT_EQ(n, 8);
  EXPECT_EQ(cudaSetDevice(n), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
  cudaDeviceProp prop;
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 3), cudaSuccess);
  EXPECT_EQ(prop.major, 9);
  EXPECT_EQ(prop.warpSize, 32);
  int v = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  EXPECT_EQ(v, prop.multiProcessorCount);
  ASSERT_EQ(cudaRuntimeGetVersion(&v), cudaSuccess);
  EXPECT_EQ(v, 13000);
  EXPECT_STREQ(cudaGetErrorName(cudaErrorInvalidValue), "cudaErrorInvalidValue");
  EXPECT_STREQ(cudaGetErrorString(cudaErrorInvalidValue), "invalid argument");
  EXPECT_STREQ(cudaGetErrorName(static_cast<cudaError_t>(123456)), "unrecognized error code");
}

TEST_F(RuntimeTest, StreamExecutesInOrder) {
  // A host callback that blocks holds the stream: the copy queued after it must wait.
  std::atomic<bool> release{false};
  std::atomic<bool> callback_ran{false};
  struct Ctx {
    std::atomic<bool>* release;
    std::atomic<bool>* ran;
  } ctx{&release, &callback_ran};
  auto fn = [](void* p) {
    auto* c = static_cast<Ctx*>(p);
    while (!c->release->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    c->ran->store(true);
  };
  int* dev = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, sizeof(int)), cudaSuccess);
  int zero = 0, seven = 7, out = -1;
  ASSERT_EQ(cudaMemcpy(dev, &zero, sizeof(int), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(stream_, fn, &ctx), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(dev, &seven, sizeof(int), cudaMemcpyHostToDevice, stream_),
            cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(&out, dev, sizeof(int), cudaMemcpyDeviceToHost, stream_),
            cudaSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(cudaStreamQuery(stream_), cudaErrorNotReady);
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess) << "cudaErrorNotReady is not a recorded error";
  EXPECT_EQ(out, -1);
  release = true;
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  EXPECT_TRUE(callback_ran.load());
  EXPECT_EQ(out, 7);
  EXPECT_EQ(cudaStreamQuery(stream_), cudaSuccess);
  ASSERT_EQ(cudaFree(dev), cudaSuccess);
}

TEST_F(RuntimeTest, EventTimingFollowsTheModel) {
  // A 300 ms kernel first keeps the simulated GPU ahead of the host, so host launch time (slow
  // under sanitizers, or when the host is descheduled on a loaded machine) does not leak into
  // the measured interval.
  ASSERT_EQ(Launch(HoldKernel(), stream_), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(start_, stream_), cudaSuccess);
  for (int i = 0; i < 50; ++i) ASSERT_EQ(Launch(Kernel(), stream_), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(stop_, stream_), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(stop_), cudaErrorNotReady);
  float ms = 0;
  EXPECT_EQ(cudaEventElapsedTime(&ms, start_, stop_), cudaErrorNotReady);
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(cudaEventSynchronize(stop_), cudaSuccess);
  double host_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(cudaEventQuery(stop_), cudaSuccess);
  const double expected_ms = 50 * kKernelUs / 1000.0;
  double got = Elapsed(start_, stop_);
  EXPECT_NEAR(got, expected_ms, expected_ms * 0.001);
  EXPECT_GT(host_ms, expected_ms * 0.5) << "synchronize must wait for the modelled GPU time";
}

TEST_F(RuntimeTest, ElapsedTimeErrors) {
  cudaEvent_t never, no_timing;
  ASSERT_EQ(cudaEventCreate(&never), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&no_timing, cudaEventDisableTiming), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(start_, stream_), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(no_timing, stream_), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  float ms;
  EXPECT_EQ(cudaEventElapsedTime(&ms, start_, never), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaEventElapsedTime(&ms, start_, no_timing), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaEventQuery(never), cudaSuccess) << "an event never recorded counts as complete";
  EXPECT_EQ(cudaEventDestroy(never), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(never), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaEventDestroy(no_timing), cudaSuccess);
  cudaGetLastError();
}

TEST_F(RuntimeTest, LastErrorSemantics) {
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(Launch(Kernel(), stream_, dim3(1), dim3(2048)), cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidConfiguration) << "peek does not reset";
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "get resets";
  EXPECT_EQ(Launch(Kernel(), stream_, dim3(0)), cudaErrorInvalidConfiguration);
  int not_a_kernel;
  EXPECT_EQ(Launch(&not_a_kernel, stream_), cudaErrorInvalidDeviceFunction);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDeviceFunction) << "the latest error wins";
  EXPECT_EQ(Launch(Kernel(), reinterpret_cast<cudaStream_t>(0x1234)),
            cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
  // A success does not clear a pending error.
  EXPECT_EQ(cudaMalloc(nullptr, 16), cudaErrorInvalidValue);
  EXPECT_EQ(Launch(Kernel(), stream_), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  // The last error is per thread.
  EXPECT_EQ(cudaFree(reinterpret_cast<void*>(0x10)), cudaErrorInvalidValue);
  cudaError_t other = cudaErrorUnknown;
  std::thread([&] { other = cudaPeekAtLastError(); }).join();
  EXPECT_EQ(other, cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
}

// capture_rules.h: another thread's potentially unsafe call (an event query) is forbidden, and
// invalidates the capture, exactly when the capture was begun in global mode and the querying
// thread's interaction mode is global.
TEST_F(RuntimeTest, OtherThreadsUnsafeCallsFollowBothCaptureModes) {
  const cudaStreamCaptureMode modes[] = {cudaStreamCaptureModeGlobal,
                                         cudaStreamCaptureModeThreadLocal,
                                         cudaStreamCaptureModeRelaxed};
  ASSERT_EQ(cudaEventRecord(start_, stream_), cudaSuccess);  // recorded before any capture
  ASSERT_EQ(cudaEventSynchronize(start_), cudaSuccess);
  cudaStream_t capturing = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&capturing, cudaStreamNonBlocking), cudaSuccess);
  for (cudaStreamCaptureMode capture_mode : modes) {
    for (cudaStreamCaptureMode thread_mode : modes) {
      SCOPED_TRACE(std::to_string(capture_mode) + " capture, querying thread in " +
                   std::to_string(thread_mode));
      ASSERT_EQ(cudaStreamBeginCapture(capturing, capture_mode), cudaSuccess);
      ASSERT_EQ(Launch(Kernel(), capturing), cudaSuccess);
      cudaError_t query = cudaErrorUnknown;
      std::thread([&] {
        cudaStreamCaptureMode mode = thread_mode;
        ASSERT_EQ(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
        EXPECT_EQ(mode, cudaStreamCaptureModeGlobal);  // every thread starts in global mode
        query = cudaEventQuery(start_);
        cudaGetLastError();
      }).join();
      const bool forbidden = capture_mode == cudaStreamCaptureModeGlobal &&
                             thread_mode == cudaStreamCaptureModeGlobal;
      EXPECT_EQ(query, forbidden ? cudaErrorStreamCaptureUnsupported : cudaSuccess);
      cudaGraph_t graph = nullptr;
      EXPECT_EQ(cudaStreamEndCapture(capturing, &graph),
                forbidden ? cudaErrorStreamCaptureInvalidated : cudaSuccess);
      if (graph != nullptr) cudaGraphDestroy(graph);
      cudaGetLastError();
    }
  }
  // After the capture ends nothing is forbidden.
  std::thread([&] { EXPECT_EQ(cudaEventQuery(start_), cudaSuccess); }).join();
  cudaStreamDestroy(capturing);
}

// The capturing thread itself: an allocation is forbidden during its own global or thread-local
// capture unless its interaction mode is relaxed, and allowed during a relaxed capture.
TEST_F(RuntimeTest, OwnCaptureForbidsAllocationUnlessRelaxed) {
  void* p = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&p, 256), cudaErrorStreamCaptureUnsupported);
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(stream_, &graph), cudaErrorStreamCaptureInvalidated);
  cudaGetLastError();

  ASSERT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal), cudaSuccess);
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  ASSERT_EQ(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&p, 256), cudaSuccess);
  ASSERT_EQ(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);  // back to global
  EXPECT_EQ(cudaStreamEndCapture(stream_, &graph), cudaSuccess);
  cudaGraphDestroy(graph);
  cudaFree(p);

  ASSERT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&p, 256), cudaSuccess);
  EXPECT_EQ(cudaStreamEndCapture(stream_, &graph), cudaSuccess);
  cudaGraphDestroy(graph);
  cudaFree(p);
}

TEST_F(RuntimeTest, CaptureAndReplay) {
  int* src = nullptr;
  int* dst = nullptr;
  ASSERT_EQ(cudaMalloc(&src, sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dst, sizeof(int)), cudaSuccess);
  // A blocking call during capture invalidates it.
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream_), cudaErrorStreamCaptureUnsupported);
  cudaStreamCaptureStatus status;
  ASSERT_EQ(cudaStreamIsCapturing(stream_, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusInvalidated);
  EXPECT_EQ(cudaStreamEndCapture(stream_, &graph), cudaErrorStreamCaptureInvalidated);
  EXPECT_EQ(graph, nullptr);
  EXPECT_EQ(cudaStreamEndCapture(stream_, &graph), cudaErrorIllegalState);
  EXPECT_EQ(cudaStreamBeginCapture(cudaStreamLegacy, cudaStreamCaptureModeGlobal),
            cudaErrorStreamCaptureUnsupported);
  cudaGetLastError();

  ASSERT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(cudaStreamIsCapturing(stream_, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusActive);
  for (int i = 0; i < 10; ++i) ASSERT_EQ(Launch(Kernel(), stream_), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(dst, src, sizeof(int), cudaMemcpyDeviceToDevice, stream_),
            cudaSuccess);
  ASSERT_EQ(cudaStreamEndCapture(stream_, &graph), cudaSuccess);
  ASSERT_NE(graph, nullptr);
  size_t nodes = 0;
  ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess);
  EXPECT_EQ(nodes, 11u);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphDestroy(graph), cudaSuccess);  // the executable graph keeps its own copy

  for (int value : {11, 22}) {
    ASSERT_EQ(cudaMemcpy(src, &value, sizeof(int), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaEventRecord(start_, stream_), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(exec, stream_), cudaSuccess);
    ASSERT_EQ(cudaEventRecord(stop_, stream_), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    int out = 0;
    ASSERT_EQ(cudaMemcpy(&out, dst, sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(out, value) << "each replay really copies";
    EXPECT_GE(Elapsed(start_, stop_), 10 * kKernelUs / 1000.0);
  }
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaFree(src), cudaSuccess);
  EXPECT_EQ(cudaFree(dst), cudaSuccess);
}

TEST_F(RuntimeTest, CrossStreamWaitEvent) {
  cudaStream_t other;
  ASSERT_EQ(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), cudaSuccess);
  cudaEvent_t mid;
  ASSERT_EQ(cudaEventCreate(&mid), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(start_, stream_), cudaSuccess);
  ASSERT_EQ(Launch(SlowKernel(), stream_), cudaSuccess);  // 1 ms
  ASSERT_EQ(cudaEventRecord(mid, stream_), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(other, mid, 0), cudaSuccess);
  ASSERT_EQ(Launch(Kernel(), other), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(stop_, other), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(stop_), cudaSuccess);
  EXPECT_GE(Elapsed(start_, stop_), 1.0 + kKernelUs / 1000.0);
  EXPECT_EQ(cudaStreamDestroy(other), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(mid), cudaSuccess);
}

// A task that holds its stream until released, then writes a value: stands in for a collective.
struct HoldTask {
  std::atomic<bool> release{false};
  int* target = nullptr;
  int value = 0;
  static int64_t Run(void* p, int64_t start_ns) {
    auto* t = static_cast<HoldTask*>(p);
    while (!t->release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    *t->target = t->value;
    return start_ns + 1000;
  }
};

TEST_F(RuntimeTest, LegacyStreamWaitsForBlockingStreams) {
  const XtsimApi* api = xtsim_get_api(XTSIM_API_VERSION);
  ASSERT_NE(api, nullptr);
  int* dev = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, sizeof(int)), cudaSuccess);
  HoldTask task;
  task.target = dev;
  task.value = 42;
  ASSERT_EQ(api->enqueue_task(stream_, "hold", HoldTask::Run, nullptr, &task), cudaSuccess);
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    task.release = true;
  });
  int out = 0;
  // cudaMemcpy runs on the legacy stream, which waits for the blocking stream's queued task.
  ASSERT_EQ(cudaMemcpy(&out, dev, sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(out, 42);
  releaser.join();
  EXPECT_EQ(cudaFree(dev), cudaSuccess);
}

TEST_F(RuntimeTest, BlockingStreamsWaitForLegacyNonBlockingDoNot) {
  cudaStream_t nb;
  ASSERT_EQ(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking), cudaSuccess);
  cudaEvent_t before, nb_after;
  ASSERT_EQ(cudaEventCreate(&before), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&nb_after), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(before, nb), cudaSuccess);
  // 50 ms on the legacy stream: far more than the host needs for the next calls, even under
  // sanitizers on a loaded machine.
  for (int i = 0; i < 50; ++i) ASSERT_EQ(Launch(SlowKernel(), cudaStreamLegacy), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(nb_after, nb), cudaSuccess);  // non-blocking: does not wait
  ASSERT_EQ(cudaEventRecord(stop_, stream_), cudaSuccess);  // blocking: waits for the 50 ms
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_GE(Elapsed(before, stop_), 50.0);
  EXPECT_GT(Elapsed(nb_after, stop_), 25.0) << "the non-blocking stream must not wait";
  EXPECT_EQ(cudaEventDestroy(before), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(nb_after), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(nb), cudaSuccess);
}

TEST_F(RuntimeTest, PerThreadDefaultStreams) {
  unsigned long long mine = 0, again = 0, theirs = 0;
  ASSERT_EQ(cudaStreamGetId(cudaStreamPerThread, &mine), cudaSuccess);
  ASSERT_EQ(cudaStreamGetId(cudaStreamPerThread, &again), cudaSuccess);
  std::thread([&] { cudaStreamGetId(cudaStreamPerThread, &theirs); }).join();
  EXPECT_EQ(mine, again);
  EXPECT_NE(mine, theirs);
  EXPECT_EQ(cudaStreamDestroy(cudaStreamPerThread), cudaErrorInvalidResourceHandle);
  cudaGetLastError();
}

TEST_F(RuntimeTest, MemoryAllocationAndAttributes) {
  size_t free0, total;
  ASSERT_EQ(cudaMemGetInfo(&free0, &total), cudaSuccess);
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 64 << 20), cudaSuccess);
  size_t free1;
  ASSERT_EQ(cudaMemGetInfo(&free1, &total), cudaSuccess);
  EXPECT_EQ(free0 - free1, 64u << 20);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(d) % 256, 0u);
  cudaPointerAttributes attr;
  ASSERT_EQ(cudaPointerGetAttributes(&attr, static_cast<char*>(d) + 100), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeDevice);
  EXPECT_EQ(attr.device, 0);
  int local;
  ASSERT_EQ(cudaPointerGetAttributes(&attr, &local), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeUnregistered);
  void* h = nullptr;
  ASSERT_EQ(cudaHostAlloc(&h, 4096, cudaHostAllocMapped), cudaSuccess);
  ASSERT_EQ(cudaPointerGetAttributes(&attr, h), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeHost);
  void* mapped = nullptr;
  ASSERT_EQ(cudaHostGetDevicePointer(&mapped, h, 0), cudaSuccess);
  EXPECT_EQ(mapped, h);
  // Copies move real bytes in every direction, including out of bounds checks.
  std::vector<char> in(4096, 'x'), out(4096, 0);
  ASSERT_EQ(cudaMemcpy(d, in.data(), 4096, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(static_cast<char*>(d) + 10, 'y', 5), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(h, d, 4096, cudaMemcpyDefault), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(out.data(), h, 4096, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(out[9], 'x');
  EXPECT_EQ(out[10], 'y');
  EXPECT_EQ(out[15], 'x');
  EXPECT_EQ(cudaMemcpy(static_cast<char*>(d) + (64 << 20) - 8, in.data(), 16,
                       cudaMemcpyHostToDevice),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(d, in.data(), 16, static_cast<cudaMemcpyKind>(9)),
            cudaErrorInvalidMemcpyDirection);
  void* huge = nullptr;
  EXPECT_EQ(cudaMalloc(&huge, total + 1), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaFree(static_cast<char*>(d) + 1), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(d), cudaSuccess);
  EXPECT_EQ(cudaFree(d), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(h), cudaErrorInvalidValue) << "pinned host memory is freed by cudaFreeHost";
  EXPECT_EQ(cudaFreeHost(h), cudaSuccess);
  EXPECT_EQ(cudaFree(nullptr), cudaSuccess);
  void* async = nullptr;
  ASSERT_EQ(cudaMallocAsync(&async, 1024, stream_), cudaSuccess);
  ASSERT_EQ(cudaFreeAsync(async, stream_), cudaSuccess);
  cudaGetLastError();
}

TEST_F(RuntimeTest, StreamCallbacksRunInOrderAfterPriorWork) {
  std::vector<int> order;
  struct Arg {
    std::vector<int>* order;
    int id;
  };
  Arg a1{&order, 1}, a2{&order, 2};
  auto cb = [](cudaStream_t, cudaError_t status, void* p) {
    auto* a = static_cast<Arg*>(p);
    EXPECT_EQ(status, cudaSuccess);
    a->order->push_back(a->id);
  };
  ASSERT_EQ(Launch(SlowKernel(), stream_), cudaSuccess);
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(cudaStreamAddCallback(stream_, cb, &a1, 0), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(stream_, [](void* p) { static_cast<Arg*>(p)->order->push_back(
                                                          static_cast<Arg*>(p)->id); },
                               &a2),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  double waited =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_GT(waited, 0.5) << "callbacks run after the 1 ms kernel before them";
  EXPECT_EQ(cudaStreamAddCallback(stream_, cb, &a1, 1), cudaErrorInvalidValue);
  cudaGetLastError();
}

// As with the real runtime, a child forked after CUDA was initialized cannot use it. The parent
// forks while its stream's executor is busy; the child's calls fail at once instead of waiting
// on a thread (or a lock) that did not survive the fork.
TEST_F(RuntimeTest, ChildForkedAfterInitializationGetsInitializationError) {
  cudaEvent_t event;
  ASSERT_EQ(cudaEventCreate(&event), cudaSuccess);
  ASSERT_EQ(Launch(SlowKernel(), stream_), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(event, stream_), cudaSuccess);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(30);  // a child hung in a CUDA call dies of SIGALRM, which fails the test below
    void* d = nullptr;
    int wrong = 0;
    for (cudaError_t e :
         {cudaMalloc(&d, 4096), cudaMemsetAsync(d, 0, 4096, stream_),
          cudaStreamSynchronize(stream_), cudaEventRecord(event, stream_),
          cudaEventSynchronize(event), cudaDeviceSynchronize(), cudaStreamDestroy(stream_)}) {
      if (e != cudaErrorInitializationError) ++wrong;
    }
    if (cudaGetLastError() != cudaErrorInitializationError) ++wrong;
    _exit(wrong);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the forked child hung or crashed: status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "calls that did not fail with cudaErrorInitializationError";
  EXPECT_EQ(cudaEventSynchronize(event), cudaSuccess) << "the parent is unaffected";
  EXPECT_EQ(cudaEventDestroy(event), cudaSuccess);
}

}  // namespace

int main(int argc, char** argv) {
  // Read once by the simulator, so set before the first CUDA call.
  setenv("XTIMER_SIM_KERNEL_TIMES", "slowKernel=1000;testKernel=20;holdKernel=300000", 1);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
