// The POSIX shared-memory segment through which the ranks of one communicator meet.
//
// Ranks may be processes or threads; either way each rank of a communicator maps the segment
// named after the communicator's unique id (/dev/shm/xtsim-nccl-<32 hex digits>). Threads of one
// process share one mapping (a process-wide registry), so that every address of the segment is
// the same in all of them and the synchronisation is visible to ThreadSanitizer.
//
// Layout (all offsets are multiples of 64; sizes are fixed by the creator and read from the
// header by everyone else):
//
//   ShmHeader                                   one
//   ShmRank[nranks]                             identity and per-rank exchange slots
//   staging[nranks][2][slot_bytes]              collectives: each rank's chunk, double-buffered
//   { ShmP2p, ring[p2p_bytes] }[nranks*nranks]  send/recv: one channel per (sender, receiver)
//
// Lifetime. The first rank to arrive creates the segment (O_EXCL) and initialises it; the others
// wait for `ready`. The rank whose arrival completes the communicator unlinks the name: from then
// on the memory lives exactly as long as some rank maps it, so neither a normal exit nor a crash
// can leave anything behind. Only a crash in the middle of initialisation can leave a name; the
// names carry 128 random bits, so a stale one is never reused, and SweepStaleSegments() removes
// those whose processes are all gone.
//
// Every word that another rank may read concurrently is a lock-free std::atomic (address-free, so
// it works across processes); staging and ring bytes are ordered by those atomics.
#ifndef XTIMER_TEST_GPUSIM_NCCL_SHM_H_
#define XTIMER_TEST_GPUSIM_NCCL_SHM_H_

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace xtsim {
namespace nccl {

static_assert(std::atomic<uint64_t>::is_always_lock_free,
              "shared-memory atomics must be lock free");
static_assert(std::atomic<int64_t>::is_always_lock_free, "shared-memory atomics must be lock free");

inline constexpr uint64_t kShmMagic = 0x314c4343'4e535458ull;  // "XTSNCCL1"
inline constexpr uint32_t kShmVersion = 2;
// How many split exchanges may be outstanding on one communicator (see ShmRank::ctrl).
inline constexpr int kCtrlSlots = 16;

struct alignas(64) ShmHeader {
  uint64_t magic;
  uint32_t version;
  uint32_t nranks;
  uint64_t slot_bytes;  // staging bytes per rank and buffer
  uint64_t p2p_bytes;   // ring bytes per channel
  uint64_t total_bytes;
  int32_t creator_pid;
  uint64_t creator_pidns;                    // PidNamespace() of the creator
  std::atomic<uint32_t> ready;               // 1 once the creator has initialised everything above
  alignas(64) std::atomic<uint32_t> joined;  // ranks that have attached
  alignas(64) std::atomic<uint64_t> data_barrier;  // arrivals at the collectives' barrier
};

// One split exchange: (color, key) published by a rank, tagged with the exchange number.
struct ShmCtrl {
  std::atomic<uint64_t> seq;  // exchange number + 1 once color and key are valid
  std::atomic<int64_t> color;
  std::atomic<int64_t> key;
};

struct alignas(64) ShmRank {
  std::atomic<uint32_t> claimed;  // set by the rank that attached in this slot
  std::atomic<uint32_t> present;  // 1 once the fields below are valid
  int32_t pid;
  uint64_t pidns;  // PidNamespace() of the rank's process: pids mean nothing across namespaces
  int32_t global_rank;
  int32_t node;
  int32_t cuda_dev;
  // Virtual arrival time of this rank at the collective with sequence parity i.
  std::atomic<int64_t> arrival_ns[2];
  // What this rank called there (ops.cc, CollectiveSignature): members compare them after the
  // collective's first barrier, and all spin forever when they differ, as mismatched NCCL
  // kernels wait for data that never comes.
  std::atomic<uint64_t> signature[2][2];
  // ncclCommSplit exchanges, by exchange number modulo kCtrlSlots, and how many of them this rank
  // has read from everybody (a writer waits for all readers before reusing a slot).
  std::atomic<uint64_t> ctrl_consumed;
  ShmCtrl ctrl[kCtrlSlots];
};

// One direction of a send/recv pair. Messages are matched in order: message m of the sender is
// message m of the receiver. Bytes flow through a ring; head and tail count bytes ever written
// and read.
struct alignas(64) ShmP2p {
  std::atomic<uint64_t> send_arrived;  // messages whose sender has arrived
  std::atomic<uint64_t> recv_arrived;  // messages whose receiver has arrived
  std::atomic<int64_t> send_arrival_ns[2];
  std::atomic<int64_t> recv_arrival_ns[2];
  std::atomic<uint64_t> send_bytes[2];  // the sender's size of message m (parity m)
  alignas(64) std::atomic<uint64_t> head;
  alignas(64) std::atomic<uint64_t> tail;
};

class Segment {
 public:
  // Opens (creating it if this rank is first) the segment `name` for a communicator of `nranks`.
  // Threads of this process that open the same name share the mapping. Returns nullptr with a
  // message in *error on failure.
  static std::shared_ptr<Segment> Open(const std::string& name, int nranks, std::string* error);

  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  const std::string& name() const { return name_; }
  int nranks() const { return static_cast<int>(header_->nranks); }
  uint64_t slot_bytes() const { return header_->slot_bytes; }
  uint64_t p2p_bytes() const { return header_->p2p_bytes; }
  ShmHeader* header() const { return header_; }
  ShmRank* rank(int r) const;
  uint8_t* staging(int r, int buffer) const;
  ShmP2p* p2p(int src, int dst) const;
  uint8_t* ring(int src, int dst) const;

  // Removes the name (idempotent). The memory stays mapped.
  void Unlink();

 private:
  Segment(std::string name, uint8_t* base, size_t size);

  const std::string name_;
  uint8_t* const base_;
  const size_t size_;
  ShmHeader* const header_;
  // Offsets of the layout above, computed once from the header.
  size_t ranks_offset_ = 0;
  size_t staging_offset_ = 0;
  size_t p2p_offset_ = 0;
  size_t channel_stride_ = 0;
  size_t ring_offset_ = 0;
  std::atomic<bool> unlinked_{false};
};

// "/xtsim-nccl-<hex>" for 16 key bytes.
std::string SegmentName(const uint8_t key[16]);

// Identifies this process's PID namespace (0 when unknown). Containers and sandboxes may share
// /dev/shm while each has its own pids, so a pid is only checked from its own namespace.
uint64_t PidNamespace();

// True only when the process is certainly gone: it ran in this PID namespace and its pid no longer
// exists. (A reused pid makes a dead process look alive: the safe direction.)
bool ProcessGone(int32_t pid, uint64_t pidns);

// Unlinks /dev/shm/xtsim-nccl-* segments left by runs whose processes have all exited: segments
// whose creator and attached ranks all ran in this PID namespace and are all gone. Anything else
// (another namespace, unknown namespace, a segment still being sized) is kept.
void SweepStaleSegments();

}  // namespace nccl
}  // namespace xtsim

#endif  // XTIMER_TEST_GPUSIM_NCCL_SHM_H_
