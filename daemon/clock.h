// The daemon's two clocks, in nanoseconds.
#ifndef XTIMER_DAEMON_CLOCK_H_
#define XTIMER_DAEMON_CLOCK_H_

#include <time.h>

#include <cstdint>

namespace xtimer {
namespace daemon {

// CLOCK_REALTIME: the clock records, windows and hang ages use.
inline int64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// CLOCK_MONOTONIC: intervals of the daemon's own (idle exit, status period).
inline int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_CLOCK_H_
