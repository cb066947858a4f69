// Issues small cudaMemsetAsync ops on one stream at a sustained rate (no syncs) and
// prints how many the preloaded hook timed, from xtimer_get_stats (looked up with dlsym, so the
// program also runs without the hook). timed_rate.sh runs it under xtimerd; docs/benchmarks.md.
// Usage: timed_rate OPS_PER_SECOND SECONDS
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

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
  // Paced in 1 ms ticks: the ops due by each tick back to back, then sleep to the next tick (a
  // busy-wait would take a core from the simulator's engine and the hook's poller).
  long long issued = 0;
  for (int tick = 1; issued < total; ++tick) {
    const auto due_at = start + std::chrono::milliseconds(tick);
    const long long due = std::min<long long>(total, static_cast<long long>(
                                                         (due_at - start) / interval));
    for (; issued < due; ++issued) CHECK(cudaMemsetAsync(d, 0, 64, s));
    std::this_thread::sleep_until(due_at);
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
  // Every memset is either timed or counted untimed (no sampling); the final stream sync adds one
  // record of its own to `queued`.
  printf("target %.0f ops/s  achieved %.0f ops/s  issued %lld  untimed %llu  timed %.2f%%  "
         "queued %llu  written %llu  ring_dropped %llu  queue_dropped %llu\n",
         rate, total / issue_s, total, static_cast<unsigned long long>(st.untimed),
         total > 0 ? 100.0 * (total - static_cast<double>(st.untimed)) / total : 0.0,
         static_cast<unsigned long long>(st.queued),
         static_cast<unsigned long long>(st.written),
         static_cast<unsigned long long>(st.ring_dropped),
         static_cast<unsigned long long>(st.queue_dropped));
  CHECK(cudaFree(d));
  return 0;
}
