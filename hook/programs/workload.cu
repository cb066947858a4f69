// An ordinary CUDA program (nvcc, real CUDA 13 libraries) that exercises everything libxtimer.so
// times. hook:program_test runs it on the GPU simulator with the hook preloaded and checks the
// records a fake daemon receives. Modes:
//   workload all          GEMMs, cuBLASLt, copies, memsets, kernels, a graph, host syncs, NCCL
//   workload loop MS      memsets and syncs for MS milliseconds (daemon reconnection test)
//   workload comm_loop MS a one-rank communicator, then memsets and all-reduces for MS ms
//   workload fork         the parent keeps timing while a forked child keeps calling CUDA
// Built twice: as is, and with --default-stream per-thread (workload_ptsz: the _ptsz / _ptds entry
// points).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "hook/programs/common.h"

__global__ void timed_kernel(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}
__global__ void other_kernel(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}

#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
// Built with --default-stream per-thread, cudaGraphLaunch should be cudaGraphLaunch_ptsz, but CUDA
// 13's host pass picks cuda_device_runtime_api.h's inline cudaGraphLaunch_ptsz, which calls the
// legacy cudaGraphLaunch: name the exported entry point directly, as other toolchains do.
extern "C" cudaError_t GraphLaunchPtsz(cudaGraphExec_t exec, cudaStream_t stream) __asm__(
    "cudaGraphLaunch_ptsz");
static cudaError_t GraphLaunch(cudaGraphExec_t exec, cudaStream_t s) {
  return GraphLaunchPtsz(exec, s);
}
#else
static cudaError_t GraphLaunch(cudaGraphExec_t exec, cudaStream_t s) {
  return cudaGraphLaunch(exec, s);
}
#endif

static void Gemms(cudaStream_t s) {
  cublasHandle_t h;
  CHECK_BLAS(cublasCreate(&h));
  CHECK_BLAS(cublasSetStream(h, s));
  const int n = 4096;
  void *a, *b, *c;
  CHECK(cudaMalloc(&a, size_t(n) * n * 4));
  CHECK(cudaMalloc(&b, size_t(n) * n * 4));
  CHECK(cudaMalloc(&c, size_t(n) * n * 4));
  float alpha = 1, beta = 0;
  delay_kernel<<<1, 1, 0, s>>>(0);
  // bf16 GemmEx, 4096^3, op(A) = A^T.
  CHECK_BLAS(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &alpha, a, CUDA_R_16BF, n, b,
                          CUDA_R_16BF, n, &beta, c, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                          CUBLAS_GEMM_DEFAULT));
  // fp32 Sgemm 1024 x 2048 x 512.
  CHECK_BLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, 1024, 2048, 512, &alpha, (float*)a, 1024,
                         (float*)b, 2048, &beta, (float*)c, 1024));
  // TF32 via the math mode.
  CHECK_BLAS(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH));
  CHECK_BLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 1024, 1024, 1024, &alpha, (float*)a, 1024,
                         (float*)b, 1024, &beta, (float*)c, 1024));
  CHECK_BLAS(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
  // Strided batched, 4 x 512^3.
  CHECK_BLAS(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, 512, 512, 512, &alpha,
                                       (float*)a, 512, 512 * 512, (float*)b, 512, 512 * 512,
                                       &beta, (float*)c, 512, 512 * 512, 4));
  CHECK_BLAS(cublasDestroy(h));

  // cuBLASLt: bf16, D (1024 x 2048) = op(A)^T (A stored 512 x 1024) * B (512 x 2048), batch 2.
  cublasLtHandle_t lt;
  CHECK_BLAS(cublasLtCreate(&lt));
  cublasLtMatmulDesc_t desc;
  CHECK_BLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t ta = CUBLAS_OP_T;
  CHECK_BLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  cublasLtMatrixLayout_t la, lb, lc;
  CHECK_BLAS(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, 512, 1024, 512));
  CHECK_BLAS(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, 512, 2048, 512));
  CHECK_BLAS(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, 1024, 2048, 1024));
  int32_t batch = 2;
  int64_t stride_a = 512 * 1024, stride_b = 512 * 2048, stride_c = 1024 * 2048;
  CHECK_BLAS(cublasLtMatrixLayoutSetAttribute(la, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, 4));
  CHECK_BLAS(cublasLtMatrixLayoutSetAttribute(lb, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, 4));
  CHECK_BLAS(cublasLtMatrixLayoutSetAttribute(lc, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, 4));
  CHECK_BLAS(cublasLtMatrixLayoutSetAttribute(la, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                              &stride_a, 8));
  CHECK_BLAS(cublasLtMatrixLayoutSetAttribute(lb, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                              &stride_b, 8));
  CHECK_BLAS(cublasLtMatrixLayoutSetAttribute(lc, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                              &stride_c, 8));
  CHECK_BLAS(cublasLtMatmul(lt, desc, &alpha, a, la, b, lb, &beta, c, lc, c, lc, nullptr, nullptr,
                            0, s));
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatmulDescDestroy(desc);
  cublasLtDestroy(lt);
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(c));
}

