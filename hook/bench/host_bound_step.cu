// A host-bound training step shaped like the real-GPU check's PyTorch loop (docs/gpu-check.md,
// "train cost": 32 bf16 Linear(256) layers, batch 32, every gradient all-reduced, SGD), for the
// overhead benchmark (overhead.sh, docs/benchmarks.md). Per step, as PyTorch issues them:
//   forward   32 x (GEMM + elementwise kernel)
//   backward  32 x (2 GEMMs + elementwise kernel) + 64 all-reduces (weights and biases)
//   optimizer 64 elementwise kernels (one per parameter); loss: 3 kernels; one sync
// about 390 GPU ops of which 64 collectives. Between two ops the host spends the framework's own
// time (Python, dispatcher, autograd): --host-us per op (default 8 µs, busy-waited), the figure
// that makes the step host-bound as on the H200 (3.9 ms for the loop above). Prints the median
// step time of the measured steps. With --ranks N (default 1, as the real-GPU check's one GPU),
// N processes (forked before any CUDA call) form one communicator, as a data-parallel job's
// ranks do; rank 0 prints its median step.
// Usage: host_bound_step [--steps N] [--warmup N] [--host-us US] [--ranks N]
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "hook/programs/common.h"

__global__ void elementwise_kernel(float* x, int n) {}

namespace {

constexpr int kLayers = 32;
constexpr int kWidth = 256;
constexpr int kBatch = 32;

using Clock = std::chrono::steady_clock;

// The framework's own host time before an op: spent, not slept (a sleep would free the core).
void FrameworkTime(double us) {
  const auto until = Clock::now() + std::chrono::nanoseconds(static_cast<int64_t>(us * 1000));
  while (Clock::now() < until) {
  }
}

struct Model {
  cublasHandle_t blas;
  ncclComm_t comm;
  cudaStream_t stream;
  __nv_bfloat16 *w, *act, *grad;
  float* scratch;
};

void Gemm(const Model& m, int rows, int cols, int inner, double host_us) {
  FrameworkTime(host_us);
  const float one = 1.0f, zero = 0.0f;
  CHECK_BLAS(cublasGemmEx(m.blas, CUBLAS_OP_N, CUBLAS_OP_N, rows, cols, inner, &one, m.w,
                          CUDA_R_16BF, rows, m.act, CUDA_R_16BF, inner, &zero, m.grad, CUDA_R_16BF,
                          rows, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void Kernel(const Model& m, double host_us) {
  FrameworkTime(host_us);
  elementwise_kernel<<<kBatch * kWidth / 256, 256, 0, m.stream>>>(m.scratch, kBatch * kWidth);
}

void AllReduce(const Model& m, size_t count, double host_us) {
  FrameworkTime(host_us);
  CHECK_NCCL(ncclAllReduce(m.grad, m.grad, count, ncclBfloat16, ncclSum, m.comm, m.stream));
}

void Step(const Model& m, double host_us) {
  for (int l = 0; l < kLayers; ++l) {
    Gemm(m, kWidth, kBatch, kWidth, host_us);
    Kernel(m, host_us);
  }
  for (int i = 0; i < 3; ++i) Kernel(m, host_us);  // the loss
  for (int l = 0; l < kLayers; ++l) {
    Gemm(m, kWidth, kBatch, kWidth, host_us);  // input gradient
    Gemm(m, kWidth, kWidth, kBatch, host_us);  // weight gradient
    Kernel(m, host_us);
    AllReduce(m, kWidth * kWidth, host_us);    // weight
    AllReduce(m, kWidth, host_us);             // bias
  }
  for (int p = 0; p < 2 * kLayers; ++p) Kernel(m, host_us);  // SGD
  CHECK(cudaStreamSynchronize(m.stream));
}

// Forks ranks 1..ranks-1 before any CUDA call; rank 0 makes the communicator's id and sends it
// to each through a pipe. Returns this process's rank, with *id set.
int ForkRanks(int ranks, ncclUniqueId* id) {
  int fds[2];
  if (ranks > 1 && pipe(fds) != 0) {
    perror("pipe");
    exit(1);
  }
  for (int r = 1; r < ranks; ++r) {
    if (fork() == 0) {
      close(fds[1]);
      if (read(fds[0], id, sizeof(*id)) != static_cast<ssize_t>(sizeof(*id))) _exit(1);
      return r;
    }
  }
  CHECK_NCCL(ncclGetUniqueId(id));
  for (int r = 1; r < ranks; ++r) {
    if (write(fds[1], id, sizeof(*id)) != static_cast<ssize_t>(sizeof(*id))) exit(1);
  }
  return 0;
}

// Rank 0 waits for the others; false when one failed.
bool JoinRanks(int ranks) {
  bool ok = true;
  for (int r = 1; r < ranks; ++r) {
    int status = 0;
    if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) ok = false;
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 200, warmup = 20, ranks = 1;
  double host_us = 8;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--steps") && i + 1 < argc) {
      steps = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) {
      warmup = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--host-us") && i + 1 < argc) {
      host_us = atof(argv[++i]);
    } else if (!strcmp(argv[i], "--ranks") && i + 1 < argc && atoi(argv[i + 1]) >= 1) {
      ranks = atoi(argv[++i]);
    } else {
      fprintf(stderr,
              "usage: host_bound_step [--steps N] [--warmup N] [--host-us US] [--ranks N]\n");
      return 2;
    }
  }
  ncclUniqueId id;
  const int rank = ForkRanks(ranks, &id);
  Model m;
  CHECK(cudaSetDevice(0));
  CHECK(cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking));
  CHECK_BLAS(cublasCreate(&m.blas));
  CHECK_BLAS(cublasSetStream(m.blas, m.stream));
  CHECK_NCCL(ncclCommInitRank(&m.comm, ranks, id, rank));
  CHECK(cudaMalloc(&m.w, kWidth * kWidth * sizeof(__nv_bfloat16)));
  CHECK(cudaMalloc(&m.act, kWidth * kWidth * sizeof(__nv_bfloat16)));
  CHECK(cudaMalloc(&m.grad, kWidth * kWidth * sizeof(__nv_bfloat16)));
  CHECK(cudaMalloc(&m.scratch, kBatch * kWidth * sizeof(float)));
  std::vector<double> ms;
  for (int s = 0; s < warmup + steps; ++s) {
    const auto t0 = Clock::now();
    Step(m, host_us);
    if (s >= warmup) ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  CHECK_NCCL(ncclCommDestroy(m.comm));
  CHECK_BLAS(cublasDestroy(m.blas));
  if (rank != 0) return 0;
  if (!JoinRanks(ranks)) {
    fprintf(stderr, "host_bound_step: a rank failed\n");
    return 1;
  }
  printf("median step %.3f ms over %d steps (%.1f us of framework time per op, %d ranks)\n",
         ms[ms.size() / 2], steps, host_us, ranks);
  return 0;
}
