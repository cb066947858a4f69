// Lingering after the last step (train_step, diag_job --linger): the process stays alive, its
// communicators open, for the tests and the demo to read the daemon's view of a finished job.
#ifndef XTIMER_DEMO_LINGER_H_
#define XTIMER_DEMO_LINGER_H_

#include <unistd.h>

namespace demo {

// Sleeps `seconds` in full. sleep() returns early when a signal arrives, and one does whenever
// the daemon captures the process's stacks (docs/stacks.md "What the application sees"), which
// it does to ranks idle past the hang threshold: a linger must not end there.
inline void LingerFor(unsigned seconds) {
  while (seconds > 0) seconds = sleep(seconds);
}

}  // namespace demo

#endif  // XTIMER_DEMO_LINGER_H_
