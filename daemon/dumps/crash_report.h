// Crash reports in the daemon (docs/crash.md): a crashing process sends its raw report (the
// crashing thread's pcs and the signal) over its registration connection and waits; on a thread
// of its own the reporter symbolizes it from the process's memory map (still there), writes
// <dump root>/crash-<unix s>-<pid>/<job>/ with the rank's .stacks file (StackCapturer's writer)
// and crash.json, acknowledges (the process then dies as it would have), records the crashing
// frame for the exited verdict, counts xtimer_rank_crashes_total{job,rank,signal} and runs the
// --exit-hook command with crash.json on stdin.
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

#include "daemon/dumps/stack_capture.h"
#include "daemon/model/aggregator.h"

namespace xtimer {
namespace daemon {

constexpr size_t kMaxQueuedCrashReports = 64;
// The `signal` label and signal_name of an uncaught Python exception's report (docs/crash.md).
constexpr char kPythonExceptionSignal[] = "python_exception";
constexpr int kExitHookTimeoutMs = 10000;

// The report's facts; crash.json is their JSON (CrashJson).
struct CrashReport {
  std::string job, host, dir, frame;  // dir: the crash folder; frame: "function (module)"
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

// What the exited verdict says after "in" (analysis::CrashFrameText of the innermost frame).
std::string CrashFrameText(const CrashReport& r);

// Runs `command` (split on spaces, no shell) with `input` on stdin, for at most `timeout_ms`
// (then killed), as `uid` when the daemon is root and uid is not. Returns "" or why it failed
// ("exit status 3", "killed after 10000 ms", "exec: ...").
std::string RunExitHook(const std::string& command, const std::string& input, uint32_t uid,
                        int timeout_ms);

class CrashReporter {
 public:
  CrashReporter(Aggregator* aggregator, StackCapturer* stacks, std::string exit_hook,
                std::function<int64_t()> realtime_ns);
  ~CrashReporter();  // drops what is queued, finishes the report in progress, joins

  // From the ring thread (RingServer::SetCrashSink): queues, never blocks; owns `memfd`.
  void Submit(uint64_t process_id, int memfd, uint64_t size);
  // Crashes counted since start by (job, rank, signal name) (thread-safe).
  std::map<std::tuple<std::string, int, std::string>, uint64_t> Counts() const;

 private:
  struct Job {
    uint64_t id;
    int memfd;
    uint64_t size;
  };
  void Run();
  void Handle(const Job& job);
  // Symbolizes and writes the files; fills r.frames and r.files. Acknowledges the process.
  void WriteFiles(const std::vector<ProcessSnapshot>& ranks, const Job& job, CrashReport* r);

  Aggregator* aggregator_;
  StackCapturer* stacks_;
  const std::string exit_hook_;
  const std::function<int64_t()> now_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
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
