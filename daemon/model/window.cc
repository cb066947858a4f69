#include "daemon/model/window.h"

#include <algorithm>

namespace xtimer {
namespace daemon {

LatencyWindow::LatencyWindow(int64_t window_ns, int buckets, size_t max_samples)
    : width_ns_(std::max<int64_t>(1, window_ns / std::max(1, buckets))),
      buckets_(static_cast<size_t>(std::max(1, buckets))),
      max_samples_(std::max<size_t>(1, max_samples)) {}

size_t LatencyWindow::MaxBytes(int buckets, size_t max_samples) {
  size_t capacity = 1;  // push_back doubles the sample vector's capacity
  while (capacity < max_samples) capacity *= 2;
  return static_cast<size_t>(std::max(1, buckets)) * sizeof(Bucket) + capacity * sizeof(Sample);
}

void LatencyWindow::StartBucket(int64_t epoch, int64_t duration_ns) {
  add_epoch_ = epoch;
  add_index_ = static_cast<size_t>(epoch % static_cast<int64_t>(buckets_.size()));
  Bucket& b = buckets_[add_index_];
  if (b.epoch != epoch) {
    b = Bucket();
    b.epoch = epoch;
    b.min_ns = duration_ns;
    b.max_ns = duration_ns;
  }
}

WindowStats LatencyWindow::Compute(int64_t now_ns, std::vector<int64_t>* scratch) const {
  WindowStats s;
  const int64_t now_epoch = EpochOf(now_ns);
  uint64_t sum_ns = 0;
  for (const Bucket& b : buckets_) {
    if (b.epoch < 0 || !InWindow(b.epoch, now_epoch) || b.count == 0) continue;
    if (s.count == 0) {
      s.min_ns = b.min_ns;
      s.max_ns = b.max_ns;
    } else {
      s.min_ns = std::min(s.min_ns, b.min_ns);
      s.max_ns = std::max(s.max_ns, b.max_ns);
    }
    s.count += b.count;
    sum_ns += b.sum_ns;
    s.flop += b.flop;
    s.bus_bytes += b.bus_bytes;
    s.algo_bytes += b.algo_bytes;
  }
  s.seconds = static_cast<double>(sum_ns) * 1e-9;
  if (s.count == 0) return s;

  scratch->clear();
  for (const Sample& x : samples_) {
    if (InWindow(x.epoch, now_epoch)) scratch->push_back(x.duration_ns);
  }
  s.samples = scratch->size();
  if (!scratch->empty()) {
    // Nearest rank: the smallest value with at least 99% of the samples at or below it.
    const size_t n = scratch->size();
    const size_t rank = (n * 99 + 99) / 100;  // ceil(0.99 n), >= 1
    auto nth = scratch->begin() + static_cast<std::ptrdiff_t>(rank - 1);
    std::nth_element(scratch->begin(), nth, scratch->end());
    s.p99_ns = *nth;
  }
  return s;
}

}  // namespace daemon
}  // namespace xtimer
