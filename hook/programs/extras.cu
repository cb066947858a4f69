// More nvcc-built programs for hook:program_test, one mode each (real CUDA 13 libraries):
//   extras sample      40 + 8 identical SGEMMs of two shapes and 8 all-reduces on 2 ranks
//                      (run with XTIMER_SAMPLE_RATE=4)
//   extras gemm64      the _64 GEMM entry points, each with one size above INT32_MAX
//   extras initall     ncclCommInitAll over 3 devices, two grouped all-reduces on every comm
//   extras shrink      3 ranks; ranks 0 and 1 shrink rank 2 away and all-reduce on the child
//   extras scalable    2 ranks created by ncclCommInitRankScalable (2 ids), one all-reduce
//   extras lifecycle   ncclCommFinalize + Destroy and ncclCommAbort, return values printed
//   extras inflight    2 ranks, 2 all-reduces; before the second, rank 0 launches delay_kernel
//                      on its stream (long with XTIMER_SIM_KERNEL_TIMES), so its all-reduce is
//                      queued behind it while rank 1 waits in its own
// Every mode prints what the test needs to recompute ids ("pid=", "id0=") and ends with "OK".
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "hook/programs/common.h"
#include "hook/programs/ranks.h"


static const size_t kCount = 1 << 20;  // floats per all-reduce: 4 MiB


static void Sample() {
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cublasHandle_t h;
  CHECK_BLAS(cublasCreate(&h));
  CHECK_BLAS(cublasSetStream(h, s));
  float *a, *b, *c;
  CHECK(cudaMalloc(&a, 1024 * 1024 * 4));
  CHECK(cudaMalloc(&b, 1024 * 1024 * 4));
  CHECK(cudaMalloc(&c, 1024 * 1024 * 4));
  float alpha = 1, beta = 0;
  delay_kernel<<<1, 1, 0, s>>>(0);
  for (int i = 0; i < 40; ++i) {
    // Shape A: 1024 x 512 x 256, 40 times.
    CHECK_BLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 1024, 512, 256, &alpha, a, 1024, b, 256,
                           &beta, c, 1024));
    // Shape B: 256 x 256 x 256, 8 times, interleaved.
    if (i % 5 == 0) {
      CHECK_BLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 256, 256, 256, &alpha, a, 256, b, 256,
                             &beta, c, 256));
    }
  }
  CHECK(cudaStreamSynchronize(s));
  CHECK_BLAS(cublasDestroy(h));
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(c));
  CHECK(cudaStreamDestroy(s));
  Ranks(2, kCount, [](int, ncclComm_t comm, cudaStream_t s, float* send, float* recv) {
    delay_kernel<<<1, 1, 0, s>>>(0);
    for (int i = 0; i < 8; ++i) {
      CHECK_NCCL(ncclAllReduce(send, recv, kCount, ncclFloat, ncclSum, comm, s));
    }
    CHECK(cudaStreamSynchronize(s));
    CHECK_NCCL(ncclCommDestroy(comm));
  });
}

