// NCCL communicators this process holds, without reading NCCL's private structures.
//
// Identity: a communicator's id is a 64-bit hash of its ncclUniqueId (identical on every rank).
// Children of ncclCommSplit hash (parent id, the parent's split counter, color): every rank of the
// parent calls split in the same order, so the counters agree. ncclCommShrink children hash
// (parent id, shrink counter, sorted exclude list). ncclCommInitAll, whose ranks are all in this
// process, hashes (pid, per-process InitAll counter). Id 0 is never used (it means "no comm").
//
// Rank and size come from ncclCommUserRank / ncclCommCount of the real library; a communicator
// still being created (inside a group, or non-blocking) is resolved later (Resolve).
//
// Sequence numbers: every collective on a communicator takes the next value of its collective
// counter at the host call; send/recv take the next value of the counter of (comm, peer), so send
// m from A to B and B's receive m from A carry the same number. Both start at 1.
//
// Lookup is lock-free (open addressing over atomic keys); insertion and removal take a mutex.
#ifndef XTIMER_HOOK_COMM_REGISTRY_H_
#define XTIMER_HOOK_COMM_REGISTRY_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

namespace xtimer {
namespace hook {

uint64_t HashBytes(const void* data, size_t size, uint64_t seed);
uint64_t CommIdFromUniqueId(const void* unique_id, size_t size);
uint64_t CommIdForSplit(uint64_t parent, uint64_t split_counter, int color);
uint64_t CommIdForShrink(uint64_t parent, uint64_t shrink_counter, const int* exclude, int count);
uint64_t CommIdForInitAll(int pid, uint64_t counter);

enum class CommOrigin : uint8_t { kInit = 0, kSplit = 1, kShrink = 2 };

struct CommEntry {
  uint64_t id = 0;
  uint64_t parent_id = 0;
  CommOrigin origin = CommOrigin::kInit;
  std::atomic<bool> resolved{false};  // rank/size known and the CommRecord sent
  int rank = -1;
  int size = 0;
  int device = -1;
  std::atomic<uint64_t> next_seq{1};
  std::atomic<uint64_t> split_counter{0};
  std::atomic<uint64_t> shrink_counter{0};
  std::unique_ptr<std::atomic<uint64_t>[]> peer_seq;  // size entries once resolved

  uint64_t NextCollectiveSeq() { return next_seq.fetch_add(1, std::memory_order_relaxed); }
  uint64_t UpcomingCollectiveSeq() const { return next_seq.load(std::memory_order_relaxed); }
  uint64_t UpcomingP2PSeq(int peer) const {
    if (!resolved.load(std::memory_order_acquire) || peer < 0 || peer >= size) return 0;
    return peer_seq[peer].load(std::memory_order_relaxed) + 1;
  }
  // 0 when the peer is out of range or the size is unknown.
  uint64_t NextP2PSeq(int peer) {
    if (!resolved.load(std::memory_order_acquire) || peer < 0 || peer >= size) return 0;
    return peer_seq[peer].fetch_add(1, std::memory_order_relaxed) + 1;
  }
};

class CommRegistry {
 public:
  static constexpr size_t kSlots = 4096;

  // Inserts (or replaces) the entry for `comm`. Returns it.
  CommEntry* Insert(const void* comm, uint64_t id, uint64_t parent_id, CommOrigin origin);
  // The entry for `comm`, or null. Lock-free.
  CommEntry* Lookup(const void* comm) const;
  // Forgets `comm` (its entry stays allocated: ops in flight may still point at it).
  void Remove(const void* comm);
  // Sets rank/size/device once known; allocates the p2p counters. Returns true the first time
  // the entry becomes resolved (the caller then emits its CommRecord).
  bool Resolve(CommEntry* entry, int rank, int size, int device);
  // Calls fn(comm, entry) for every live unresolved entry (cold; under the mutex).
  template <typename Fn>
  void ForEachUnresolved(Fn fn) {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < kSlots; ++i) {
      const void* k = slots_[i].key.load(std::memory_order_acquire);
      CommEntry* e = slots_[i].entry.load(std::memory_order_acquire);
      if (k != nullptr && k != Tombstone() && e != nullptr &&
          !e->resolved.load(std::memory_order_acquire)) {
        fn(k, e);
      }
    }
  }

 private:
  static const void* Tombstone() { return reinterpret_cast<const void*>(1); }
  static size_t SlotOf(const void* p) {
    uint64_t x = reinterpret_cast<uintptr_t>(p);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return static_cast<size_t>(x) & (kSlots - 1);
  }
  struct Slot {
    std::atomic<const void*> key{nullptr};
    std::atomic<CommEntry*> entry{nullptr};
  };
  Slot slots_[kSlots];
  std::mutex mu_;

 public:
  // Entries inserted and not yet resolved (a cheap check before ForEachUnresolved).
  std::atomic<int> unresolved{0};
};

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_COMM_REGISTRY_H_
