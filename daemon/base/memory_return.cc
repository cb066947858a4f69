#include "daemon/base/memory_return.h"

#include <malloc.h>

namespace xtimer {
namespace daemon {

void MemoryReturner::NoteFreed(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  freed_ += bytes;
}

bool MemoryReturner::Pressing() const {
  std::lock_guard<std::mutex> lock(mu_);
  return freed_ >= kReturnAfterBytes;
}

bool MemoryReturner::MaybeReturn(int64_t now_ns) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Large frees at once; smaller ones (the last processes of a job leaving) within a second.
    const bool settling = now_ns < settle_until_ns_;
    if ((freed_ == 0 && !settling) || (freed_ < kReturnAfterBytes && now_ns - last_ns_ < kIntervalNs)) {
      return false;
    }
    if (freed_ > 0) settle_until_ns_ = now_ns + kSettleNs;
    freed_ = 0;
    last_ns_ = now_ns;
    ++returns_;
  }
  malloc_trim(0);
  return true;
}

uint64_t MemoryReturner::returns() const {
  std::lock_guard<std::mutex> lock(mu_);
  return returns_;
}

void SetMallocPolicy() { mallopt(M_MMAP_THRESHOLD, 64 << 10); }

}  // namespace daemon
}  // namespace xtimer
