// CUDA graph capture beside timed work, as PyTorch's torch.cuda.graph does it: a background thread
// keeps timed kernels running on its own stream while the main thread captures kernels, a copy and
// an all-reduce (capture mode from argv[1]: global, threadlocal or relaxed), with timed work of its
// own in flight on another stream, then replays the graph many times. Under xtimer the poller has
// timed work to query throughout the capture; the capture must succeed exactly as without the hook.
//
// Usage: capture global|threadlocal|relaxed [REPLAYS]. Prints "capture: <error name>", "replays: N"
// and "allreduce: <value>"; exits 0 only when everything succeeded.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>

#include "hook/programs/common.h"

__global__ void timed_kernel(float* x, int n) {}
__global__ void other_kernel(float* x, int n) {}

namespace {

constexpr int kN = 1024;

// The hook's counters (hook/xtimer.h), when the hook is loaded.
struct Stats {
  uint64_t queued, written, ring_dropped, queue_dropped, untimed;
};
using GetStatsFn = int (*)(Stats*);

uint64_t Written(GetStatsFn get_stats) {
  Stats s{};
  return get_stats != nullptr && get_stats(&s) == 0 ? s.written : 0;
}

// With the hook loaded: waits (at most 20 s) until its poller has completed and written `n` more
// timed ops, so that it certainly queried events while the capture is under way.
void LetThePollerWork(GetStatsFn get_stats, int n) {
  if (get_stats == nullptr) return;
  const uint64_t target = Written(get_stats) + n;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (Written(get_stats) < target) {
    if (std::chrono::steady_clock::now() > deadline) {
      printf("the poller wrote nothing during the capture\n");
      return;
    }
    std::this_thread::yield();
  }
}

void Background(float* x, std::atomic<bool>* stop, std::atomic<int>* launched) {
  CHECK(cudaSetDevice(0));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  while (!stop->load()) {
    timed_kernel<<<kN / 256, 256, 0, s>>>(x, kN);
    CHECK(cudaGetLastError());
    launched->fetch_add(1);
  }
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaStreamDestroy(s));
}

cudaStreamCaptureMode ModeOf(const char* name) {
  if (strcmp(name, "global") == 0) return cudaStreamCaptureModeGlobal;
  if (strcmp(name, "threadlocal") == 0) return cudaStreamCaptureModeThreadLocal;
  if (strcmp(name, "relaxed") == 0) return cudaStreamCaptureModeRelaxed;
  fprintf(stderr, "capture: unknown mode %s (global, threadlocal or relaxed)\n", name);
  exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: capture global|threadlocal|relaxed [REPLAYS]\n");
    return 2;
  }
  const cudaStreamCaptureMode mode = ModeOf(argv[1]);
  const int replays = argc > 2 ? atoi(argv[2]) : 50;
  auto get_stats = reinterpret_cast<GetStatsFn>(dlsym(RTLD_DEFAULT, "xtimer_get_stats"));
  CHECK(cudaSetDevice(0));
  ncclUniqueId id;
  CHECK_NCCL(ncclGetUniqueId(&id));
  ncclComm_t comm;
  CHECK_NCCL(ncclCommInitRank(&comm, 1, id, 0));
  float *x, *sum, *copy;
  CHECK(cudaMalloc(&x, kN * sizeof(float)));
  CHECK(cudaMalloc(&sum, sizeof(float)));
  CHECK(cudaMalloc(&copy, sizeof(float)));
  const float one = 1.0f;
  CHECK(cudaMemcpy(x, &one, sizeof(float), cudaMemcpyHostToDevice));
  cudaStream_t capturing, side;
  CHECK(cudaStreamCreateWithFlags(&capturing, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));

  std::atomic<bool> stop{false};
  std::atomic<int> launched{0};
  std::thread background(Background, x, &stop, &launched);
  while (launched.load() < 100) std::this_thread::yield();
  for (int i = 0; i < 20; ++i) timed_kernel<<<kN / 256, 256, 0, side>>>(x, kN);

  CHECK(cudaStreamBeginCapture(capturing, mode));
  for (int i = 0; i < 4; ++i) other_kernel<<<kN / 256, 256, 0, capturing>>>(x, kN);
  CHECK(cudaMemcpyAsync(copy, x, sizeof(float), cudaMemcpyDeviceToDevice, capturing));
  CHECK_NCCL(ncclAllReduce(copy, sum, 1, ncclFloat, ncclSum, comm, capturing));
  timed_kernel<<<kN / 256, 256, 0, side>>>(x, kN);  // this thread's work outside the capture
  LetThePollerWork(get_stats, 20);
  cudaGraph_t graph = nullptr;
  cudaError_t captured = cudaStreamEndCapture(capturing, &graph);
  printf("capture: %s\n", cudaGetErrorName(captured));
  if (captured != cudaSuccess) {
    stop.store(true);
    background.join();
    return 1;
  }

  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < replays; ++i) CHECK(cudaGraphLaunch(exec, capturing));
  CHECK(cudaStreamSynchronize(capturing));
  printf("replays: %d\n", replays);
  stop.store(true);
  background.join();
  float result = 0;
  CHECK(cudaMemcpy(&result, sum, sizeof(float), cudaMemcpyDeviceToHost));
  printf("allreduce: %g\n", result);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK_NCCL(ncclCommDestroy(comm));
  return result == one ? 0 : 1;
}
