// The daemon's run directory: one daemon per directory (flock on xtimerd.lock), its pid file,
// its log, and detaching from the caller. The directory is checked (daemon/base/owned_dir.h) and
// every
// file in it is opened relative to its descriptor, never through a symlink (docs/security.md).
#ifndef XTIMER_DAEMON_RUN_DIR_H_
#define XTIMER_DAEMON_RUN_DIR_H_

#include <sys/types.h>

#include <string>

namespace xtimer {
namespace daemon {

// The files xtimerd keeps in its run directory (the socket's name is util/default_paths.h's).
inline constexpr char kLockName[] = "xtimerd.lock";
inline constexpr char kPidName[] = "xtimerd.pid";
inline constexpr char kLogName[] = "xtimerd.log";

// Creates and checks the run directory `path` (daemon/base/owned_dir.h) for effective user `euid`.
// Returns its descriptor, or -1 with *error naming the path and the fix.
int OpenRunDir(const std::string& path, uid_t euid, std::string* error);

enum class LockResult { kAcquired, kHeld, kError };

// Takes an exclusive flock on `name` in `dir_fd` without waiting (never through a symlink).
// kAcquired: *fd holds it. kHeld: another process has it; *holder_pid is the pid written in the
// file (0 when not written yet).
LockResult AcquireLock(int dir_fd, const std::string& dir, const std::string& name, int* fd,
                       int* holder_pid, std::string* error);

// Replaces the content of the lock file with our pid.
void WritePidToLock(int fd);
// Writes our pid to `name` in `dir_fd` through NAME.tmp, created exclusively (a stale one of
// ours is replaced; a symlink or another user's file there is an error).
bool WritePidFile(int dir_fd, const std::string& dir, const std::string& name,
                  std::string* error);

// Opens the log for appending: `path` when given, else kLogName in `dir_fd`. Never through a
// symlink; the file must be a regular file of the daemon's user with one link. -1 with *error.
int OpenLog(int dir_fd, const std::string& dir, const std::string& path, std::string* error);

// Detaches: double fork and setsid; the grandchild returns with stdin on /dev/null and
// stdout/stderr on `log_fd` (closed here), and *ready_fd set. The original process waits until
// the grandchild calls SignalReady (it then exits 0) or the pipe closes (it prints the error and
// exits 1); it never returns. Returns false (in the caller, nothing forked) on failure.
bool Daemonize(int log_fd, const std::string& log_name, int* ready_fd, std::string* error);
// Reports to the waiting parent: `error` empty means the daemon serves.
void SignalReady(int ready_fd, const std::string& error);

// Points stderr (and stdout) at `log_fd`, then closes it.
void RedirectOutput(int log_fd);

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_RUN_DIR_H_
