// Handing freed memory back to the system, and the allocator policy xtimerd runs with.
//
// glibc keeps freed pages in its heaps; malloc_trim(0) returns them, but every trim makes the next
// allocations fault their pages in again (14-17 us a fault on a VM). So only memory that is really
// freed counts (processes removed, histories shrunk for the budget, what other parts of the
// daemon report): large frees are returned at once, smaller ones at most once a second, and after
// a return, trims go on once a second for a settling period (buffers that other threads size to
// the load, a scrape's exposition or the diagnosis's snapshot, shrink at their next use). A full
// history reuses its chunks and a scrape's buffers are reused by the next, so steady ingest and
// scrapes never trim. docs/daemon.md "Memory".
//
// Thread safety: every method takes its own mutex; MaybeReturn calls malloc_trim outside it.
#ifndef XTIMER_DAEMON_MEMORY_RETURN_H_
#define XTIMER_DAEMON_MEMORY_RETURN_H_

#include <cstddef>
#include <cstdint>
#include <mutex>

namespace xtimer {
namespace daemon {

// The memory estimate's charge for a hash-map node and its share of the bucket array.
constexpr size_t kHashNodeBytes = 64;

class MemoryReturner {
 public:
  // After this much was freed, memory is returned at once.
  static constexpr size_t kReturnAfterBytes = size_t{8} << 20;
  static constexpr int64_t kIntervalNs = 1000000000;
  static constexpr int64_t kSettleNs = int64_t{10} * 1000000000;

  // `bytes` (estimated) were really freed.
  void NoteFreed(size_t bytes);
  // Enough was freed that the next MaybeReturn returns memory at once.
  bool Pressing() const;
  // Calls malloc_trim(0) when the rules above say so (`now_ns` CLOCK_MONOTONIC); true when it did.
  bool MaybeReturn(int64_t now_ns);
  // How often memory was handed back so far.
  uint64_t returns() const;

 private:
  mutable std::mutex mu_;
  size_t freed_ = 0;             // estimated bytes freed since the last return
  int64_t last_ns_ = 0;          // the last return
  int64_t settle_until_ns_ = 0;  // returns go on once a second until then
  uint64_t returns_ = 0;
};

// The allocator settings xtimerd runs with (main, and daemon_bench to measure the same thing):
// blocks of 64 KiB and more (history chunks, latency samples, expositions) get their own
// mappings, returned to the system when freed; fixing the threshold also stops glibc from
// raising it after such frees, which left freed memory in the heaps. With a 1 MiB threshold
// scrapes stopped faulting, but 2-5 MiB stayed resident after ranks left (docs/daemon.md
// "Memory").
void SetMallocPolicy();

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_MEMORY_RETURN_H_
