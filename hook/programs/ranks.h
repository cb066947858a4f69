// Shared by the hook's multi-rank test programs: ranks as threads of one process.
#ifndef XTIMER_HOOK_PROGRAMS_RANKS_H_
#define XTIMER_HOOK_PROGRAMS_RANKS_H_

#include <cuda_runtime.h>
#include <nccl.h>

#include <thread>
#include <vector>

#include "hook/programs/common.h"

// Runs `body(rank, comm, stream, send, recv)` on `nranks` threads, each on its own device with a
// communicator from ncclCommInitRank and two device buffers of `count` floats.
template <typename Body>
inline void Ranks(int nranks, size_t count, Body body) {
  ncclUniqueId id;
  CHECK_NCCL(ncclGetUniqueId(&id));
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) {
    threads.emplace_back([&, r] {
      CHECK(cudaSetDevice(r));
      cudaStream_t s;
      CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      ncclComm_t comm;
      CHECK_NCCL(ncclCommInitRank(&comm, nranks, id, r));
      float *send, *recv;
      CHECK(cudaMalloc(&send, count * sizeof(float)));
      CHECK(cudaMalloc(&recv, count * sizeof(float)));
      body(r, comm, s, send, recv);
      CHECK(cudaStreamSynchronize(s));
      CHECK(cudaFree(send));
      CHECK(cudaFree(recv));
      CHECK(cudaStreamDestroy(s));
    });
  }
  for (auto& t : threads) t.join();
}

#endif  // XTIMER_HOOK_PROGRAMS_RANKS_H_
