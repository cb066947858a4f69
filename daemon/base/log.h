// Minimal timestamped logging to stderr (which --daemonize / --log-file point at the log file).
#ifndef XTIMER_DAEMON_LOG_H_
#define XTIMER_DAEMON_LOG_H_

namespace xtimer {
namespace daemon {

// printf-style; one line per call (a trailing newline is added). Thread-safe: one write(2).
void Logf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_LOG_H_
