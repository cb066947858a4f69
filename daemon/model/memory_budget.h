// The memory budget (docs/daemon.md "Memory budget"): the estimated bytes that every process's
// state holds, the budget and per-process cap they must stay within, the high-water mark above
// which the aggregator sheds exited processes and halves histories, and returning freed memory
// to the system. It owns those counters and nothing else: the processes are the aggregator's.
//
// Thread safety: none of its own but the returner's; its owner's lock guards it.
#ifndef XTIMER_DAEMON_MODEL_MEMORY_BUDGET_H_
#define XTIMER_DAEMON_MODEL_MEMORY_BUDGET_H_

#include <cstddef>
#include <cstdint>

#include "daemon/base/memory_return.h"
#include "daemon/model/op_history.h"

namespace xtimer {
namespace daemon {

class MemoryBudget {
 public:
  // `budget_bytes`: --memory-budget-mb; `max_process_bytes`: --process-memory-mb.
  MemoryBudget(size_t budget_bytes, size_t max_process_bytes)
      : budget_(budget_bytes), max_process_(max_process_bytes) {}

  // Adds `delta` (may be negative) to one process's estimate (*process_bytes) and the total;
  // freed bytes are noted for returning to the system.
  void Charge(size_t* process_bytes, int64_t delta);
  // Whether a process holding `process_bytes` may grow by `bytes` while `live` processes are
  // connected: never past its cap or the budget; above the high-water mark only within its
  // share, budget / (4 * max(64, live)), so that processes that register after hostile ones
  // filled the rest still get their series.
  bool MayGrow(size_t process_bytes, size_t bytes, size_t live) const;
  // 3/4 of the budget.
  size_t HighWater() const { return budget_ / 4 * 3; }
  bool AboveHighWater() const { return total_ > HighWater(); }
  // Counts what a history allocated and shrank; returns the bytes it allocated minus those it
  // freed (for Charge).
  int64_t NoteHistory(const OpHistory::Change& change);

  size_t total() const { return total_; }
  size_t budget() const { return budget_; }
  uint64_t history_chunks_allocated() const { return history_chunks_allocated_; }
  uint64_t history_shrinks() const { return history_shrinks_; }

  // Returning freed memory (daemon/base/memory_return.h); these take the returner's own lock.
  void NoteFreed(size_t bytes) { returner_.NoteFreed(bytes); }
  bool Pressing() const { return returner_.Pressing(); }
  void MaybeReturn(int64_t monotonic_ns) { returner_.MaybeReturn(monotonic_ns); }
  uint64_t returns() const { return returner_.returns(); }

 private:
  const size_t budget_;
  const size_t max_process_;
  size_t total_ = 0;
  uint64_t history_chunks_allocated_ = 0;  // history chunks ever allocated
  uint64_t history_shrinks_ = 0;
  MemoryReturner returner_;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_MODEL_MEMORY_BUDGET_H_
