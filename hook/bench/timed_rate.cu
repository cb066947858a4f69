// Issues small cudaMemsetAsync ops on one stream at a sustained rate (busy-paced, no syncs) and
// prints how many the preloaded hook timed, from xtimer_get_stats (looked up with dlsym, so the
// program also runs without the hook). timed_rate.sh runs it under xtimerd; docs/benchmarks.md.
// Usage: timed_rate OPS_PER_SECOND SECONDS
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "hook/programs/common.h"
#include "hook/xtimer.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: timed_rate OPS_PER_SECOND SECONDS\n");
    return 2;
  }
  const double rate = atof(argv[1]), seconds = atof(argv[2]);
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void* d = nullptr;
  CHECK(cudaMalloc(&d, 4096));
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto interval = std::chrono::duration<double>(1.0 / rate);
  const long long total = static_cast<long long>(rate * seconds);
  for (long long i = 0; i < total; ++i) {
    while (Clock::now() - start < i * interval) {
    }
    CHECK(cudaMemsetAsync(d, 0, 64, s));
  }
  const double issue_s = std::chrono::duration<double>(Clock::now() - start).count();
  CHECK(cudaStreamSynchronize(s));
  auto flush = reinterpret_cast<decltype(&xtimer_flush)>(dlsym(RTLD_DEFAULT, "xtimer_flush"));
  auto stats = reinterpret_cast<decltype(&xtimer_get_stats)>(dlsym(RTLD_DEFAULT, "xtimer_get_stats"));
  xtimer_stats st = {};
  if (flush != nullptr && stats != nullptr) {
    flush(10000);
    stats(&st);
  }
  printf("target %.0f ops/s  achieved %.0f ops/s  issued %lld  timed %llu (%.2f%%)  untimed %llu  "
         "written %llu  ring_dropped %llu  queue_dropped %llu\n",
         rate, total / issue_s, total, static_cast<unsigned long long>(st.queued),
         total > 0 ? 100.0 * st.queued / total : 0.0, static_cast<unsigned long long>(st.untimed),
         static_cast<unsigned long long>(st.written),
         static_cast<unsigned long long>(st.ring_dropped),
         static_cast<unsigned long long>(st.queue_dropped));
  CHECK(cudaFree(d));
  return 0;
}
