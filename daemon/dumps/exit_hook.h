// The --exit-hook command (docs/crash.md): run once per crash report with crash.json on stdin.
//
// The hook runs as the crashed job's user under a root daemon, so it gets nothing of the
// daemon's but its input: stdin is a sealed copy of crash.json, stdout and stderr are /dev/null
// (a hook that wants output writes its own files), no other descriptor is inherited, and its
// environment is built from scratch (PATH, HOME, USER, LOGNAME, SHELL, LANG and
// XTIMER_CRASH_JSON_BYTES), never the daemon's. Hooks run beside crash reports, never in their
// way: ExitHookRunner starts them on its own thread, at most kExitHooksPerUid running and
// kExitHooksQueuedPerUid waiting per user, each killed after kExitHookTimeoutMs; a hook beyond
// those bounds is dropped, logged and counted (xtimer_exit_hooks_total{outcome}).
#ifndef XTIMER_DAEMON_DUMPS_EXIT_HOOK_H_
#define XTIMER_DAEMON_DUMPS_EXIT_HOOK_H_

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

namespace xtimer {
namespace daemon {

constexpr int kExitHookTimeoutMs = 10000;
constexpr size_t kExitHooksPerUid = 2;
constexpr size_t kExitHooksQueuedPerUid = 8;

// A started hook: its pid (-1 when it could not start) and why not.
struct StartedHook {
  pid_t pid = -1;
  std::string error;
};

// Starts `command` (split on spaces, no shell) with `input` on stdin, as `uid` (and its primary
// group, no supplementary groups) when the daemon is root and uid is not, with the clean
// environment and descriptors above. Does not wait.
StartedHook StartExitHook(const std::string& command, const std::string& input, uint32_t uid);

// Runs hooks asynchronously with the per-user bounds above (thread-safe).
class ExitHookRunner {
 public:
  // `timeout_ms`: each hook's limit (kExitHookTimeoutMs; tests pass less).
  ExitHookRunner(std::string command, int timeout_ms = kExitHookTimeoutMs);
  ~ExitHookRunner();  // kills what runs, drops what waits, joins

  bool enabled() const { return !command_.empty(); }
  // Queues one run for the crash of `pid`; never blocks. False (logged, counted) when `uid`
  // already has kExitHooksQueuedPerUid runs waiting.
  bool Submit(uint32_t uid, int pid, std::string input);
  // Runs finished by outcome: "ok", "failed", "killed", "dropped" (thread-safe).
  std::map<std::string, uint64_t> Counts() const;
  // Waits until nothing runs or waits (tests). False on timeout.
  bool WaitIdle(int timeout_ms);

 private:
  struct Run {
    uint32_t uid;
    int pid;  // the crashed process's
    std::string input;
  };
  struct Running {
    uint32_t uid;
    int crashed_pid;
    pid_t child;
    int64_t deadline_ms;  // CLOCK_MONOTONIC
  };
  void Loop();
  // Starts every waiting run whose user is under its running bound (mu_ held).
  void StartEligibleLocked();
  // Counts a run that ended (`outcome`: ok, failed, killed) and logs why it failed (mu_ held).
  void Finish(const Running& r, const std::string& why, const char* outcome);

  const std::string command_;
  const int timeout_ms_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Run> waiting_;
  std::vector<Running> running_;
  std::map<uint32_t, size_t> queued_per_uid_, running_per_uid_;
  std::map<std::string, uint64_t> counts_;
  bool stop_ = false;
  int wake_[2] = {-1, -1};  // a pipe that interrupts the loop's poll
  std::thread thread_;
};

// xtimer_exit_hooks_total{outcome} (docs/metrics.md).
class ExitHookCollector : public prometheus::Collectable {
 public:
  explicit ExitHookCollector(const ExitHookRunner* runner) : runner_(runner) {}
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const ExitHookRunner* runner_;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_DUMPS_EXIT_HOOK_H_
