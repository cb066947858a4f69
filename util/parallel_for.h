// fn(0..count-1) on up to `jobs` threads (0: hardware threads): the readers that take one file per
// rank (the CLI's commands, the timeline converter).
#ifndef XTIMER_UTIL_PARALLEL_FOR_H_
#define XTIMER_UTIL_PARALLEL_FOR_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace xtimer {

template <typename Fn>
void ParallelFor(size_t count, int jobs, Fn fn) {
  if (jobs <= 0) jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const size_t n = std::min<size_t>(static_cast<size_t>(jobs), std::max<size_t>(count, 1));
  std::atomic<size_t> next{0};
  std::vector<std::thread> threads;
  for (size_t t = 0; t < n; ++t) {
    threads.emplace_back([&] {
      for (size_t i; (i = next.fetch_add(1)) < count;) fn(i);
    });
  }
  for (std::thread& t : threads) t.join();
}

}  // namespace xtimer

#endif  // XTIMER_UTIL_PARALLEL_FOR_H_
