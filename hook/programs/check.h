// Error checks shared by the hook's test programs: print the failing call and exit 1.
#ifndef XTIMER_HOOK_PROGRAMS_CHECK_H_
#define XTIMER_HOOK_PROGRAMS_CHECK_H_

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

#endif  // XTIMER_HOOK_PROGRAMS_CHECK_H_
