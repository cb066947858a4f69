// The hook's own host cost per call (libxtimer.so preloaded vs not, on the GPU simulator).
//   hook_bench [Google Benchmark flags]      wall time per call
//   hook_bench --calls=N OP                  N calls of OP, for callgrind (OP: passthrough,
//                                            timed, memset, allreduce, allreduce2)
// Kernels are zero-length (XTIMER_SIM_KERNEL_TIME_US=0), the stream non-blocking: a GPU that
// keeps up with the host. Every 256 calls the stream is synchronised so the event pool (1024
// timed ops in flight per device) never runs dry. The all-reduce is a 256-byte ncclAllReduce on a
// one-rank communicator (ncclCommInitAll over device 0): the hook's whole collective path
// (describe, sequence, in-flight table, two events, the record) with no peer to wait for.
// allreduce2 is a process driving two devices: one call is a group (ncclGroupStart/End) of the
// same all-reduce on each rank of a two-device communicator (ncclCommInitAll over devices 0
// and 1), so two timed collectives. See hook_cost.sh.
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

__global__ void bench_kernel() {}
__global__ void timed_bench_kernel() {}

static cudaStream_t g_stream;
static void* g_buf;
static ncclComm_t g_comm;
// allreduce2: per device d of 0 and 1, its stream, buffer and communicator rank.
static cudaStream_t g_stream2[2];
static void* g_buf2[2];
static ncclComm_t g_comm2[2];

static void AllReduceOnTwoDevices() {
  ncclGroupStart();
  for (int d = 0; d < 2; ++d) {
    ncclAllReduce(g_buf2[d], g_buf2[d], 64, ncclFloat, ncclSum, g_comm2[d], g_stream2[d]);
  }
  ncclGroupEnd();
}

static void SynchronizeAll() {
  cudaStreamSynchronize(g_stream);
  for (cudaStream_t s : g_stream2) cudaStreamSynchronize(s);
}

static inline void Call(int op) {
  switch (op) {
    case 0: bench_kernel<<<1, 1, 0, g_stream>>>(); break;
    case 1: timed_bench_kernel<<<1, 1, 0, g_stream>>>(); break;
    case 2: cudaMemsetAsync(g_buf, 0, 256, g_stream); break;
    case 3: ncclAllReduce(g_buf, g_buf, 64, ncclFloat, ncclSum, g_comm, g_stream); break;
    default: AllReduceOnTwoDevices(); break;
  }
}

static void Run(benchmark::State& state, int op) {
  int i = 0;
  for (auto _ : state) {
    Call(op);
    if (++i == 256) {
      state.PauseTiming();
      SynchronizeAll();
      state.ResumeTiming();
      i = 0;
    }
  }
  SynchronizeAll();
}
static void BM_LaunchPassThrough(benchmark::State& s) { Run(s, 0); }
static void BM_LaunchTimed(benchmark::State& s) { Run(s, 1); }
static void BM_MemsetAsyncTimed(benchmark::State& s) { Run(s, 2); }
static void BM_AllReduceTimed(benchmark::State& s) { Run(s, 3); }
static void BM_AllReduceTwoDevicesTimed(benchmark::State& s) { Run(s, 4); }
BENCHMARK(BM_LaunchPassThrough);
BENCHMARK(BM_LaunchTimed);
BENCHMARK(BM_MemsetAsyncTimed);
BENCHMARK(BM_AllReduceTimed);
BENCHMARK(BM_AllReduceTwoDevicesTimed);

int main(int argc, char** argv) {
  if (cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking) != cudaSuccess ||
      cudaMalloc(&g_buf, 4096) != cudaSuccess) {
    fprintf(stderr, "hook_bench: no device\n");
    return 1;
  }
  const int devices[] = {0, 1};
  for (int d = 1; d >= 0; --d) {  // ends on device 0, the other ops' device
    if (cudaSetDevice(d) != cudaSuccess ||
        cudaStreamCreateWithFlags(&g_stream2[d], cudaStreamNonBlocking) != cudaSuccess ||
        cudaMalloc(&g_buf2[d], 4096) != cudaSuccess) {
      fprintf(stderr, "hook_bench: no device %d\n", d);
      return 1;
    }
  }
  if (ncclCommInitAll(&g_comm, 1, devices) != ncclSuccess ||
      ncclCommInitAll(g_comm2, 2, devices) != ncclSuccess) {
    fprintf(stderr, "hook_bench: ncclCommInitAll failed\n");
    return 1;
  }
  if (argc == 3 && strncmp(argv[1], "--calls=", 8) == 0) {
    long n = atol(argv[1] + 8);
    const char* const kOps[] = {"passthrough", "timed", "memset", "allreduce", "allreduce2"};
    int op = -1;
    for (int i = 0; i < 5; ++i) {
      if (strcmp(argv[2], kOps[i]) == 0) op = i;
    }
    if (op < 0) {
      fprintf(stderr, "hook_bench: unknown op %s\n", argv[2]);
      return 2;
    }
    for (long i = 0; i < n; ++i) {
      Call(op);
      if (i % 256 == 255) SynchronizeAll();
    }
    SynchronizeAll();
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