// Each entry point has one size above INT32_MAX (the simulator does not touch the buffers).
static void Gemm64() {
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cublasHandle_t h;
  CHECK_BLAS(cublasCreate(&h));
  CHECK_BLAS(cublasSetStream(h, s));
  void *a, *b, *c;
  CHECK(cudaMalloc(&a, 1 << 20));
  CHECK(cudaMalloc(&b, 1 << 20));
  CHECK(cudaMalloc(&c, 1 << 20));
  void* ptrs[3] = {a, b, c};
  void** arrays;  // device arrays of pointers for the batched call
  CHECK(cudaMalloc(&arrays, sizeof(ptrs)));
  CHECK(cudaMemcpy(arrays, ptrs, sizeof(ptrs), cudaMemcpyHostToDevice));
  float alpha = 1, beta = 0;
  const int64_t big = 3000000000LL;
  delay_kernel<<<1, 1, 0, s>>>(0);
  // bf16, m = 3e9 x n = 16 x k = 32, op(A) = A^T (A stored k x m).
  CHECK_BLAS(cublasGemmEx_64(h, CUBLAS_OP_T, CUBLAS_OP_N, big, 16, 32, &alpha, a, CUDA_R_16BF, 32,
                             b, CUDA_R_16BF, 32, &beta, c, CUDA_R_16BF, big, CUBLAS_COMPUTE_32F,
                             CUBLAS_GEMM_DEFAULT));
  // fp32, 64 x 2.2e9 x 2, op(B) = B^T (B stored n x k).
  const int64_t n_big = 2200000000LL;
  CHECK_BLAS(cublasSgemm_64(h, CUBLAS_OP_N, CUBLAS_OP_T, 64, n_big, 2, &alpha, (float*)a, 64,
                            (float*)b, n_big, &beta, (float*)c, 64));
  // bf16 strided batched, 8 x 8 x 2.5e9, batch 3.
  const int64_t k_big = 2500000000LL;
  CHECK_BLAS(cublasGemmStridedBatchedEx_64(h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, k_big, &alpha, a,
                                           CUDA_R_16BF, 8, 0, b, CUDA_R_16BF, k_big, 0, &beta, c,
                                           CUDA_R_16BF, 8, 0, 3, CUBLAS_COMPUTE_32F,
                                           CUBLAS_GEMM_DEFAULT));
  // fp32 strided batched, 1 x 1 x 1, batch 3e9.
  CHECK_BLAS(cublasSgemmStridedBatched_64(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &alpha, (float*)a,
                                          1, 1, (float*)b, 1, 1, &beta, (float*)c, 1, 1, big));
  // bf16 batched (pointer arrays), 2^31 + 1 x 4 x 4, batch 1.
  const int64_t m_big = (1LL << 31) + 1;
  CHECK_BLAS(cublasGemmBatchedEx_64(h, CUBLAS_OP_N, CUBLAS_OP_N, m_big, 4, 4, &alpha,
                                    (const void* const*)arrays, CUDA_R_16BF, m_big,
                                    (const void* const*)arrays, CUDA_R_16BF, 4, &beta,
                                    (void* const*)arrays, CUDA_R_16BF, m_big, 1,
                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  CHECK(cudaStreamSynchronize(s));
  CHECK_BLAS(cublasDestroy(h));
  CHECK(cudaFree(arrays));
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(c));
  CHECK(cudaStreamDestroy(s));
}

static void InitAll() {
  const int ndev = 3;
  ncclComm_t comms[ndev];
  CHECK_NCCL(ncclCommInitAll(comms, ndev, nullptr));
  cudaStream_t s[ndev];
  float* send[ndev];
  float* recv[ndev];
  for (int i = 0; i < ndev; ++i) {
    CHECK(cudaSetDevice(i));
    CHECK(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
    CHECK(cudaMalloc(&send[i], kCount * 4));
    CHECK(cudaMalloc(&recv[i], kCount * 4));
    delay_kernel<<<1, 1, 0, s[i]>>>(0);
  }
  // The usual single-thread pattern: the current device is the last one set (2), yet each op
  // runs on its communicator's device.
  for (int round = 0; round < 2; ++round) {
    CHECK_NCCL(ncclGroupStart());
    for (int i = 0; i < ndev; ++i) {
      CHECK_NCCL(ncclAllReduce(send[i], recv[i], kCount, ncclFloat, ncclSum, comms[i], s[i]));
    }
    CHECK_NCCL(ncclGroupEnd());
  }
  for (int i = 0; i < ndev; ++i) {
    CHECK(cudaSetDevice(i));
    CHECK(cudaStreamSynchronize(s[i]));
    CHECK_NCCL(ncclCommDestroy(comms[i]));
    CHECK(cudaFree(send[i]));
    CHECK(cudaFree(recv[i]));
    CHECK(cudaStreamDestroy(s[i]));
  }
  printf("pid=%d\n", static_cast<int>(getpid()));
}

static void Shrink() {
  Ranks(3, kCount, [](int rank, ncclComm_t comm, cudaStream_t s, float* send, float* recv) {
    delay_kernel<<<1, 1, 0, s>>>(0);
    CHECK_NCCL(ncclAllReduce(send, recv, kCount, ncclFloat, ncclSum, comm, s));
    CHECK(cudaStreamSynchronize(s));
    if (rank != 2) {  // only the survivors call shrink
      int exclude[1] = {2};
      ncclComm_t child;
      CHECK_NCCL(ncclCommShrink(comm, exclude, 1, &child, nullptr, NCCL_SHRINK_DEFAULT));
      delay_kernel<<<1, 1, 0, s>>>(0);
      CHECK_NCCL(ncclAllReduce(send, recv, kCount, ncclFloat, ncclSum, child, s));
      CHECK(cudaStreamSynchronize(s));
      CHECK_NCCL(ncclCommDestroy(child));
    }
    CHECK_NCCL(ncclCommDestroy(comm));
  });
}

static void Scalable() {
  ncclUniqueId ids[2];
  CHECK_NCCL(ncclGetUniqueId(&ids[0]));
  CHECK_NCCL(ncclGetUniqueId(&ids[1]));
  printf("id0=");
  for (size_t i = 0; i < sizeof(ids[0]); ++i) {
    printf("%02x", static_cast<unsigned char>(ids[0].internal[i]));
  }
  printf("\n");
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      CHECK(cudaSetDevice(r));
      cudaStream_t s;
      CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      ncclComm_t comm;
      CHECK_NCCL(ncclCommInitRankScalable(&comm, 2, r, 2, ids, nullptr));
      float *send, *recv;
      CHECK(cudaMalloc(&send, kCount * 4));
      CHECK(cudaMalloc(&recv, kCount * 4));
      delay_kernel<<<1, 1, 0, s>>>(0);
      CHECK_NCCL(ncclAllReduce(send, recv, kCount, ncclFloat, ncclSum, comm, s));
      CHECK(cudaStreamSynchronize(s));
      CHECK_NCCL(ncclCommDestroy(comm));
      CHECK(cudaFree(send));
      CHECK(cudaFree(recv));
      CHECK(cudaStreamDestroy(s));
    });
  }
  for (auto& t : threads) t.join();
}

