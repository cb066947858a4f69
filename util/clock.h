// The two clocks of xtimer's own code, in nanoseconds (the hook, the daemon, the files, the CLI).
#ifndef XTIMER_UTIL_CLOCK_H_
#define XTIMER_UTIL_CLOCK_H_

#include <time.h>

#include <cstdint>

namespace xtimer {

// CLOCK_REALTIME: the clock of records, files, windows and hang ages (comparable across the
// processes of a node).
inline int64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// CLOCK_MONOTONIC: intervals (idle exit, status period, deadlines).
inline int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace xtimer

#endif  // XTIMER_UTIL_CLOCK_H_
