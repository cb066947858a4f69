// Waiting for another rank (thread or process) to move a shared-memory word.
//
// Peers may be threads of this process or other processes, and a task may wait on several
// communicators at once, so there is no single futex word to sleep on. Instead: spin briefly
// (the peer is usually a few microseconds away), then yield, then sleep with a growing interval
// capped at kMaxSleepUs, so a rank stuck behind a hung peer costs almost no CPU.
#ifndef XTIMER_TEST_GPUSIM_NCCL_BACKOFF_H_
#define XTIMER_TEST_GPUSIM_NCCL_BACKOFF_H_

#include <sched.h>
#include <time.h>

#include <cstdint>

#include "test/gpusim/common/sim_env.h"

namespace xtsim {
namespace nccl {

class Backoff {
 public:
  static constexpr int kSpins = 64;
  static constexpr int kYields = 64;
  static constexpr int64_t kMaxSleepUs = 1000;
  // How often Pause() reports that a slow check (peer liveness) is due.
  static constexpr int64_t kCheckIntervalNs = 200'000'000;

  // Call after progress was made.
  void Reset() {
    rounds_ = 0;
    sleep_us_ = 1;
  }

  // Waits a little. Returns true about every kCheckIntervalNs of continuous waiting.
  bool Pause() {
    ++rounds_;
    if (rounds_ <= kSpins) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    } else if (rounds_ <= kSpins + kYields) {
      sched_yield();
    } else {
      timespec ts{0, static_cast<long>(sleep_us_ * 1000)};
      nanosleep(&ts, nullptr);
      if (sleep_us_ < kMaxSleepUs) sleep_us_ *= 2;
    }
    int64_t now = NowNs();
    if (rounds_ == 1) next_check_ns_ = now + kCheckIntervalNs;
    if (now < next_check_ns_) return false;
    next_check_ns_ = now + kCheckIntervalNs;
    return true;
  }

 private:
  int64_t rounds_ = 0;
  int64_t sleep_us_ = 1;
  int64_t next_check_ns_ = 0;
};

}  // namespace nccl
}  // namespace xtsim

#endif  // XTIMER_TEST_GPUSIM_NCCL_BACKOFF_H_
