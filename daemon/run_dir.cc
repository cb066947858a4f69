#include "daemon/run_dir.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "daemon/base/owned_dir.h"

namespace xtimer {
namespace daemon {
namespace {

std::string Errno(const std::string& what) { return what + ": " + strerror(errno); }

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}


std::string Join(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  return dir + (dir.back() == '/' ? "" : "/") + name;
}

// Opens `name` in `dir_fd` with `flags` | O_NOFOLLOW | O_CLOEXEC (mode 0644 when created): a
// regular file of the daemon's user with one link, or -1 with *error naming it and the fix.
int OpenOwnFile(int dir_fd, const std::string& dir, const std::string& name, int flags,
                std::string* error) {
  const std::string path = Join(dir, name);
  const int f = openat(dir_fd, name.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (f < 0) {
    struct stat st;
    if (fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
      *error = path + " is a symlink; xtimerd never opens its files through one (it could point "
               "at any file): remove it (rm " + path + ") and start again";
    } else {
      *error = Errno("open " + path);
    }
    return -1;
  }
  struct stat st;
  std::string why;
  if (fstat(f, &st) != 0) {
    why = strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    why = "not a regular file";
  } else if (st.st_uid != geteuid()) {
    why = "it belongs to uid " + std::to_string(st.st_uid) + ", not to the daemon's user (uid " +
          std::to_string(geteuid()) + ")";
  } else if (st.st_nlink != 1) {
    why = "it has " + std::to_string(st.st_nlink) + " hard links";
  }
  if (why.empty()) return f;
  close(f);
  *error = "refusing " + path + ": " + why + "; remove it (rm " + path + ") and start again";
  return -1;
}
}  // namespace

int OpenRunDir(const std::string& path, uid_t euid, std::string* error) {
  return OpenOwnedDir({path, "run directory", "--run-dir (XTIMER_RUN_DIR)"}, euid, error);
}

LockResult AcquireLock(int dir_fd, const std::string& dir, const std::string& name, int* fd,
                       int* holder_pid, std::string* error) {
  *holder_pid = 0;
  int f = OpenOwnFile(dir_fd, dir, name, O_RDWR | O_CREAT, error);
  if (f < 0) return LockResult::kError;
  if (flock(f, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      char buf[32] = {};
      ssize_t n = pread(f, buf, sizeof(buf) - 1, 0);
      if (n > 0) *holder_pid = atoi(buf);
      close(f);
      return LockResult::kHeld;
    }
    *error = Errno("flock " + Join(dir, name));
    close(f);
    return LockResult::kError;
  }
  *fd = f;
  return LockResult::kAcquired;
}

void WritePidToLock(int fd) {
  char buf[32];
  int n = snprintf(buf, sizeof(buf), "%d\n", static_cast<int>(getpid()));
  if (ftruncate(fd, 0) == 0) {
    ssize_t unused = pwrite(fd, buf, static_cast<size_t>(n), 0);
    (void)unused;
  }
}

bool WritePidFile(int dir_fd, const std::string& dir, const std::string& name,
                  std::string* error) {
  const std::string tmp = name + ".tmp";
  // A stale NAME.tmp of ours (a daemon killed while writing it) is replaced; anything else there
  // (a symlink, another user's file) is refused by OpenOwnFile below.
  struct stat st;
  if (fstatat(dir_fd, tmp.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
      st.st_uid == geteuid()) {
    unlinkat(dir_fd, tmp.c_str(), 0);
  }
  int f = OpenOwnFile(dir_fd, dir, tmp, O_WRONLY | O_CREAT | O_EXCL, error);
  if (f < 0) return false;
  char buf[32];
  int n = snprintf(buf, sizeof(buf), "%d\n", static_cast<int>(getpid()));
  bool ok = WriteAll(f, buf, static_cast<size_t>(n));
  close(f);
  if (!ok || renameat(dir_fd, tmp.c_str(), dir_fd, name.c_str()) != 0) {
    *error = Errno("writing " + Join(dir, name));
    unlinkat(dir_fd, tmp.c_str(), 0);
    return false;
  }
  return true;
}

int OpenLog(int dir_fd, const std::string& dir, const std::string& path, std::string* error) {
  if (path.empty()) return OpenOwnFile(dir_fd, dir, kLogName, O_WRONLY | O_CREAT | O_APPEND, error);
  const size_t slash = path.rfind('/');
  const std::string parent = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  const int parent_fd = open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (parent_fd < 0) {
    *error = Errno("open the log file's directory " + parent) + " (--log-file, XTIMER_LOG_FILE)";
    return -1;
  }
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const int fd = OpenOwnFile(parent_fd, parent == "." ? "" : path.substr(0, slash), base,
                             O_WRONLY | O_CREAT | O_APPEND, error);
  close(parent_fd);
  return fd;
}

void RedirectOutput(int log_fd) {
  dup2(log_fd, STDOUT_FILENO);
  dup2(log_fd, STDERR_FILENO);
  close(log_fd);
}

bool Daemonize(int log, const std::string& log_name, int* ready_fd, std::string* error) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) {
    *error = Errno("pipe");
    close(log);
    return false;
  }
  fflush(nullptr);
  pid_t child = fork();
  if (child < 0) {
    *error = Errno("fork");
    close(log);
    close(p[0]);
    close(p[1]);
    return false;
  }
  if (child > 0) {
    // The caller: wait for the daemon's verdict.
    close(p[1]);
    close(log);
    waitpid(child, nullptr, 0);
    std::string msg;
    char buf[512];
    pollfd pfd{p[0], POLLIN, 0};
    for (;;) {
      int r = poll(&pfd, 1, 60000);
      if (r <= 0) {
        if (r < 0 && errno == EINTR) continue;
        msg = "error: the daemon did not report readiness within 60 s";
        break;
      }
      ssize_t n = read(p[0], buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      msg.append(buf, static_cast<size_t>(n));
    }
    if (msg.rfind("ok", 0) == 0) _exit(0);
    if (msg.empty()) msg = "error: the daemon exited before serving";
    fprintf(stderr, "xtimerd: %s (log: %s)\n", msg.c_str(), log_name.c_str());
    _exit(1);
  }
  close(p[0]);
  if (setsid() < 0) _exit(1);
  pid_t grandchild = fork();
  if (grandchild < 0) _exit(1);
  if (grandchild > 0) _exit(0);
  if (chdir("/") != 0) {
    // Not fatal: every path the daemon uses is absolute or was resolved before.
  }
  int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null >= 0) {
    dup2(null, STDIN_FILENO);
    close(null);
  }
  dup2(log, STDOUT_FILENO);
  dup2(log, STDERR_FILENO);
  close(log);
  *ready_fd = p[1];
  return true;
}

void SignalReady(int ready_fd, const std::string& error) {
  if (ready_fd < 0) return;
  std::string msg = error.empty() ? "ok" : error;
  WriteAll(ready_fd, msg.data(), msg.size());
  close(ready_fd);
}

}  // namespace daemon
}  // namespace xtimer
