// The anomaly log's judgment (docs/oplog.md "Anomaly log"): an operation is anomalous when the
// part of its duration that was surely GPU work (its judged time) is more than `factor` times the
// median judged time of its own signature (operation, shape or size, dtype, communicator size),
// the median taken over the signature's last `window` exact judged times once it has
// `min_samples` of them.
//
// The judged time. An op's duration runs from its start event to its end event. On a stream the
// host had let go idle, the start event runs at once and the op's work only when the host
// launches it, so the duration can hold host time; a collective's holds the wait for its peers.
// What the fields prove, a rank's ops being issued by one host thread: the host launched the op
// before it called any op issued after it (N: the earliest cpu_launch_ns of those that arrived
// by the time its stream's next op did), so the op's work cannot have begun after
//     L = max(gpu_start_ns, N),
// and a collective's transfer cannot have begun after the latest L of its instance's (comm_id,
// seq) members on this node. The judged time is the end minus that latest L (never below 0). It
// is exact (the whole of the op's work) when the latest L is a gpu_start_ns (the op was launched
// before its stream reached it); only exact times join the median, and any judged time, exact or
// a lower bound, is compared with it. An op is held until the member's next op on the same stream
// has arrived (every op issued before that one is seen by then, or completes on another stream)
// and, a collective, until every member of its communicator on this node has sent the instance
// (all comm_size members, until an instance decided by the hold time showed which are local), or
// for `hold_ns` (then an op with no N is judged from its gpu_start_ns, not exact). Host syncs
// (kHostSync: the host's wait for the GPU's backlog) are not judged.
//
// Bounded: at most `max_signatures` signatures (ops of further ones are counted, not judged), each
// with `window` durations; at most `max_held` ops held (beyond, the oldest is decided at once).
// Not thread-safe: one owner (the op log's writer thread).
#ifndef XTIMER_DAEMON_ANOMALY_H_
#define XTIMER_DAEMON_ANOMALY_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "format/record.h"

namespace xtimer {
namespace daemon {

struct AnomalyOptions {
  double factor = 3;          // --op-log-anomaly-factor: k
  size_t window = 63;         // durations kept per signature (the median's sample)
  size_t min_samples = 16;    // no judgment before this many durations
  size_t max_signatures = 4096;
  int64_t hold_ns = 5000000000;  // an op waits at most this long (daemon time) for what decides it
  size_t max_held = 16384;       // ops held at once
  size_t max_comms = 4096;       // communicators whose local members are remembered
};

struct AnomalyVerdict {
  bool anomalous = false;
  int64_t judged_ns = 0;  // the part of the duration that was surely the op's work
  bool exact = false;     // judged_ns is the whole of the op's work (it joined the median)
  int64_t median_ns = 0;  // 0 while the signature has fewer than min_samples durations
  uint64_t samples = 0;   // durations the median was taken over
};

// One op decided: its record, the member (the caller's key for the rank) and the verdict.
struct AnomalyDecision {
  format::OpRecord record;
  uint64_t member = 0;
  AnomalyVerdict verdict;
};

class AnomalyDetector {
 public:
  explicit AnomalyDetector(const AnomalyOptions& options);
  // Takes the op `r` of `member` (each member's ops in completion order) at daemon time now_ns,
  // and appends to *decided the ops this decides (this one, or earlier ones it completes).
  void Add(uint64_t member, const format::OpRecord& r, int64_t now_ns,
           std::vector<AnomalyDecision>* decided);
  // Decides the ops held since before now_ns - hold_ns (every one with `all`).
  void Expire(int64_t now_ns, bool all, std::vector<AnomalyDecision>* decided);
  size_t signatures() const { return signatures_.size(); }
  size_t held() const { return held_.size(); }
  uint64_t untracked() const { return untracked_; }  // ops of signatures beyond the bound

 private:
  struct Key {
    uint16_t op;
    uint8_t dtype;
    int32_t comm_size;
    int64_t m, n, k, batch;
    uint64_t bytes;
    bool operator==(const Key& o) const;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  struct Durations {
    std::vector<int64_t> ring;  // up to window, oldest overwritten
    size_t next = 0;
  };
  struct Held {
    format::OpRecord r;
    uint64_t member = 0;
    int64_t arrived_ns = 0;
    int64_t next_launch_ns = INT64_MAX;  // N: the earliest launch of the member's later ops
    bool bounded = false;                // the member's next op on the stream arrived
    int64_t latest_start_ns() const;     // L
    bool exact() const { return bounded && r.gpu_start_ns >= next_launch_ns; }
  };
  struct Member {
    std::vector<int64_t> recent;  // cpu_launch_ns of its last kRecent ops, a ring
    size_t pos = 0;
    std::vector<uint64_t> open;  // held ops whose stream's next op has not arrived (ids)
  };
  static constexpr size_t kRecent = 64;
  using PairKey = std::pair<uint64_t, uint64_t>;
  struct PairHash {
    size_t operator()(const PairKey& k) const;
  };

  static bool IsInstance(const format::OpRecord& r);
  // Decides the held op `id` (alone, or its whole instance) if nothing it waits for is missing.
  void TryDecide(uint64_t id, bool force, std::vector<AnomalyDecision>* decided);
  // `forced`: by the hold time or the bound, perhaps without every member.
  void DecideInstance(const PairKey& instance, bool forced, std::vector<AnomalyDecision>* decided);
  // Sets N of the new op and of the member's held ops; the ids its arrival bounds.
  void Bound(Member* m, const format::OpRecord& r, Held* h, std::vector<uint64_t>* bounded);
  void Decide(const Held& h, int64_t latest_start_ns, bool exact,
              std::vector<AnomalyDecision>* decided);
  // Judges judged_ns against the signature's median; an exact time then joins the signature.
  AnomalyVerdict Judge(const format::OpRecord& r, int64_t judged_ns, bool exact);
  void Forget(uint64_t id);

  const AnomalyOptions options_;
  std::unordered_map<Key, Durations, KeyHash> signatures_;
  std::vector<int64_t> scratch_;
  uint64_t untracked_ = 0;

  uint64_t next_id_ = 1;
  std::map<uint64_t, Held> held_;                                // by arrival: oldest first
  std::unordered_map<uint64_t, Member> members_;
  std::unordered_map<PairKey, std::vector<uint64_t>, PairHash> instances_;  // (comm, seq) -> ids
  // A communicator's members on this node: until an instance of it was decided by the hold time
  // (it spans nodes, or a member is gone), all comm_size of them are waited for; then those seen.
  struct LocalMembers {
    std::vector<uint64_t> seen;
    bool learned = false;
  };
  std::unordered_map<uint64_t, LocalMembers> comm_members_;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_ANOMALY_H_