static void CopiesKernelsGraph(cudaStream_t s) {
  const size_t bytes = 1 << 20;
  float* d;
  float* h;
  CHECK(cudaMalloc(&d, bytes));
  CHECK(cudaMallocHost(&h, bytes));
  memset(h, 0, bytes);
  delay_kernel<<<1, 1, 0, s>>>(0);
  CHECK(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, s));
  CHECK(cudaMemsetAsync(d, 0, bytes, s));
  int n = bytes / 4;
  timed_kernel<<<n / 256, 256, 0, s>>>(d, n);
  other_kernel<<<n / 256, 256, 0, s>>>(d, n);
  CHECK(cudaGetLastError());
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
  CHECK(cudaMemset(d, 1, 4096));
  // Capture: nothing inside is recorded; the graph launch is one op.
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CHECK(cudaMemsetAsync(d, 0, bytes, s));
  timed_kernel<<<n / 256, 256, 0, s>>>(d, n);
  CHECK(cudaStreamEndCapture(s, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  delay_kernel<<<1, 1, 0, s>>>(0);
  CHECK(GraphLaunch(exec, s));
  cudaEvent_t e;
  CHECK(cudaEventCreate(&e));
  CHECK(cudaEventRecord(e, s));
  CHECK(cudaEventSynchronize(e));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaEventDestroy(e));
  CHECK(cudaFree(d));
  CHECK(cudaFreeHost(h));
}

static void Rank(int rank, int nranks, ncclUniqueId id) {
  CHECK(cudaSetDevice(rank));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  ncclComm_t comm;
  CHECK_NCCL(ncclCommInitRank(&comm, nranks, id, rank));
  const size_t count = 1 << 20;
  float *send, *recv;
  CHECK(cudaMalloc(&send, count * 4 * nranks));
  CHECK(cudaMalloc(&recv, count * 4 * nranks));
  delay_kernel<<<1, 1, 0, s>>>(0);
  for (int i = 0; i < 3; ++i) {
    CHECK_NCCL(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, s));
  }
  CHECK_NCCL(ncclAllGather(send, recv, count, ncclBfloat16, comm, s));
  CHECK_NCCL(ncclReduceScatter(send, recv, count / 2, ncclFloat, ncclSum, comm, s));
  CHECK_NCCL(ncclBroadcast(send, recv, count, ncclFloat, 0, comm, s));
  // A ring exchange in a group: send to the next rank, receive from the previous.
  CHECK_NCCL(ncclGroupStart());
  CHECK_NCCL(ncclSend(send, count, ncclFloat, (rank + 1) % nranks, comm, s));
  CHECK_NCCL(ncclRecv(recv, count, ncclFloat, (rank + nranks - 1) % nranks, comm, s));
  CHECK_NCCL(ncclGroupEnd());
  ncclComm_t child;
  CHECK_NCCL(ncclCommSplit(comm, 0, rank, &child, nullptr));
  delay_kernel<<<1, 1, 0, s>>>(0);
  CHECK_NCCL(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, child, s));
  CHECK(cudaStreamSynchronize(s));
  CHECK_NCCL(ncclCommDestroy(child));
  CHECK_NCCL(ncclCommDestroy(comm));
  CHECK(cudaFree(send));
  CHECK(cudaFree(recv));
  CHECK(cudaStreamDestroy(s));
}

static void Nccl() {
  ncclUniqueId id;
  CHECK_NCCL(ncclGetUniqueId(&id));
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) threads.emplace_back(Rank, r, 2, id);
  for (auto& t : threads) t.join();
}

// A one-rank communicator, then memsets and all-reduces for `ms` milliseconds (the daemon restart
// test: the new daemon must learn the communicator, created before it started).
static void CommLoop(int ms, cudaStream_t s) {
  ncclComm_t comm;
  int devices[1] = {0};
  CHECK_NCCL(ncclCommInitAll(&comm, 1, devices));
  float* d;
  CHECK(cudaMalloc(&d, 4096));
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end) {
    CHECK(cudaMemsetAsync(d, 0, 4096, s));
    CHECK_NCCL(ncclAllReduce(d, d, 1024, ncclFloat, ncclSum, comm, s));
    CHECK(cudaStreamSynchronize(s));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK_NCCL(ncclCommDestroy(comm));
  CHECK(cudaFree(d));
}

static void Loop(int ms, cudaStream_t s) {
  void* d;
  CHECK(cudaMalloc(&d, 4096));
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end) {
    CHECK(cudaMemsetAsync(d, 0, 4096, s));
    CHECK(cudaStreamSynchronize(s));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(cudaFree(d));
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "all";
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  if (strcmp(mode, "all") == 0) {
    Gemms(s);
    CopiesKernelsGraph(s);
    Nccl();
  } else if (strcmp(mode, "loop") == 0) {
    Loop(argc > 2 ? atoi(argv[2]) : 2000, s);
    // When main returns: the start of the exit path (program_test times the rest).
    timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    printf("main_returns_ns=%lld\n", static_cast<long long>(now.tv_sec) * 1000000000 + now.tv_nsec);
    fflush(stdout);
  } else if (strcmp(mode, "comm_loop") == 0) {
    CommLoop(argc > 2 ? atoi(argv[2]) : 2000, s);
  } else if (strcmp(mode, "fork") == 0) {
    Loop(100, s);
    pid_t child = fork();
    if (child == 0) {
      // A data-loader-like child: keeps running and calling CUDA. The hook passes the calls
      // through; the runtime fails them (CUDA was initialized before the fork).
      void* d = nullptr;
      cudaMalloc(&d, 4096);
      for (int i = 0; i < 20; ++i) {
        cudaMemsetAsync(d, 0, 4096, s);
        cudaStreamSynchronize(s);
        usleep(2000);
      }
      _exit(0);
    }
    Loop(200, s);
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "child failed: status %d\n", status);
      return 1;
    }
    Loop(100, s);
  } else {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  CHECK(cudaStreamDestroy(s));
  printf("OK\n");
  return 0;
}
