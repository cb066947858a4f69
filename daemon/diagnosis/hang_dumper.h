// Automatic dumps on a hang verdict (docs/daemon.md "Live diagnosis"). After each live-diagnosis
// pass, a job with a verdict that has not been dumped in its current hang gets, through the
// DumpManager (symlink-safe, daemon/dumps/dump_root.h), a history dump of every local rank in
// <dump root>/<HangDirName of the hang's id>/<job>/ and hang-summary-<host>.json beside the timeline
// files (the job's HangCheckResponse, proto3 JSON; named after the ranks' host label, with a
// "-2", "-3", ... suffix rather than overwrite, so daemons sharing a dump root never collide),
// and, with a StackCapturer, every local rank's {rank:05d}-{world:05d}.stacks file.
// Once per hang: a job's hang ends, and the
// next verdict dumps again, when a pass finds no verdict for it (progress resumed). When a dump
// is already running (a user's capture), the automatic one waits for a later pass.
#ifndef XTIMER_DAEMON_HANG_DUMPER_H_
#define XTIMER_DAEMON_HANG_DUMPER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "daemon/diagnosis/diagnosis.h"
#include "daemon/dumps/dump_writer.h"
#include "daemon/dumps/stack_capture.h"

namespace xtimer {
namespace daemon {

// "hang-summary-<host>.json" (the host label under the job-id rule, util/label.h),
// or "hang-summary.json" for a node label with nothing left.
std::string HangSummaryName(const std::string& host);

// A hang's id, computed alike by every node that holds ranks of the job, so that their automatic
// dumps share one folder: the job's world communicator (size = the world size; of several, the
// one with the most completed collectives, then the smallest id) and its first collective no
// local rank completed (the largest last completed seq + 1). Every node has a member of a world
// communicator, and a collective completes on all members or none, so all nodes agree. A job
// without one (seen by no local rank) falls back to the head verdict's communicator and seq,
// which nodes that see different communicators of the hang do not share (docs/daemon.md).
struct HangId {
  uint64_t comm_id = 0;
  uint64_t seq = 0;
  bool world = false;  // from the world communicator (every node agrees)
};
HangId HangIdOf(const JobLive& job);

// True when the job's ranks on this node can hold the culprit of a hang that no local rank
// waits in (docs/daemon.md "Automatic dump"): some communicator has members on other nodes, and
// every local rank is live, has nothing in flight and has done nothing (no op issued or
// completed) for longer than its hang threshold (the smallest in force among its communicators
// that have a cadence; without one, the largest: --hang-timeout). Its peers elsewhere wait and
// their daemons dump; this node's dump holds the idle rank's progress, which the combined
// analysis needs to name it. Not a verdict: the analysis alone judges.
bool IdleWithRemotePeers(const JobLive& job, int64_t now_ns);

// True when every local rank of the job is live and waits in a collective whose communicator has
// members on other nodes and no completed instance yet, and has done nothing for longer than
// `early_ns` (--hang-early-seconds). Without a cadence the local analysis judges such a stall
// only on evidence of its own, which a node of waiting members lacks; the culprit's node judges
// it early (never_issued, a mismatch) and dumps. This node's dump holds the waiting members'
// calls, which the combined analysis needs (a mismatch's majority). Not a verdict. A first
// collective that takes longer than `early_ns` on a healthy job dumps too (docs/daemon.md).
bool WaitingOnRemotePeers(const JobLive& job, int64_t now_ns, int64_t early_ns);

// "hang-0x00000000000000ab-57" (format::CommIdText and the seq); `repeat` > 1 appends "-2", ...
// for a later hang of the job with the same id (the world communicator did not progress).
std::string HangDirName(const HangId& id, int repeat = 1);

class HangDumper {
 public:
  // `history`: records per rank to write (the aggregator's --history, capped at kMaxDumpHistory).
  // `stacks`: when set, every local rank's stacks are captured into the job's folder too
  // (docs/stacks.md "Capture from the daemon"), on a thread of this class's own: the pass, and
  // the verdict it publishes, never wait for ranks to answer.
  HangDumper(DumpManager* dumps, std::string node, int64_t history,
             StackCapturer* stacks = nullptr);
  ~HangDumper();  // waits for the capture in progress (bounded by its deadline)
  HangDumper(const HangDumper&) = delete;
  HangDumper& operator=(const HangDumper&) = delete;

  // Called with each new state (LiveDiagnosis's on_pass): writes the dumps due and sets each
  // job's dump_dir.
  void Update(LiveState* state);

 private:
  struct Hang {
    bool done = false;    // dumped, or failed (logged): not tried again in this hang
    std::string dir;      // the job's folder, when written
    std::string folder;   // the hang's folder name, fixed at its first try
  };
  // Writes one job's dump; returns false when the DumpManager is busy (try again later).
  bool Dump(const LiveState& state, const JobLive& job, Hang* hang);
  bool WriteSummary(const std::string& job_dir, const JobLive& job, const std::string& json,
                    std::string* error);

  static constexpr int kMaxSummaryTries = 64;
  // Queues the capture of the job's stacks beside its timelines (at most kMaxQueuedStacks wait).
  void CaptureStacks(const JobLive& job, const std::string& dir);
  void StackLoop();

  struct StackJob {
    std::string job, dir;
    std::vector<ProcessSnapshot> processes;
  };
  static constexpr size_t kMaxQueuedStacks = 16;
  DumpManager* dumps_;
  StackCapturer* stacks_;
  const std::string node_;
  const int64_t history_;
  std::map<std::string, Hang> hangs_;  // by job, while it has a verdict
  std::map<std::string, int> dumped_;  // "job/folder" -> hangs dumped under that id
  std::mutex stack_mu_;
  std::condition_variable stack_cv_;
  std::deque<StackJob> stack_jobs_;
  bool stack_stop_ = false;
  std::thread stack_thread_;  // runs only with a StackCapturer
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_HANG_DUMPER_H_
