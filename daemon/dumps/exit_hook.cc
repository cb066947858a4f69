#include "daemon/dumps/exit_hook.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>
#include <utility>

#include "daemon/base/log.h"
#include "daemon/export/metric_families.h"

namespace xtimer {
namespace daemon {
namespace {

std::vector<std::string> SplitCommand(const std::string& command) {
  std::vector<std::string> argv;
  std::istringstream in(command);
  for (std::string word; in >> word;) argv.push_back(word);
  return argv;
}

// A sealed memfd holding `text` at offset 0; -1 when it cannot be made.
int TextFile(const std::string& text) {
  const int fd = memfd_create("xtimer-exit-hook", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  if (pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()) ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// The hook's whole environment: who it runs as, a standard PATH, nothing of the daemon's.
std::vector<std::string> HookEnvironment(const passwd* pw, size_t input_bytes) {
  std::vector<std::string> env = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                                  "LANG=C.UTF-8",
                                  "XTIMER_CRASH_JSON_BYTES=" + std::to_string(input_bytes)};
  if (pw != nullptr) {
    env.push_back(std::string("HOME=") + pw->pw_dir);
    env.push_back(std::string("USER=") + pw->pw_name);
    env.push_back(std::string("LOGNAME=") + pw->pw_name);
    env.push_back(std::string("SHELL=") + pw->pw_shell);
  } else {
    env.push_back("HOME=/");
  }
  return env;
}

// In the forked child, async-signal-safe calls only: stdin the report, stdout and stderr
// /dev/null, every other descriptor closed, the user's identity, then exec.
[[noreturn]] void ExecHook(int in, bool drop, uid_t uid, gid_t gid, long max_fd, char** argv,
                           char** envp) {
  const int null = open("/dev/null", O_WRONLY);
  if (dup2(in, 0) < 0 || null < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0) _exit(126);
  if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0) {
    for (long fd = 3; fd < max_fd; ++fd) close(static_cast<int>(fd));
  }
  if (drop && (setgroups(0, nullptr) != 0 || setgid(gid) != 0 || setuid(uid) != 0)) _exit(126);
  execve(argv[0], argv, envp);
  _exit(127);
}

}  // namespace

StartedHook StartExitHook(const std::string& command, const std::string& input, uint32_t uid) {
  StartedHook out;
  const std::vector<std::string> words = SplitCommand(command);
  if (words.empty()) {
    out.error = "empty command";
    return out;
  }
  // Never as root for another user's job: the child takes the job's uid and primary group.
  const bool drop = geteuid() == 0 && uid != 0;
  passwd pw, *found = nullptr;
  char buf[4096];
  if (getpwuid_r(drop ? uid : geteuid(), &pw, buf, sizeof(buf), &found) != 0) found = nullptr;
  if (drop && found == nullptr) {
    out.error = "uid " + std::to_string(uid) + " has no passwd entry: not run";
    return out;
  }
  const std::vector<std::string> env = HookEnvironment(found, input.size());
  std::vector<char*> argv, envp;
  for (const std::string& w : words) argv.push_back(const_cast<char*>(w.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const long max_fd = std::max(1024L, sysconf(_SC_OPEN_MAX));
  const int in = TextFile(input);
  if (in < 0) {
    out.error = std::string("memfd: ") + strerror(errno);
    return out;
  }
  const pid_t pid = fork();
  if (pid == 0) ExecHook(in, drop, uid, drop ? pw.pw_gid : 0, max_fd, argv.data(), envp.data());
  close(in);
  if (pid < 0) out.error = std::string("fork: ") + strerror(errno);
  out.pid = pid;
  return out;
}

namespace {

// "" for exit status 0, else why the hook failed (`status` from waitpid).
std::string StatusText(int status, const std::string& program) {
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    return "exec " + program + " failed (not an executable path?)";
  }
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  return "killed by signal " + std::to_string(WTERMSIG(status));
}

std::string ProgramOf(const std::string& command) {
  const std::vector<std::string> words = SplitCommand(command);
  return words.empty() ? "" : words[0];
}

}  // namespace

ExitHookRunner::ExitHookRunner(std::string command, int timeout_ms)
    : command_(std::move(command)), timeout_ms_(timeout_ms) {
  if (command_.empty()) return;
  if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) wake_[0] = wake_[1] = -1;
  thread_ = std::thread([this] { Loop(); });
}

ExitHookRunner::~ExitHookRunner() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  if (wake_[1] >= 0 && write(wake_[1], "x", 1) < 0) {
  }
  if (thread_.joinable()) thread_.join();
  for (int fd : wake_) {
    if (fd >= 0) close(fd);
  }
}

bool ExitHookRunner::Submit(uint32_t uid, int pid, std::string input) {
  if (!enabled()) return false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stop_ && queued_per_uid_[uid] < kExitHooksQueuedPerUid) {
      ++queued_per_uid_[uid];
      waiting_.push_back({uid, pid, std::move(input)});
      if (wake_[1] >= 0 && write(wake_[1], "x", 1) < 0) {
      }
      return true;
    }
    ++counts_["dropped"];
  }
  Logf("--exit-hook for pid %d dropped: uid %u already has %zu hooks waiting", pid, uid,
       kExitHooksQueuedPerUid);
  return false;
}

