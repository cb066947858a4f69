// One process drives several devices, as JAX (one process per host) and nccl-tests `-g N` do:
// ncclCommInitAll over N devices, then a split into two halves (color = device / (N / 2)), and
// `--steps` steps of one AllReduce on the whole communicator and one on the half, each issued for
// every device inside one NCCL group from this one thread. Prints the collectives it issued in
// total, so that tests compare the daemon's per-rank counts with it.
//
// Usage: multi_device [--devices N] [--steps S] [--count ELEMENTS] [--pause-ms MS]
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "hook/programs/common.h"

namespace {

struct Options {
  int devices = 4;
  int steps = 100;
  size_t count = 1 << 16;
  int pause_ms = 2;
};

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (strcmp(a, "--help") == 0) {
      printf("usage: multi_device [--devices N] [--steps S] [--count ELEMENTS] [--pause-ms MS]\n");
      exit(0);
    }
    if (v == nullptr) {
      fprintf(stderr, "multi_device: %s needs a value (see --help)\n", a);
      exit(2);
    }
    if (strcmp(a, "--devices") == 0) {
      o.devices = atoi(v);
    } else if (strcmp(a, "--steps") == 0) {
      o.steps = atoi(v);
    } else if (strcmp(a, "--count") == 0) {
      o.count = strtoull(v, nullptr, 10);
    } else if (strcmp(a, "--pause-ms") == 0) {
      o.pause_ms = atoi(v);
    } else {
      fprintf(stderr, "multi_device: unknown argument %s (see --help)\n", a);
      exit(2);
    }
    ++i;
  }
  if (o.devices < 2 || o.devices % 2 != 0 || o.steps < 1 || o.count < 1) {
    fprintf(stderr, "multi_device: --devices must be even and >= 2, --steps and --count >= 1\n");
    exit(2);
  }
  return o;
}

// One AllReduce per device on comms[d], all in one group (one thread drives every rank).
void AllReduceAll(const std::vector<ncclComm_t>& comms, const std::vector<float*>& bufs,
                  size_t count, const std::vector<cudaStream_t>& streams) {
  CHECK_NCCL(ncclGroupStart());
  for (size_t d = 0; d < comms.size(); ++d) {
    CHECK_NCCL(ncclAllReduce(bufs[d], bufs[d], count, ncclFloat, ncclSum, comms[d], streams[d]));
  }
  CHECK_NCCL(ncclGroupEnd());
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = Parse(argc, argv);
  int available = 0;
  CHECK(cudaGetDeviceCount(&available));
  if (available < o.devices) {
    fprintf(stderr, "multi_device: %d devices wanted, %d present\n", o.devices, available);
    return 2;
  }
  const int n = o.devices;
  std::vector<ncclComm_t> world(n), half(n);
  std::vector<cudaStream_t> streams(n);
  std::vector<float*> bufs(n);
  for (int d = 0; d < n; ++d) {
    CHECK(cudaSetDevice(d));
    CHECK(cudaStreamCreate(&streams[d]));
    CHECK(cudaMalloc(&bufs[d], o.count * sizeof(float)));
    CHECK(cudaMemset(bufs[d], 0, o.count * sizeof(float)));
  }
  CHECK_NCCL(ncclCommInitAll(world.data(), n, nullptr));
  CHECK_NCCL(ncclGroupStart());
  for (int d = 0; d < n; ++d) {
    CHECK_NCCL(ncclCommSplit(world[d], d / (n / 2), d, &half[d], nullptr));
  }
  CHECK_NCCL(ncclGroupEnd());
  long issued = 0;
  for (int step = 0; step < o.steps; ++step) {
    AllReduceAll(world, bufs, o.count, streams);
    AllReduceAll(half, bufs, o.count, streams);
    issued += 2 * n;
    for (int d = 0; d < n; ++d) CHECK(cudaStreamSynchronize(streams[d]));
    if (o.pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(o.pause_ms));
  }
  for (int d = 0; d < n; ++d) {
    CHECK_NCCL(ncclCommDestroy(half[d]));
    CHECK_NCCL(ncclCommDestroy(world[d]));
    CHECK(cudaSetDevice(d));
    CHECK(cudaFree(bufs[d]));
    CHECK(cudaStreamDestroy(streams[d]));
  }
  printf("multi_device: %d devices, %d steps, %ld collectives issued\n", n, o.steps, issued);
  return 0;
}
