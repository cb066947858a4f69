// NVTX work alone, on threads that never call CUDA (the hook's own time: //hook:nvtx_program_test):
// each of THREADS threads makes PAIRS push/pop pairs. Prints the threads' loop times added up
// ("loop_ns: N"), then "OK".
// Usage: nvtx_loop THREADS PAIRS
#include <nvtx3/nvToolsExt.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: nvtx_loop THREADS PAIRS\n");
    return 2;
  }
  const int threads = atoi(argv[1]);
  const long pairs = atol(argv[2]);
  // NVTX loads its injection on its first call; made here, before the threads, as a program's
  // start does (NVTX's double-checked initialisation is a benign race ThreadSanitizer reports).
  nvtxInitialize(nullptr);
  std::atomic<int64_t> loop_ns{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([pairs, &loop_ns] {
      const auto start = std::chrono::steady_clock::now();
      for (long i = 0; i < pairs; ++i) {
        nvtxRangePushA("loop");
        nvtxRangePop();
      }
      loop_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::steady_clock::now() - start)
                     .count();
    });
  }
  for (std::thread& w : workers) w.join();
  printf("loop_ns: %lld\nOK\n", static_cast<long long>(loop_ns.load()));
  return 0;
}