void ExitHookRunner::StartEligibleLocked() {
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (running_per_uid_[it->uid] >= kExitHooksPerUid) {
      ++it;
      continue;
    }
    const StartedHook h = StartExitHook(command_, it->input, it->uid);
    --queued_per_uid_[it->uid];
    if (h.pid < 0) {
      ++counts_["failed"];
      Logf("--exit-hook for pid %d: %s", it->pid, h.error.c_str());
    } else {
      ++running_per_uid_[it->uid];
      running_.push_back({it->uid, it->pid, h.pid, NowMs() + timeout_ms_});
    }
    it = waiting_.erase(it);
  }
}

void ExitHookRunner::Finish(const Running& r, const std::string& why, const char* outcome) {
  // mu_ held by the caller.
  --running_per_uid_[r.uid];
  ++counts_[outcome];
  if (!why.empty()) Logf("--exit-hook for pid %d: %s", r.crashed_pid, why.c_str());
}

void ExitHookRunner::Loop() {
  const std::string program = ProgramOf(command_);
  for (;;) {
    int wait_ms = -1;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) break;
      StartEligibleLocked();
      const int64_t now = NowMs();
      for (auto it = running_.begin(); it != running_.end();) {
        int status = 0;
        const pid_t r = waitpid(it->child, &status, WNOHANG);
        if (r == it->child || now >= it->deadline_ms) {
          const bool exited = r == it->child;
          if (!exited) {
            kill(it->child, SIGKILL);
            while (waitpid(it->child, &status, 0) < 0 && errno == EINTR) {
            }
          }
          const std::string why = exited ? StatusText(status, program)
                                         : "killed after " + std::to_string(timeout_ms_) + " ms";
          Finish(*it, why, !exited ? "killed" : why.empty() ? "ok" : "failed");
          it = running_.erase(it);
          continue;
        }
        ++it;
      }
      cv_.notify_all();
      // A child's exit is noticed within 10 ms; nothing running: sleep until woken.
      if (!running_.empty()) wait_ms = 10;
    }
    pollfd p{wake_[0], POLLIN, 0};
    poll(&p, wake_[0] >= 0 ? 1 : 0, wait_ms >= 0 ? wait_ms : (wake_[0] >= 0 ? -1 : 10));
    char drain[64];
    while (wake_[0] >= 0 && read(wake_[0], drain, sizeof(drain)) > 0) {
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const Running& r : running_) {
    kill(r.child, SIGKILL);
    int status = 0;
    while (waitpid(r.child, &status, 0) < 0 && errno == EINTR) {
    }
    Finish(r, "killed: the daemon stops", "killed");
  }
  running_.clear();
  counts_["dropped"] += waiting_.size();
  waiting_.clear();
  cv_.notify_all();
}

std::map<std::string, uint64_t> ExitHookRunner::Counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

bool ExitHookRunner::WaitIdle(int timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                      [this] { return waiting_.empty() && running_.empty(); });
}

std::vector<prometheus::MetricFamily> ExitHookCollector::Collect() const {
  static const FamilyInfo kFamily[] = {
      {"xtimer_exit_hooks_total", prometheus::MetricType::Counter,
       "--exit-hook runs by outcome: ok, failed, killed (past its time), dropped (its user "
       "had too many waiting, or the daemon stopped) (docs/crash.md)."},
  };
  FamilyBuilder b(kFamily, 1);
  for (const auto& c : runner_->Counts()) b.Add(0, {{"outcome", c.first}}, c.second);
  return b.Take();
}

}  // namespace daemon
}  // namespace xtimer
