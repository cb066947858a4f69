// The daemon's run directory: one daemon per directory (flock on xtimerd.lock), its pid file,
// and detaching from the caller.
#ifndef XTIMER_DAEMON_RUN_DIR_H_
#define XTIMER_DAEMON_RUN_DIR_H_

#include <string>

namespace xtimer {
namespace daemon {

// Creates `path` and its parents (mode 0755). False with *error.
bool MakeDirs(const std::string& path, std::string* error);

enum class LockResult { kAcquired, kHeld, kError };

// Takes an exclusive flock on `path` without waiting. kAcquired: *fd holds it. kHeld: another
// process has it; *holder_pid is the pid written in the file (0 when not written yet).
LockResult AcquireLock(const std::string& path, int* fd, int* holder_pid, std::string* error);

// Replaces the content of the lock file with our pid.
void WritePidToLock(int fd);
bool WritePidFile(const std::string& path, std::string* error);

// Detaches: double fork and setsid; the grandchild returns with stdin on /dev/null and
// stdout/stderr appended to `log_file`, and *ready_fd set. The original process waits until the
// grandchild calls SignalReady (it then exits 0) or the pipe closes (it prints the error and
// exits 1); it never returns. Returns false (in the caller, nothing forked) on failure.
bool Daemonize(const std::string& log_file, int* ready_fd, std::string* error);
// Reports to the waiting parent: `error` empty means the daemon serves.
void SignalReady(int ready_fd, const std::string& error);

// Points stderr (and stdout) at `log_file` (append). False with *error.
bool RedirectOutput(const std::string& log_file, std::string* error);

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_RUN_DIR_H_
