// A bounded lock-free multi-producer multi-consumer queue (Vyukov's sequence-number design).
//
// The hot path of a timed op pushes into it from any application thread; the poller pops. The
// event pools use it in both directions. Push and Pop never allocate, never lock and never make a
// system call; a full queue fails the Push (the caller drops and counts), an empty one the Pop.
#ifndef XTIMER_HOOK_BOUNDED_QUEUE_H_
#define XTIMER_HOOK_BOUNDED_QUEUE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace xtimer {
namespace hook {

template <typename T>
class BoundedQueue {
 public:
  // `capacity` is rounded up to a power of two (at least 2). Allocates once, here.
  explicit BoundedQueue(size_t capacity) {
    size_t c = 2;
    while (c < capacity) c <<= 1;
    mask_ = c - 1;
    cells_.reset(new Cell[c]);
    for (size_t i = 0; i < c; ++i) cells_[i].sequence.store(i, std::memory_order_relaxed);
  }
  BoundedQueue(const BoundedQueue&) = delete;
  BoundedQueue& operator=(const BoundedQueue&) = delete;

  size_t capacity() const { return mask_ + 1; }

  bool Push(const T& value) {
    return PushWith([&value](T* cell) { *cell = value; });
  }

  // Push's in-place form: fill(T*) writes the element straight into its cell (no copy through
  // a temporary) and is not called when the queue is full.
  template <typename Fill>
  bool PushWith(Fill&& fill) {
    size_t pos = enqueue_pos_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& cell = cells_[pos & mask_];
      size_t seq = cell.sequence.load(std::memory_order_acquire);
      intptr_t diff = static_cast<intptr_t>(seq) - static_cast<intptr_t>(pos);
      if (diff == 0) {
        if (enqueue_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          fill(&cell.value);
          cell.sequence.store(pos + 1, std::memory_order_release);
          return true;
        }
      } else if (diff < 0) {
        return false;  // full
      } else {
        pos = enqueue_pos_.load(std::memory_order_relaxed);
      }
    }
  }

  bool Pop(T* value) {
    size_t pos = dequeue_pos_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& cell = cells_[pos & mask_];
      size_t seq = cell.sequence.load(std::memory_order_acquire);
      intptr_t diff = static_cast<intptr_t>(seq) - static_cast<intptr_t>(pos + 1);
      if (diff == 0) {
        if (dequeue_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          *value = cell.value;
          cell.sequence.store(pos + mask_ + 1, std::memory_order_release);
          return true;
        }
      } else if (diff < 0) {
        return false;  // empty
      } else {
        pos = dequeue_pos_.load(std::memory_order_relaxed);
      }
    }
  }

  // Approximate number of queued elements (exact when no Push/Pop runs concurrently).
  size_t SizeApprox() const {
    size_t e = enqueue_pos_.load(std::memory_order_relaxed);
    size_t d = dequeue_pos_.load(std::memory_order_relaxed);
    return e >= d ? e - d : 0;
  }

 private:
  struct Cell {
    std::atomic<size_t> sequence;
    T value;
  };
  std::unique_ptr<Cell[]> cells_;
  size_t mask_ = 0;
  alignas(64) std::atomic<size_t> enqueue_pos_{0};
  alignas(64) std::atomic<size_t> dequeue_pos_{0};
};

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_BOUNDED_QUEUE_H_
