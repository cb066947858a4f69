#include "daemon/model/memory_budget.h"

#include <algorithm>

namespace xtimer {
namespace daemon {
namespace {

// The share of a process above the high-water mark is budget / (4 * max(live, this)): with up to
// this many processes the last quarter of the budget covers every share.
constexpr size_t kShareProcesses = 64;

}  // namespace

void MemoryBudget::Charge(size_t* process_bytes, int64_t delta) {
  *process_bytes = static_cast<size_t>(static_cast<int64_t>(*process_bytes) + delta);
  total_ = static_cast<size_t>(static_cast<int64_t>(total_) + delta);
  if (delta < 0) returner_.NoteFreed(static_cast<size_t>(-delta));
}

bool MemoryBudget::MayGrow(size_t process_bytes, size_t bytes, size_t live) const {
  if (process_bytes + bytes > max_process_) return false;
  if (total_ + bytes > budget_) return false;
  if (total_ + bytes <= HighWater()) return true;
  const size_t share = budget_ / (4 * std::max(kShareProcesses, live));
  return process_bytes + bytes <= share;
}

int64_t MemoryBudget::NoteHistory(const OpHistory::Change& change) {
  history_chunks_allocated_ += change.allocated;
  history_shrinks_ += change.shrunk;
  return (static_cast<int64_t>(change.allocated) - static_cast<int64_t>(change.freed)) *
         static_cast<int64_t>(OpHistory::kChunkBytes);
}

}  // namespace daemon
}  // namespace xtimer
