// Crash reports in the daemon (docs/crash.md): a crashing process sends its raw report (the
// crashing thread's pcs and the signal) over its registration connection and waits; on a thread
// of its own the reporter symbolizes it from the process's memory map (still there), writes
// <dump root>/crash-<unix s>-<pid>/<job>/ with the rank's .stacks file (StackCapturer's writer)
// and crash.json, acknowledges (the process then dies as it would have), records the crashing
// frame for the exited verdict, counts xtimer_rank_crashes_total{job,rank,signal} and hands
// crash.json to the --exit-hook runner (exit_hook.h), which never holds this thread.
#ifndef XTIMER_DAEMON_CRASH_REPORT_H_
#define XTIMER_DAEMON_CRASH_REPORT_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "daemon/dumps/exit_hook.h"
#include "daemon/dumps/stack_capture.h"
#include "daemon/model/aggregator.h"

namespace xtimer {
namespace daemon {

// Crash reports waiting to be symbolized and written, in all and per user: the users take turns
// (round robin), so one user's flood of reports neither delays another's nor crowds it out.
constexpr size_t kMaxQueuedCrashReports = 64;
constexpr size_t kMaxQueuedCrashReportsPerUid = 8;
// The `signal` label and signal_name of an uncaught Python exception's report (docs/crash.md).
constexpr char kPythonExceptionSignal[] = "python_exception";

// The report's facts; crash.json is their JSON (CrashJson).
struct CrashReport {
  std::string job, host, dir, frame;  // dir: the crash folder; frame: "function (module)"
  std::string app_frame;  // the innermost application frame's FrameText ("" when none)
  int pid = 0, tid = 0, signal = 0, si_code = 0;
  std::string signal_name, fault_address, thread;
  int64_t time_ns = 0;
  std::vector<int> ranks;
  int world_size = -1;
  std::vector<stacktrace::Frame> frames;  // the crashing thread's, innermost first
  std::vector<std::string> files;         // the .stacks files written
  std::string error;                      // why frames are missing, when they are
  bool python_exception = false;          // an uncaught Python exception (signal 0)
  std::string exception_type, exception_message;
};

// crash.json ("xtimer-crash" version 1, docs/crash.md).
std::string CrashJson(const CrashReport& r);

// "function (module base name)", "??" for a frame without a function; a Python frame
// "function (file base name:line)".
std::string FrameText(const stacktrace::Frame& f);

// The FrameText of the innermost frame of the application's (stacktrace/frame_owner.h) in
// `frames` (innermost first), "" when none is.
std::string AppFrameText(const std::vector<stacktrace::Frame>& frames);

// What the exited verdict says after "in" (analysis::CrashFrameText of frame and app_frame).
std::string CrashFrameText(const CrashReport& r);

class CrashReporter {
 public:
  CrashReporter(Aggregator* aggregator, StackCapturer* stacks, std::string exit_hook,
                std::function<int64_t()> realtime_ns,
                int exit_hook_timeout_ms = kExitHookTimeoutMs);
  ~CrashReporter();  // drops what is queued, finishes the report in progress, joins

  // From the ring thread (RingServer::SetCrashSink), for a process of user `uid`: queues, never
  // blocks; owns `memfd`. A report beyond the bounds above is dropped, logged and counted.
  void Submit(uint64_t process_id, uint32_t uid, int memfd, uint64_t size);
  // Crashes counted since start by (job, rank, signal name) (thread-safe).
  std::map<std::tuple<std::string, int, std::string>, uint64_t> Counts() const;
  // Reports dropped since start (thread-safe).
  uint64_t Dropped() const;
  const ExitHookRunner& exit_hooks() const { return hooks_; }

 private:
  struct QueuedReport {
    uint64_t id;
    uint32_t uid;
    int memfd;
    uint64_t size;
  };
  // The next report to handle, users in turn (mu_ held). False when none waits.
  bool NextLocked(QueuedReport* job);
  void Run();
  void Handle(const QueuedReport& job);
  // Symbolizes and writes the files; fills r.frames and r.files. Acknowledges the process.
  void WriteFiles(const std::vector<ProcessSnapshot>& ranks, const QueuedReport& job,
                  CrashReport* r);

  Aggregator* aggregator_;
  StackCapturer* stacks_;
  ExitHookRunner hooks_;
  const std::function<int64_t()> now_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint32_t, std::deque<QueuedReport>> queues_;  // by user; no empty deque is kept
  size_t queued_ = 0;
  uint32_t last_uid_ = 0;  // the user served last
  uint64_t dropped_ = 0;
  bool stop_ = false;
  std::map<std::tuple<std::string, int, std::string>, uint64_t> counts_;
  std::thread thread_;
};

// xtimer_rank_crashes_total{job,rank,signal} (docs/metrics.md).
class CrashCollector : public prometheus::Collectable {
 public:
  explicit CrashCollector(const CrashReporter* reporter) : reporter_(reporter) {}
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const CrashReporter* reporter_;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_CRASH_REPORT_H_
