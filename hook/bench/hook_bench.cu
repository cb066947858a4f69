// The hook's own host cost per call (libxtimer.so preloaded vs not, on the GPU simulator).
//   hook_bench [Google Benchmark flags]      wall time per call
//   hook_bench --calls=N OP                  N calls of OP, for callgrind (OP: passthrough,
//                                            timed, memset)
// Kernels are zero-length (XTIMER_SIM_KERNEL_TIME_US=0), the stream non-blocking: a GPU that
// keeps up with the host. Every 256 calls the stream is synchronised so the event pool (1024
// timed ops in flight per device) never runs dry. See hook_cost.sh.
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

__global__ void bench_kernel() {}
__global__ void timed_bench_kernel() {}

static cudaStream_t g_stream;
static void* g_buf;

static inline void Call(int op) {
  switch (op) {
    case 0: bench_kernel<<<1, 1, 0, g_stream>>>(); break;
    case 1: timed_bench_kernel<<<1, 1, 0, g_stream>>>(); break;
    default: cudaMemsetAsync(g_buf, 0, 256, g_stream); break;
  }
}

static void Run(benchmark::State& state, int op) {
  int i = 0;
  for (auto _ : state) {
    Call(op);
    if (++i == 256) {
      state.PauseTiming();
      cudaStreamSynchronize(g_stream);
      state.ResumeTiming();
      i = 0;
    }
  }
  cudaStreamSynchronize(g_stream);
}
static void BM_LaunchPassThrough(benchmark::State& s) { Run(s, 0); }
static void BM_LaunchTimed(benchmark::State& s) { Run(s, 1); }
static void BM_MemsetAsyncTimed(benchmark::State& s) { Run(s, 2); }
BENCHMARK(BM_LaunchPassThrough);
BENCHMARK(BM_LaunchTimed);
BENCHMARK(BM_MemsetAsyncTimed);

int main(int argc, char** argv) {
  if (cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking) != cudaSuccess ||
      cudaMalloc(&g_buf, 4096) != cudaSuccess) {
    fprintf(stderr, "hook_bench: no device\n");
    return 1;
  }
  if (argc == 3 && strncmp(argv[1], "--calls=", 8) == 0) {
    long n = atol(argv[1] + 8);
    int op = strcmp(argv[2], "passthrough") == 0 ? 0 : strcmp(argv[2], "timed") == 0 ? 1 : 2;
    for (long i = 0; i < n; ++i) {
      Call(op);
      if (i % 256 == 255) cudaStreamSynchronize(g_stream);
    }
    cudaStreamSynchronize(g_stream);
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
