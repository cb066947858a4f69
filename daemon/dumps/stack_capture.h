// Stack captures from the daemon (docs/stacks.md "Capture from the daemon"): asks the chosen
// registered processes for their raw stacks (through the ring server, which owns the
// connections), then, on the calling thread (never the ring thread), symbolizes each answer
// (stacktrace/symbolize.h) and writes one `{rank:05d}-{world:05d}.stacks` file per rank (a
// process that has not said its rank and world size: `pid-PID[-devD].stacks`) into
// <dir>/<job>/ under the dump root, given to the job's user as dumps are (daemon/dumps/dump_root.h,
// GiveJobDirTo). A rank that does not answer in time, answers garbage or is gone still gets its
// file, with `error` saying why. Counts every rank's capture by outcome for the metric
// xtimer_stack_captures_total.
#ifndef XTIMER_DAEMON_STACK_CAPTURE_H_
#define XTIMER_DAEMON_STACK_CAPTURE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "daemon/ingest/ring_server.h"
#include "daemon/model/aggregator.h"
#include "stacktrace/stacks_file.h"
#include "stacktrace/symbolize.h"

namespace xtimer {
namespace daemon {

constexpr int kDefaultStackTimeoutMs = 2000;
constexpr int kMaxStackTimeoutMs = 30000;

struct StackDumpRequest {
  std::string dir;  // absolute, resolved, inside the dump root; files go to dir/<job>/
  std::set<int> ranks;  // empty: all
  std::set<std::string> jobs;  // empty: all
  int timeout_ms = kDefaultStackTimeoutMs;
};

struct StackFileInfo {
  std::string path, job, host;
  int pid = 0, rank = -1, local_rank = -1, world_size = -1;
  int threads = 0;
  // "written" or a failure: "no_answer", "bad_reply", "exited", "denied" (MayReadProcess) ...
  std::string outcome;
  std::string error;    // the file's error (why its stacks are missing), or why none was written
  std::string content;  // the file's text, when one was written
};

class StackCapturer {
 public:
  // RingServer::AskStacks, or a stand-in in tests.
  using AskFn = std::function<void(ProcessId, int timeout_ms, StackSink)>;
  StackCapturer(Aggregator* aggregator, AskFn ask, std::string root, std::string node,
                std::function<int64_t()> realtime_ns, std::string proc_root = "/proc");

  // Captures the registered (not exited) processes that `request` selects and writes their
  // files; returns when all are written, at most about timeout_ms plus symbolization later.
  std::vector<StackFileInfo> Capture(const StackDumpRequest& request);
  // The same for processes chosen already (the hang dumper: a job's ranks).
  std::vector<StackFileInfo> CaptureProcesses(const std::vector<ProcessSnapshot>& processes,
                                              const std::string& dir, int timeout_ms);

  // Builds, symbolizes and writes the files of one process's answer (a reply or a crash report)
  // into <dir>/<job>/, one per rank; `count`: counts each rank in xtimer_stack_captures_total.
  // *built (when given): the symbolized stacks, whether or not a file could be written.
  void WriteAnswer(const std::vector<ProcessSnapshot>& ranks, const std::string& dir,
                   StackAnswer answer, std::vector<StackFileInfo>* out, bool count = true,
                   stacktrace::StacksFile* built = nullptr);

  // Ranks captured since start, by outcome (thread-safe).
  std::map<std::string, uint64_t> Outcomes() const;
  const std::string& root() const { return root_; }

 private:
  struct PendingAnswers;
  void Count(const std::string& outcome);
  // The process's stacks from its answer into *file (threads, frames, time, state; not whose
  // they are): returns the outcome, and in *error why stacks are missing.
  std::string Symbolize(int pid, uint32_t uid, StackAnswer answer,
                        stacktrace::StacksFile* file, std::string* error);

  Aggregator* aggregator_;
  AskFn ask_;
  const std::string root_;
  const std::string node_;
  const std::function<int64_t()> now_;
  const std::string proc_root_;
  stacktrace::Symbolizer symbolizer_;
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> outcomes_;
};

// xtimer_stack_captures_total{outcome} (docs/metrics.md).
class StackCaptureCollector : public prometheus::Collectable {
 public:
  explicit StackCaptureCollector(const StackCapturer* capturer) : capturer_(capturer) {}
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const StackCapturer* capturer_;
};

// The raw capture in an answer's memfd; false with *error. Only memory-backed files are read (a
// memfd): a file on a slow file system could hold the capture.
bool ReadStackAnswer(const StackAnswer& a, std::string* text, std::string* error);

// Writes `text` as `name` in `dir` (absolute, under `root`) through a temporary renamed into
// place, the folder given to `uid` as dump folders are. False with *error.
bool WriteFileUnderRoot(const std::string& root, const std::string& dir, const std::string& name,
                        const std::string& text, uint32_t uid, std::string* error);

// Writes `text` as `name` in `dir` (absolute, under `root`), a folder of the daemon's that no
// user may write, readable by the daemon's user only (mode 0600): evidence that analysis can
// trust (docs/security.md). False with *error.
bool WriteDaemonFile(const std::string& root, const std::string& dir, const std::string& name,
                     const std::string& text, std::string* error);

// Removes `dir` (absolute, under `root`, never through a symlink) when it is empty.
void RemoveDirIfEmpty(const std::string& root, const std::string& dir);

// Whether `uid` (the registrant's) could read the memory of process `pid` itself now, as the
// daemon symbolizes it (docs/security.md "Symbolization"): root always; another uid while
// PROC/PID belongs to it (the kernel gives it to root when the process is not dumpable, as after
// a setuid or setgid program) and the process's real, effective, saved and filesystem uids are
// all `uid` and its gids all one. False with *why, the reason a refused file gives.
bool MayReadProcess(const std::string& proc_root, int pid, uint32_t uid, std::string* why);

// The state letter of /proc/PID/stat ("S", "R", "D"...), "" when unreadable.
std::string ProcessState(const std::string& proc_root, int pid);

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_STACK_CAPTURE_H_
