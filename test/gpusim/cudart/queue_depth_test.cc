// The stream launch queue is bounded (XTIMER_SIM_STREAM_QUEUE_DEPTH, set to kDepth in main):
// launches block the host when a stream holds that many pending operations, as a real CUDA
// launch queue does, and the bound never deadlocks events, callbacks or graph replays.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

extern "C" void __cudaRegisterFunction(void**, const char*, char*, const char*, int, uint3*, uint3*,
                                       dim3*, dim3*, int*);

namespace {

constexpr int kDepth = 64;

void FastStub() {}
void SlowStub() {}

void Register() {
  static const bool registered = [] {
    __cudaRegisterFunction(nullptr, reinterpret_cast<const char*>(&FastStub), nullptr,
                           "_Z10fastKernelv", -1, nullptr, nullptr, nullptr, nullptr, nullptr);
    __cudaRegisterFunction(nullptr, reinterpret_cast<const char*>(&SlowStub), nullptr,
                           "_Z10slowKernelv", -1, nullptr, nullptr, nullptr, nullptr, nullptr);
    return true;
  }();
  (void)registered;
}

cudaError_t Launch(void (*stub)(), cudaStream_t s) {
  Register();
  return cudaLaunchKernel(reinterpret_cast<const void*>(stub), dim3(1), dim3(32), nullptr, 0, s);
}

double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

class QueueDepthTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess); }
  void TearDown() override {
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    EXPECT_EQ(cudaStreamDestroy(stream_), cudaSuccess);
  }
  cudaStream_t stream_ = nullptr;
};

// A host function that holds its stream until released: everything behind it queues.
TEST_F(QueueDepthTest, LaunchBlocksWhileTheQueueIsFull) {
  std::atomic<bool> release{false};
  ASSERT_EQ(cudaLaunchHostFunc(
                stream_,
                [](void* p) {
                  auto* r = static_cast<std::atomic<bool>*>(p);
                  while (!r->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
                },
                &release),
            cudaSuccess);
  constexpr int kLaunches = 20 * kDepth;
  std::atomic<int> launched{0};
  std::thread host([&] {
    for (int i = 0; i < kLaunches; ++i) {
      ASSERT_EQ(Launch(FastStub, stream_), cudaSuccess);
      launched.fetch_add(1);
    }
  });
  // The host fills the queue (the held host function is one of its kDepth entries), then stops.
  const auto t0 = std::chrono::steady_clock::now();
  while (launched.load() < kDepth - 1 && MsSince(t0) < 30000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(launched.load(), kDepth - 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(launched.load(), kDepth - 1) << "a launch into a full queue returned";
  release.store(true);
  host.join();
  EXPECT_EQ(launched.load(), kLaunches);
}

// Kernels that never queue still occupy the stream until their modelled end: 3·kDepth launches
// of a 1 ms kernel return only after about 2·kDepth of them have finished.
TEST_F(QueueDepthTest, InlineLaunchesArePacedByTheModelledGpu) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 3 * kDepth; ++i) ASSERT_EQ(Launch(SlowStub, stream_), cudaSuccess);
  const double host_ms = MsSince(t0);
  EXPECT_GE(host_ms, 0.9 * 2 * kDepth) << "launches did not block on a full queue";
}

// Waits on events whose records sit far back in another stream's full queue make progress.
TEST_F(QueueDepthTest, CrossStreamWaitsDoNotDeadlock) {
  cudaStream_t other;
  cudaEvent_t ev;
  ASSERT_EQ(cudaStreamCreate(&other), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), cudaSuccess);
  for (int i = 0; i < 10 * kDepth; ++i) {
    ASSERT_EQ(Launch(FastStub, other), cudaSuccess);
    ASSERT_EQ(cudaEventRecord(ev, other), cudaSuccess);
    ASSERT_EQ(cudaStreamWaitEvent(stream_, ev, 0), cudaSuccess);
    ASSERT_EQ(Launch(FastStub, stream_), cudaSuccess);
  }
  EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(other), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(ev), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(other), cudaSuccess);
}

// A graph is one launch: a graph of more operations than the depth replays, repeatedly.
TEST_F(QueueDepthTest, GraphLargerThanTheQueueReplays) {
  ASSERT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal), cudaSuccess);
  for (int i = 0; i < 3 * kDepth; ++i) ASSERT_EQ(Launch(FastStub, stream_), cudaSuccess);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(stream_, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(cudaGraphLaunch(exec, stream_), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
}

}  // namespace

int main(int argc, char** argv) {
  // Read once by the simulator, so set before the first CUDA call.
  setenv("XTIMER_SIM_STREAM_QUEUE_DEPTH", std::to_string(kDepth).c_str(), 1);
  setenv("XTIMER_SIM_KERNEL_TIMES", "slowKernel=1000;fastKernel=20", 1);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
