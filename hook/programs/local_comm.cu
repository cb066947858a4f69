// A CUDA "extension module" for hook:program_test's local-scope test: built with nvcc -shared, it
// has DT_NEEDED on libcudart and libnccl and is dlopen'ed RTLD_LOCAL by local_scope.cc, so both
// libraries sit in its private scope, as under Python's ctypes.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <vector>

#include "hook/programs/ranks.h"

__global__ void timed_kernel_scale(float* x, float factor) {}

// Runs `steps` steps on `nranks` threads (one device and communicator each): fill the send
// buffer from the host, a selected kernel, an all-reduce, the result back to the host. Returns a
// checksum of every rank's results (the all-reduce really sums on the simulator).
extern "C" __attribute__((visibility("default"))) uint64_t xt_local_comm_steps(int nranks,
                                                                                int steps) {
  const size_t count = 1024;
  std::vector<uint64_t> sums(nranks, 0);
  Ranks(nranks, count,
        [&](int r, ncclComm_t comm, cudaStream_t s, float* send, float* recv) {
          std::vector<float> host(count);
          for (int step = 0; step < steps; ++step) {
            for (size_t i = 0; i < count; ++i) host[i] = static_cast<float>((r + 1) * (step + 1) + i % 7);
            CHECK(cudaMemcpyAsync(send, host.data(), count * sizeof(float),
                                  cudaMemcpyHostToDevice, s));
            timed_kernel_scale<<<1, 32, 0, s>>>(send, 1.0f);
            CHECK(cudaGetLastError());
            CHECK_NCCL(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, s));
            CHECK(cudaMemcpyAsync(host.data(), recv, count * sizeof(float),
                                  cudaMemcpyDeviceToHost, s));
            CHECK(cudaStreamSynchronize(s));
            for (float v : host) sums[r] = sums[r] * 31 + static_cast<uint64_t>(v);
          }
          CHECK_NCCL(ncclCommDestroy(comm));
        });
  uint64_t total = 0;
  for (uint64_t v : sums) total = total * 1000003 + v;
  return total;
}
