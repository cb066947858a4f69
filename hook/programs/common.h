// Shared by the hook's test programs: error checks that print the failing call and exit 1, and
// the kernel that holds a stream.
#ifndef XTIMER_HOOK_PROGRAMS_COMMON_H_
#define XTIMER_HOOK_PROGRAMS_COMMON_H_

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                     \
  do {                                                                                  \
    cudaError_t e_ = (call);                                                            \
    if (e_ != cudaSuccess) {                                                            \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(1);                                                                          \
    }                                                                                   \
  } while (0)
#define CHECK_BLAS(call)                                                                \
  do {                                                                                  \
    cublasStatus_t s_ = (call);                                                         \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                  \
      fprintf(stderr, "%s:%d: %s: status %d\n", __FILE__, __LINE__, #call, (int)s_);   \
      exit(1);                                                                          \
    }                                                                                   \
  } while (0)
#define CHECK_NCCL(call)                                                                \
  do {                                                                                  \
    ncclResult_t r_ = (call);                                                           \
    if (r_ != ncclSuccess) {                                                            \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, ncclGetErrorString(r_)); \
      exit(1);                                                                          \
    }                                                                                   \
  } while (0)

// Calls `expr` with errno set to 4242 and prints what the application sees: the value, errno and
// the CUDA last error (peeked). errors.cu and first_calls.cu compare this output with and without
// the hook.
#define SHOW(expr)                                                                         \
  do {                                                                                     \
    errno = 4242;                                                                          \
    int r_ = static_cast<int>(expr);                                                       \
    int e_ = errno;                                                                        \
    printf("%-60s -> %d, errno %d, peek %d\n", #expr, r_, e_,                             \
           static_cast<int>(cudaPeekAtLastError()));                                       \
  } while (0)

// Holds the stream for the time XTIMER_SIM_KERNEL_TIMES gives it (program_test: 500 ms) so the
// timed ops after it queue up on the GPU even when the host is slow (sanitizers, a loaded
// machine): each op's start event and its work then run back to back, and its measured time is
// the model's. Not selected by the test's XTIMER_KERNEL_FILTER, so never timed itself.
__global__ void delay_kernel(int ns) {}

#endif  // XTIMER_HOOK_PROGRAMS_COMMON_H_