// Return values are printed (the test compares them with and without the hook).
static void Lifecycle() {
  std::mutex mu;
  auto report = [&](int rank, const char* what, ncclResult_t r) {
    std::lock_guard<std::mutex> lock(mu);
    printf("rank %d %s -> %d\n", rank, what, static_cast<int>(r));
  };
  Ranks(2, kCount, [&](int rank, ncclComm_t comm, cudaStream_t s, float* send, float* recv) {
    delay_kernel<<<1, 1, 0, s>>>(0);
    CHECK_NCCL(ncclAllReduce(send, recv, kCount, ncclFloat, ncclSum, comm, s));
    CHECK(cudaStreamSynchronize(s));
    ncclComm_t child;
    CHECK_NCCL(ncclCommSplit(comm, 0, rank, &child, nullptr));
    CHECK_NCCL(ncclAllReduce(send, recv, kCount, ncclFloat, ncclSum, child, s));
    CHECK(cudaStreamSynchronize(s));
    report(rank, "finalize", ncclCommFinalize(comm));
    report(rank, "destroy", ncclCommDestroy(comm));
    report(rank, "abort", ncclCommAbort(child));
  });
  // Errors pass through unchanged.
  printf("finalize(null) -> %d\n", static_cast<int>(ncclCommFinalize(nullptr)));
  printf("abort(null) -> %d\n", static_cast<int>(ncclCommAbort(nullptr)));
  printf("destroy(null) -> %d\n", static_cast<int>(ncclCommDestroy(nullptr)));
}

static void Inflight() {
  Ranks(2, kCount, [](int rank, ncclComm_t comm, cudaStream_t s, float* send, float* recv) {
    CHECK_NCCL(ncclAllReduce(send, recv, kCount, ncclFloat, ncclSum, comm, s));
    CHECK(cudaStreamSynchronize(s));
    if (rank == 0) delay_kernel<<<1, 1, 0, s>>>(0);
    CHECK_NCCL(ncclAllReduce(send, recv, kCount, ncclFloat, ncclSum, comm, s));
    CHECK(cudaStreamSynchronize(s));
  });
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "sample") == 0) {
    Sample();
  } else if (strcmp(mode, "gemm64") == 0) {
    Gemm64();
  } else if (strcmp(mode, "initall") == 0) {
    InitAll();
  } else if (strcmp(mode, "shrink") == 0) {
    Shrink();
  } else if (strcmp(mode, "scalable") == 0) {
    Scalable();
  } else if (strcmp(mode, "lifecycle") == 0) {
    Lifecycle();
  } else if (strcmp(mode, "inflight") == 0) {
    Inflight();
  } else {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  printf("OK\n");
  return 0;
}
