// Dumps: per-rank timeline files (timeline/format.h; one per device rank of a process that drives
// several devices, daemon/model/aggregator.h) from the aggregator's history and/or a
// capture of the records that arrive from a given time on. Transport-free: the control handler
// (daemon/control/control_handler.h) validates requests and calls Start(); tests call it directly.
//
// A capture installs the aggregator's op tap (called on the ring-reader thread under the
// aggregator's lock; it only appends to per-process buffers under this class's own lock) and a
// thread that ends it when every rank has its count, has exited or has gone idle, the duration is
// over, the deadline passed, or the dump is cancelled; that thread then writes the files. A
// capture whose ranks have all exited already is written at once. One dump at a time.
#ifndef XTIMER_DAEMON_DUMP_WRITER_H_
#define XTIMER_DAEMON_DUMP_WRITER_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "daemon/model/aggregator.h"
#include "timeline/timeline_io.h"

namespace xtimer {
namespace daemon {

// Bounds (also the request validation's limits; docs/control.md).
constexpr int64_t kMaxDumpCount = 1000000;        // events per rank in a capture
constexpr int64_t kMaxDumpHistory = 10000000;     // history records per rank
constexpr double kMaxDumpDurationS = 3600;        // capture length
constexpr int64_t kMaxDumpTimeAheadS = 3600;      // dump_time at most this far in the future
constexpr int64_t kMaxCaptureWaitS = 600;         // a count-only capture ends after this at most
constexpr int64_t kCaptureGraceNs = 1000000000;   // records of a window arrive up to 1 s later
constexpr double kDefaultCaptureIdleS = 30;       // a rank with no op for this long is done
constexpr int64_t kMaxDumpTimeBehindS = 10;       // a capture's dump_time may be this far past
// A rank "fell short" of a count capture when it got fewer than this fraction of dump_count.
constexpr double kShortFraction = 0.5;

// A validated request.
struct DumpRequest {
  std::string dir;           // absolute, resolved, inside the dump root
  int64_t dump_time_ns = 0;  // capture starts (CLOCK_REALTIME ns)
  int64_t count = 0;         // events per rank to capture (0: no count limit)
  double duration_s = 0;     // capture length (0: until count)
  double timeout_s = kMaxCaptureWaitS;    // a count-only capture ends this long after dump_time
  double idle_s = kDefaultCaptureIdleS;   // a rank with no op record for this long is done
  int64_t history = 0;       // last N kept records per rank
  uint32_t kinds = 0;        // timeline::kDump* mask, 0 = all
  std::set<int> ranks;       // empty: all
  std::set<std::string> jobs;
  bool reset = false;
  uint32_t owner_uid = 0;  // the caller's user: dump capacity is shared between users
  bool capture() const { return count > 0 || duration_s > 0; }
};

// A capture holds the daemon's one dump slot; another user's request ends it (its files are
// written with what it has, as a reset does) once it has held the slot this long, so no user can
// deny dumps to another (issue 36). The same user's requests wait for their own capture.
constexpr int64_t kDumpFairShareNs = 10LL * 1000000000;

struct DumpFileInfo {
  std::string path, job, host;
  int pid = 0, rank = -1, local_rank = -1, world_size = -1;
  uint64_t events = 0;    // written (history and capture)
  uint64_t captured = 0;  // of which captured from dump_time on
  int64_t requested = 0;  // dump_count
  // Why this rank's capture ended: "count", "exited", "idle", "duration", "deadline",
  // "cancelled"; "" for history-only dumps and while capturing.
  std::string ended;
  bool fell_short = false;  // a count capture got < kShortFraction * dump_count events
  std::string error;
};

// "rank 1 (12 of 100 events, exited), rank 3 (0 of 100, idle)" for the files that fell short;
// "" when none did.
std::string DescribeShortRanks(const std::vector<DumpFileInfo>& files);

// Gives a job's dump folder (the open directory `dir_fd`, named `dir` in messages) to the job's
// uid with mode 0700, so that its files are readable by that user and root only
// (docs/security.md). A folder that already belongs to another uid than the job's or the
// daemon's, or a daemon's folder that is not empty, is refused (false with *error): it may hold
// another user's files.
bool GiveJobDirTo(int dir_fd, const std::string& dir, uint32_t uid, std::string* error);

struct DumpStatus {
  std::string state = "idle";  // idle, capturing, written, cancelled
  std::string id;
  std::string dir;
  int64_t dump_time_ns = 0;
  int64_t deadline_ns = 0;
  std::vector<DumpFileInfo> files;
};

enum class DumpError { kNone, kBusy, kIo };

// Communicator member tables: (job, comm id) -> global rank by communicator rank, from every
// process of the job on this node; members on other nodes stay -1. Dump files and the live
// diagnosis (daemon/diagnosis/diagnosis.h) describe communicators with it. Sizes above
// kMaxCommSize are
// not believed.
constexpr int kMaxCommSize = 1 << 20;
using CommMembers = std::map<std::pair<std::string, uint64_t>, std::vector<int32_t>>;
CommMembers CommMembersOf(const Snapshot& snap);

// The directory name used for a job inside the dump directory: the job label sanitized as the
// hook and launcher do (util/label.h; a ring may come from another build of the hook), or
// "_nojob" for an empty job or one of "." and "..".
std::string JobDirName(const std::string& job);

class DumpManager {
 public:
  // `root`: the resolved dump root; `node`: this host's name (metadata).
  DumpManager(Aggregator* aggregator, std::string root, std::string node,
              std::function<int64_t()> realtime_ns);
  ~DumpManager();  // cancels a capture (its files are written) and joins
  DumpManager(const DumpManager&) = delete;
  DumpManager& operator=(const DumpManager&) = delete;

