// NVTX ranges on the thread that launches ops, against the overhead budget
// (//hook:budget_program_test). Two threads, one after the other, launch ops at the same steady
// rate (SPIN_US of busy host time before each, a deadline, not a sleep): the first launches
// kernels, the second memsets with PAIRS NVTX push/pop pairs (a kernel-sized name) before each
// as well. Each thread first launches copies (a kind of its own, with the same time before each)
// until 100 ms have passed since its start, measured before the copy: its first window (5 ms,
// timed in full: docs/hook.md "The overhead budget") is then over and the next has lasted 50 ms
// or more, so that every kernel and memset is decided by a period the thread learned from its
// own work.
// Prints "kernel_ns N" and "memset_ns N" (each phase's time, after the copies), then "OK".
// Usage: budget_nvtx OPS PAIRS SPIN_US
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "hook/programs/common.h"

__global__ void step_kernel(float* x) {}

namespace {

using Clock = std::chrono::steady_clock;

// A range named as PyTorch names kernels: hundreds of characters of template arguments.
std::string RangeName() {
  std::string name = "void at::native::elementwise_kernel<128, 4";
  for (int i = 0; i < 10; ++i) {
    name += ", at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<float, float, float>>";
  }
  return name + ">(int, T1)";
}

struct Phase {
  long ops, pairs;
  int64_t spin_ns;
  float *a, *b;
  cudaStream_t stream;
  int64_t ns;  // the phase's time, after the warm-up
};

// Busy host time, then the NVTX pairs (the thread's time between two of its ops).
void Between(const Phase& p, const char* name) {
  const auto until = Clock::now() + std::chrono::nanoseconds(p.spin_ns);
  while (Clock::now() < until) {
  }
  for (long i = 0; i < p.pairs; ++i) {
    nvtxRangePushA(name);
    nvtxRangePop();
  }
}

void Run(Phase* p, bool kernels) {
  const std::string name = RangeName();
  const auto start = Clock::now();
  bool warm = false;
  while (!warm) {
    warm = Clock::now() - start >= std::chrono::milliseconds(100);
    Between(*p, name.c_str());
    CHECK(cudaMemcpyAsync(p->b, p->a, sizeof(float), cudaMemcpyDeviceToDevice, p->stream));
  }
  const auto phase = Clock::now();
  for (long i = 0; i < p->ops; ++i) {
    Between(*p, name.c_str());
    if (kernels) {
      step_kernel<<<1, 32, 0, p->stream>>>(p->a);
    } else {
      CHECK(cudaMemsetAsync(p->a, 0, sizeof(float), p->stream));
    }
  }
  p->ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - phase).count();
  CHECK(cudaStreamSynchronize(p->stream));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: budget_nvtx OPS PAIRS SPIN_US\n");
    return 2;
  }
  Phase plain = {atol(argv[1]), 0, static_cast<int64_t>(atof(argv[3]) * 1000)};
  Phase nvtx = plain;
  nvtx.pairs = atol(argv[2]);
  // NVTX loads its injection on its first call: here, before the threads (its double-checked
  // initialisation is a benign race ThreadSanitizer reports).
  nvtxInitialize(nullptr);
  for (Phase* p : {&plain, &nvtx}) {
    CHECK(cudaMalloc(&p->a, sizeof(float)));
    CHECK(cudaMalloc(&p->b, sizeof(float)));
    CHECK(cudaStreamCreateWithFlags(&p->stream, cudaStreamNonBlocking));
  }
  std::thread([&plain] { Run(&plain, true); }).join();
  std::thread([&nvtx] { Run(&nvtx, false); }).join();
  printf("kernel_ns %lld\nmemset_ns %lld\nOK\n", static_cast<long long>(plain.ns),
         static_cast<long long>(nvtx.ns));
  return 0;
}
