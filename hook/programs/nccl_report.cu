// Collectives whose completion NCCL reports to libxtimer.so as its profiler plugin
// (hook/nccl_profiler.h), for //hook:nccl_report_program_test. Two ranks as threads of one
// process (ranks.h), each on its own device and stream:
//   nccl_report steady N   N ungrouped all-reduces, then one ncclAlltoAll (whose send to itself
//                          makes NCCL's later channel reports unreliable), then 100 all-reduces
//   nccl_report groups N   N groups of two all-reduces
// XTIMER_SIM_HANG (docs/gpusim-nccl.md) makes a rank block in one of them.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "hook/programs/common.h"
#include "hook/programs/ranks.h"

static const size_t kCount = 1024;  // floats per rank and all-reduce

static void Steady(int n) {
  Ranks(2, kCount, [n](int, ncclComm_t comm, cudaStream_t s, float* send, float* recv) {
    for (int i = 0; i < n; ++i) {
      CHECK_NCCL(ncclAllReduce(send, recv, kCount, ncclFloat, ncclSum, comm, s));
    }
    CHECK_NCCL(ncclAlltoAll(send, recv, kCount / 2, ncclFloat, comm, s));
    for (int i = 0; i < 100; ++i) {
      CHECK_NCCL(ncclAllReduce(send, recv, kCount, ncclFloat, ncclSum, comm, s));
    }
  });
}

static void Groups(int n) {
  Ranks(2, kCount, [n](int, ncclComm_t comm, cudaStream_t s, float* send, float* recv) {
    for (int i = 0; i < n; ++i) {
      CHECK_NCCL(ncclGroupStart());
      CHECK_NCCL(ncclAllReduce(send, recv, kCount / 2, ncclFloat, ncclSum, comm, s));
      CHECK_NCCL(ncclAllReduce(send + kCount / 2, recv + kCount / 2, kCount / 2, ncclFloat,
                               ncclSum, comm, s));
      CHECK_NCCL(ncclGroupEnd());
    }
  });
}

int main(int argc, char** argv) {
  const char* mode = argc > 2 ? argv[1] : "";
  const int n = argc > 2 ? atoi(argv[2]) : 0;
  if (strcmp(mode, "steady") == 0) {
    Steady(n);
  } else if (strcmp(mode, "groups") == 0) {
    Groups(n);
  } else {
    fprintf(stderr, "usage: nccl_report steady|groups N\n");
    return 2;
  }
  printf("OK\n");
  return 0;
}