  // Starts a dump. History-only dumps are written before this returns. On kBusy, *error says
  // which dump runs. *out describes what is (or will be) written where.
  DumpError Start(const DumpRequest& request, DumpStatus* out, std::string* error);
  // The current or last dump.
  DumpStatus Current() const;
  // Waits until no capture runs (tests). Returns false on timeout.
  bool WaitIdle(int64_t timeout_ms);
  // The ranks the current dump captures from; none once it is written (tests).
  size_t captures_held() const;
  // Tests: how long a capture holds the slot against another user (kDumpFairShareNs).
  void SetFairShareForTesting(int64_t ns) { fair_share_ns_ = ns; }
  const std::string& root() const { return root_; }

 private:
  struct Capture;
  struct Job;
  void Run(std::shared_ptr<Job> job);
  // One process's capture: its file's identity and path (a second claimant of a path gets the
  // rank -1 name), its communicator table.
  static std::unique_ptr<Capture> CaptureOf(const ProcessSnapshot& p, const DumpRequest& request,
                                            const CommMembers& members,
                                            std::set<std::string>* used_paths);
  // A new dump of `request` at `now`: its id, deadline and captures (not yet published).
  std::shared_ptr<Job> PlanJob(const DumpRequest& request, int64_t now);
  // Whether the running capture must give way to a request of `uid` (another user, and the
  // capture has held the slot fair_share_ns_); else false with *error (mu_ held).
  bool FairShareOverLocked(uint32_t uid, std::string* error) const;
  // Copies each capture's requested history (after the tap is live).
  void TakeHistory(Job* job);
  // Marks the ranks whose capture is over (count, exited, idle); true when all are.
  bool EndRanks(Job* job, int64_t mono_ns);
  void Finish(Job* job, bool cancelled);
  // The capture's records (history, then what the tap caught after it); fills f's counts and
  // how its capture ended.
  std::vector<format::OpRecord> TakeRecords(Capture* c, const DumpRequest& q, bool cancelled,
                                            bool window_over, DumpFileInfo* f);
  // The file's metadata; `names` gets name_id -> index of its string table.
  timeline::Metadata MetadataOf(const Capture& c, const DumpRequest& q,
                                const std::vector<format::OpRecord>& records,
                                std::unordered_map<uint32_t, uint32_t>* names);
  // Writes the capture's file (given to the job's user); "" or the error. Sets f->events.
  std::string WriteFile(const Capture& c, const DumpRequest& q,
                        const std::vector<format::OpRecord>& records, DumpFileInfo* f);
  void CancelAndJoin();
  // The op tap: a batch of a process's ops; TapLocked, one of them (needs mu_ and a job).
  void Tap(ProcessId id, const TapOp* ops, size_t n);
  void TapLocked(ProcessId id, int rank_device, uint64_t seq, const format::OpRecord& r);

  Aggregator* aggregator_;
  int tap_id_ = 0;
  const std::string root_;
  const std::string node_;
  const std::function<int64_t()> now_;

  std::mutex start_mu_;  // serialises Start and the destructor
  mutable std::mutex mu_;  // everything below; the tap takes it
  std::condition_variable cv_;
  std::shared_ptr<Job> job_;  // the running or last dump
  bool running_ = false;
  int64_t fair_share_ns_ = kDumpFairShareNs;
  bool cancel_ = false;
  std::thread thread_;
  uint64_t next_id_ = 1;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_DUMP_WRITER_H_
