// The live diagnosis's per-process view of completed operations, fed by the aggregator's op tap
// (daemon/model/aggregator.h): each process's ops go through an analysis::RankSummarizer, and every
// collective's Arrival is kept in a ring of the last kArrivalRing per communicator. Beside it,
// per communicator, the counters that need only the rank's own records (instances, own GPU time,
// bus bytes, busy and idle time before each arrival) and the process's last operation.
//
// Cost: the tap runs on the ring-reader thread under the aggregator's lock, so Add is O(1)
// amortised per record (one short critical section under this class's own lock, no allocation
// once a communicator's ring is full). Memory per process is bounded: at most max_comms rings of
// ring_size Arrivals (64 x 256 x 112 bytes, about 1.8 MiB, at the defaults) and the
// summarizer's pending work (kPendingWork intervals).
#ifndef XTIMER_DAEMON_LIVE_OPS_H_
#define XTIMER_DAEMON_LIVE_OPS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "analysis/analysis.h"
#include "daemon/model/rank_key.h"
#include "daemon/model/rank_model.h"
#include "format/record.h"

namespace xtimer {
namespace daemon {

constexpr size_t kArrivalRing = 256;
// Send/receive completion times kept per communicator: the cadence of communicators without
// collectives.
constexpr size_t kP2PCadence = analysis::kP2PCompletionsKept;
constexpr size_t kPendingWork = 1024;
// Collective instances completed since the last Copy, per process (all communicators): what the
// live diagnosis counts waits from. Beyond it (more than this many collectives a second on one
// process) the newest are not counted.
constexpr size_t kMaxNewSlices = 8192;

// Sums over a rank's completed collectives on one communicator.
struct OwnCounters {
  uint64_t instances = 0;
  double time_s = 0;       // own GPU time in them (includes waiting for later ranks)
  double bus_bytes = 0;    // bus bytes by opmath (nccl-tests factors)
  double busy_before_s = 0;  // Arrival::busy_before_ns summed
  double idle_before_s = 0;  // Arrival::idle_before_ns summed
};

// The process's newest completed operation (by completion time).
struct LastOp {
  bool valid = false;
  uint16_t op = 0;
  uint8_t kind = 0;
  uint64_t comm_id = 0;
  uint64_t seq = 0;
  int64_t issue_ns = 0;
  int64_t end_ns = 0;
};

// The part of an arrival that the wait counters use (40 bytes instead of an Arrival's 112).
struct Slice {
  uint64_t seq = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint64_t bytes = 0;
  uint16_t op = 0;
};

struct CommOps {
  std::vector<analysis::Arrival> arrivals;  // the newest ring_size, oldest first
  std::vector<int64_t> p2p_ends;  // GPU ends of the newest kP2PCadence sends/receives, oldest first
  OwnCounters counters;
  std::vector<Slice> new_slices;  // completed since the previous Copy, in completion order
};

struct ProcessOps {
  int32_t device = -1;  // of the newest op that named one
  LastOp last;
  std::map<uint64_t, CommOps> comms;
};

class LiveOps {
 public:
  explicit LiveOps(size_t ring_size = kArrivalRing, size_t max_comms = 64);
  ~LiveOps();
  LiveOps(const LiveOps&) = delete;
  LiveOps& operator=(const LiveOps&) = delete;

  // One completed op record of rank `key`.
  void Add(const RankKey& key, const format::OpRecord& r);
  // The tap: a batch of a process's completed ops (the aggregator's), under one lock.
  void AddAll(uint64_t process_id, const TapOp* ops, size_t n);
  // Copies of the state of the ranks in `keep` (of those it has seen), handing over (and
  // clearing) their new slices; forgets every other rank (gone from the aggregator), adding the
  // estimated bytes that frees to `*forgotten_bytes` when given.
  std::map<RankKey, ProcessOps> Copy(const std::set<RankKey>& keep,
                                      size_t* forgotten_bytes = nullptr);
  size_t process_count() const;
  uint64_t slices_dropped() const;

 private:
  struct Ring;
  struct Process;
  Ring* RingFor(Process* p, uint64_t comm_id, int64_t now_ns);
  void AddP2P(Process* p, uint64_t comm_id, int64_t end_ns);
  // The state of rank `key`, made when new; needs mu_.
  Process* ProcessOf(const RankKey& key);
  // One op into a rank's state; needs mu_.
  void AddLocked(Process* p, const format::OpRecord& r);

  const size_t ring_size_;
  const size_t max_comms_;
  mutable std::mutex mu_;
  std::map<RankKey, std::unique_ptr<Process>> processes_;
  uint64_t slices_dropped_ = 0;
};

// The analysis library's view of an op record.
analysis::TimedOp TimedOpOf(const format::OpRecord& r);

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_LIVE_OPS_H_
