// An ordinary CUDA program (built by nvcc against the real libcudart.so.13) that checks the
// behaviour a training framework relies on. On the GPU simulator it must print "OK" and exit 0.
// Also built with --default-stream per-thread, which routes every call through the _ptsz/_ptds
// entry points. Kernel times come from XTIMER_SIM_KERNEL_TIMES (set by the test script).
#include <cuda_runtime.h>

#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t e_ = (call);                                                          \
    if (e_ != cudaSuccess) {                                                          \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,            \
              cudaGetErrorString(e_));                                                \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

#define EXPECT(cond)                                                                  \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      fprintf(stderr, "%s:%d: expectation failed: %s\n", __FILE__, __LINE__, #cond); \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

__global__ void scale_kernel(float* x, int n, float f) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= f;
}

// Holds the stream until the host has enqueued every timed launch (a host function may block on
// the host; it makes no CUDA call), so the launches run back to back however slowly the host
// enqueues them (a loaded machine, sanitizers): host launch overhead stays out of the measurement.
struct HostGate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
};

void CUDART_CB WaitForGate(void* arg) {
  HostGate* g = static_cast<HostGate*>(arg);
  std::unique_lock<std::mutex> lock(g->mu);
  g->cv.wait(lock, [g] { return g->open; });
}

void OpenGate(HostGate* g) {
  {
    std::lock_guard<std::mutex> lock(g->mu);
    g->open = true;
  }
  g->cv.notify_all();
}

template <typename T>
__global__ void fill_kernel(T* x, int n, T v) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = v;
}

int main(int argc, char** argv) {
  double expected_kernel_us = argc > 1 ? atof(argv[1]) : 50.0;
  int n = 0;
  CHECK(cudaGetDeviceCount(&n));
  EXPECT(n > 0);
  CHECK(cudaSetDevice(n - 1));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));

  const int count = 1 << 16;
  float* d = nullptr;
  CHECK(cudaMalloc(&d, count * sizeof(float)));
  float* h = nullptr;
  CHECK(cudaMallocHost(&h, count * sizeof(float)));
  for (int i = 0; i < count; ++i) h[i] = static_cast<float>(i);

  // Kernel timing through the nvcc launch path (__cudaGetKernel / __cudaLaunchKernel).
  CHECK(cudaMemcpyAsync(d, h, count * sizeof(float), cudaMemcpyHostToDevice, s));
  // The launches queue behind a gate the host opens once all are enqueued (HostGate).
  HostGate gate;
  CHECK(cudaLaunchHostFunc(s, WaitForGate, &gate));
  CHECK(cudaEventRecord(a, s));
  const int launches = 20;
  for (int i = 0; i < launches; ++i) scale_kernel<<<count / 256, 256, 0, s>>>(d, count, 2.0f);
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(b, s));
  OpenGate(&gate);
  CHECK(cudaEventSynchronize(b));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, a, b));
  double per_kernel_us = ms * 1000.0 / launches;
  printf("kernel: %.2f us per launch (expected %.2f)\n", per_kernel_us, expected_kernel_us);
  EXPECT(std::fabs(per_kernel_us - expected_kernel_us) < 0.02 * expected_kernel_us);

  // Copies move real bytes (kernels do not run on the simulator, so the data is unchanged).
  std::vector<float> back(count);
  CHECK(cudaMemcpy(back.data(), d, count * sizeof(float), cudaMemcpyDeviceToHost));
  EXPECT(back[1234] == 1234.0f);

  // Launch errors are reported by cudaGetLastError / cudaPeekAtLastError, as PyTorch checks them.
  scale_kernel<<<1, 4096, 0, s>>>(d, count, 1.0f);
  EXPECT(cudaPeekAtLastError() == cudaErrorInvalidConfiguration);
  EXPECT(cudaGetLastError() == cudaErrorInvalidConfiguration);
  EXPECT(cudaGetLastError() == cudaSuccess);
  fill_kernel<int><<<dim3(1, 70000), 32, 0, s>>>(reinterpret_cast<int*>(d), 8, 1);
  EXPECT(cudaGetLastError() == cudaErrorInvalidConfiguration);

  // Names of template kernels come back mangled, as from the real runtime.
  const char* name = nullptr;
  CHECK(cudaFuncGetName(&name, reinterpret_cast<const void*>(fill_kernel<float>)));
  printf("kernel name: %s\n", name);
  EXPECT(strstr(name, "fill_kernel") != nullptr);
  cudaFuncAttributes attr;
  CHECK(cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(scale_kernel)));
  EXPECT(attr.maxThreadsPerBlock == 1024);

  // A captured graph replays its kernels.
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < 5; ++i) fill_kernel<float><<<count / 256, 256, 0, s>>>(d, count, 1.0f);
  CHECK(cudaStreamEndCapture(s, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cudaEventRecord(a, s));
  CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaEventRecord(b, s));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaEventElapsedTime(&ms, a, b));
  printf("graph of 5 kernels: %.3f ms\n", ms);
  EXPECT(ms > 0);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));

  CHECK(cudaFree(d));
  CHECK(cudaFreeHost(h));
  EXPECT(cudaFree(d) == cudaErrorInvalidValue);
  EXPECT(cudaGetLastError() == cudaErrorInvalidValue);
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaDeviceSynchronize());
  printf("OK\n");
  return 0;
}
