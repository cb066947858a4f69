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

}  // namespace

bool MakeDirs(const std::string& path, std::string* error) {
  if (path.empty()) {
    *error = "empty directory path";
    return false;
  }
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i != path.size() && path[i] != '/') continue;
    std::string prefix = path.substr(0, i);
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      *error = Errno("mkdir " + prefix);
      return false;
    }
  }
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    *error = path + " is not a directory";
    return false;
  }
  return true;
}

LockResult AcquireLock(const std::string& path, int* fd, int* holder_pid, std::string* error) {
  *holder_pid = 0;
  int f = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (f < 0) {
    *error = Errno("open " + path);
    return LockResult::kError;
  }
  if (flock(f, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      char buf[32] = {};
      ssize_t n = pread(f, buf, sizeof(buf) - 1, 0);
      if (n > 0) *holder_pid = atoi(buf);
      close(f);
      return LockResult::kHeld;
    }
    *error = Errno("flock " + path);
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

bool WritePidFile(const std::string& path, std::string* error) {
  std::string tmp = path + ".tmp";
  int f = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (f < 0) {
    *error = Errno("open " + tmp);
    return false;
  }
  char buf[32];
  int n = snprintf(buf, sizeof(buf), "%d\n", static_cast<int>(getpid()));
  bool ok = WriteAll(f, buf, static_cast<size_t>(n));
  close(f);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    *error = Errno("writing " + path);
    unlink(tmp.c_str());
    return false;
  }
  return true;
}

bool RedirectOutput(const std::string& log_file, std::string* error) {
  int f = open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (f < 0) {
    *error = Errno("open " + log_file);
    return false;
  }
  dup2(f, STDOUT_FILENO);
  dup2(f, STDERR_FILENO);
  close(f);
  return true;
}

bool Daemonize(const std::string& log_file, int* ready_fd, std::string* error) {
  // Open the log first so that a bad path is reported to the caller's terminal.
  int log = open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) {
    *error = Errno("open " + log_file);
    return false;
  }
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
    fprintf(stderr, "xtimerd: %s (log: %s)\n", msg.c_str(), log_file.c_str());
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
