// One process's history of recent OpRecords (for dumps): the newest `capacity` records in
// lazily allocated chunks of kChunk records. Chunk number c holds records
// [c * kChunk, (c + 1) * kChunk) of the process. No reallocation, an idle process costs nothing, a
// full history rotates through its own chunks (nothing freed or faulted in again), and the oldest
// chunks go first under memory pressure.
//
// It owns its chunks and nothing else: the memory budget stays with its owner (the Aggregator),
// which Append asks before a chunk is allocated and which reads the chunk count for its estimate.
// Thread safety: none; the owner's lock guards it.
#ifndef XTIMER_DAEMON_OP_HISTORY_H_
#define XTIMER_DAEMON_OP_HISTORY_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "format/record.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace xtimer {
namespace daemon {

class OpHistory {
 public:
  static constexpr size_t kChunk = 4096;
  static constexpr size_t kChunkBytes = kChunk * sizeof(format::OpRecord);

  // What an Append or a Shrink did, for the owner's memory accounting and counters.
  struct Change {
    size_t allocated = 0;  // chunks allocated
    size_t freed = 0;      // chunks freed
    size_t shrunk = 0;     // chunks (or records) given up early for the budget
  };

  explicit OpHistory(size_t capacity) : capacity_(capacity) {}

  // Appends r. `may_allocate()` (returning bool) is asked before a chunk is allocated: when it
  // says no, the oldest chunk is reused (its records dropped), or with none the record is not
  // kept.
  template <typename MayAllocate>
  Change Append(const format::OpRecord& r, MayAllocate&& may_allocate) {
    if (TryAppend(r)) return Change();
    if (tail_ == tail_end_) return AppendToNewChunk(r, may_allocate);
    Change change;  // the newest chunk has room, but a chunk falls out of the history
    StoreRecord(tail_++, r);
    ++total_;
    Trim(/*keep_spare=*/true, &change);
    return change;
  }

  // Append's fast path, inline for ingest (it runs once per op record): stores r when the newest
  // chunk has room and no chunk falls out of the history, so that nothing is allocated, freed or
  // accounted; else false, and the caller calls Append. True for all but one in kChunk records.
  bool TryAppend(const format::OpRecord& r) {
    if (tail_ == tail_end_) return false;
    const uint64_t total = total_ + 1;
    const uint64_t first = total - first_ > capacity_ ? total - capacity_ : first_;
    if (first >= (front_chunk_ + 2) * kChunk) return false;  // Trim would free the front chunk
    StoreRecord(tail_++, r);
    total_ = total;
    first_ = first;
    return true;
  }

  // Makes the records appended by this thread visible to others: Append writes around the cache
  // (see StoreRecord), so the thread that appends calls this before it releases the owner's lock.
  static void FinishStores() {
#if defined(__SSE2__)
    _mm_sfence();
#endif
  }

  // Gives up the older half of the chunks (one always stays), oldest records first.
  Change HalveForBudget();

  // The records kept, oldest first.
  template <typename Visit>
  void ForEach(Visit&& visit) const {
    for (uint64_t i = first_; i < total_; ++i) visit(chunks_[i / kChunk - front_chunk_][i % kChunk]);
  }

  size_t chunks() const { return chunks_.size(); }
  uint64_t size() const { return total_ - first_; }

 private:
  // Append when the newest chunk is full (or there is none): makes room, then stores r.
  template <typename MayAllocate>
  Change AppendToNewChunk(const format::OpRecord& r, MayAllocate&& may_allocate) {
    Change change;
    const uint64_t i = total_;
    if (chunks_.empty()) {
      front_chunk_ = i / kChunk;
      first_ = i;
    }
    const uint64_t chunk = i / kChunk;
    if (chunk >= front_chunk_ + chunks_.size() && !NewChunk(i, chunk, may_allocate, &change)) {
      return change;
    }
    format::OpRecord* records = chunks_[chunk - front_chunk_].get();
    StoreRecord(records + i % kChunk, r);
    tail_ = records + i % kChunk + 1;
    tail_end_ = records + kChunk;
    total_ = i + 1;
    Trim(/*keep_spare=*/true, &change);
    return change;
  }
  // Makes room for record i in chunk number `chunk`: rotates a spare front chunk (one wholly
  // before the oldest record kept once record i is in), else allocates one when `may_allocate()`,
  // else reuses the oldest. False when the record cannot be kept.
  template <typename MayAllocate>
  bool NewChunk(uint64_t i, uint64_t chunk, MayAllocate&& may_allocate, Change* change) {
    const uint64_t first_after = i + 1 - std::min<uint64_t>(i + 1, capacity_);
    if (!chunks_.empty() && (front_chunk_ + 1) * kChunk <= first_after) {
      Rotate(chunk);
    } else if (may_allocate()) {
      chunks_.emplace_back(new format::OpRecord[kChunk]);
      ++change->allocated;
    } else if (!chunks_.empty()) {
      Rotate(chunk);  // over the budget: the oldest records go first
      ++change->shrunk;
    } else {
      ++change->shrunk;  // no room even for one chunk: the record is not kept
      total_ = i + 1;
      first_ = i + 1;
      return false;
    }
    return true;
  }
  // Copies r to dst without first reading dst's cache lines or leaving them in the cache: history
  // is written once and read only by a rare dump, and at 100k records per process it would
  // otherwise push the ring and the series out of the cache (measured in docs/benchmarks.md).
  static void StoreRecord(format::OpRecord* dst, const format::OpRecord& r) {
#if defined(__SSE2__)
    static_assert(sizeof(format::OpRecord) % 16 == 0 && __STDCPP_DEFAULT_NEW_ALIGNMENT__ >= 16,
                  "every record of a chunk (new[]) is 16-byte aligned");
    auto* d = reinterpret_cast<__m128i*>(dst);
    const auto* s = reinterpret_cast<const __m128i*>(&r);
#pragma GCC unroll 8
    for (size_t i = 0; i < sizeof(format::OpRecord) / 16; ++i) {
      _mm_stream_si128(d + i, _mm_loadu_si128(s + i));
    }
#else
    *dst = r;
#endif
  }
  // Frees the chunks that lie wholly before the newest `capacity_` records, but with
  // `keep_spare` the newest of them, which the next chunk reuses.
  void Trim(bool keep_spare, Change* change);
  // Moves the oldest chunk to the end to hold chunk number `chunk` (its records are dropped).
  void Rotate(uint64_t chunk);

  const size_t capacity_;
  std::deque<std::unique_ptr<format::OpRecord[]>> chunks_;
  uint64_t front_chunk_ = 0;  // the chunk number of chunks_.front()
  uint64_t first_ = 0;        // the oldest record kept
  uint64_t total_ = 0;        // records ever appended
  // Where record total_ goes in the newest chunk, and that chunk's end; equal when it is full or
  // there is none. Trim and HalveForBudget never free the newest chunk, so these stay valid.
  format::OpRecord* tail_ = nullptr;
  format::OpRecord* tail_end_ = nullptr;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_OP_HISTORY_H_
