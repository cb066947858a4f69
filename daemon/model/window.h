// Sliding-window statistics of one metric series: latency avg/min/max exactly over the window,
// p99 exactly over the window's raw samples (the most recent `max_samples` of them when more
// arrived), and the sums that give FLOP/s and bandwidth (sum of work / sum of seconds).
//
// The window is `window_ns` long and moves in steps of window_ns / buckets: a bucket holds the
// counts, sums, min and max of the ops ingested during its step, and a sample is in the window
// when its bucket is. Times are the daemon's ingest clock, not the record's own (untrusted) times.
// Not thread-safe; the Aggregator serialises access.
#ifndef XTIMER_DAEMON_WINDOW_H_
#define XTIMER_DAEMON_WINDOW_H_

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <vector>

namespace xtimer {
namespace daemon {

struct WindowStats {
  uint64_t count = 0;          // ops in the window
  double seconds = 0;          // their summed duration
  int64_t min_ns = 0;          // valid when count > 0
  int64_t max_ns = 0;
  int64_t p99_ns = 0;          // nearest-rank 99th percentile of the retained samples
  uint64_t samples = 0;        // how many raw samples the p99 was computed from
  double flop = 0;             // summed FLOP (matmul)
  double bus_bytes = 0;        // summed nccl-tests bus bytes (collectives, p2p)
  double algo_bytes = 0;       // summed algorithm bytes
};

class LatencyWindow {
 public:
  // window_ns > 0, buckets >= 1, max_samples >= 1.
  LatencyWindow(int64_t window_ns, int buckets, size_t max_samples);

  // The most heap memory one window of this geometry holds (its samples grow up to max_samples).
  static size_t MaxBytes(int buckets, size_t max_samples);

  // The step `now_ns` falls in; callers adding a batch at one time compute it once.
  int64_t EpochOf(int64_t now_ns) const { return now_ns >= 0 ? now_ns / width_ns_ : 0; }
  // Inline: ingest calls it for every op record.
  void Add(int64_t epoch, int64_t duration_ns, double flop, double bus_bytes, double algo_bytes) {
    if (epoch != add_epoch_) StartBucket(epoch, duration_ns);
    Bucket& b = buckets_[add_index_];
    ++b.count;
    b.sum_ns += static_cast<uint64_t>(duration_ns);
    b.min_ns = std::min(b.min_ns, duration_ns);
    b.max_ns = std::max(b.max_ns, duration_ns);
    b.flop += flop;
    b.bus_bytes += bus_bytes;
    b.algo_bytes += algo_bytes;
    if (samples_.size() < max_samples_) {
      samples_.push_back({epoch, duration_ns});
    } else {
      samples_[next_] = {epoch, duration_ns};
      next_ = next_ + 1 == max_samples_ ? 0 : next_ + 1;
      // A series' samples are written a line at a time between other series' ops: ask for the
      // line after next early.
      if (next_ + 8 < max_samples_) __builtin_prefetch(&samples_[next_ + 8], 1);
    }
  }
  // `scratch` is reused between calls to avoid allocating per scrape.
  WindowStats Compute(int64_t now_ns, std::vector<int64_t>* scratch) const;

 private:
  struct Bucket {
    int64_t epoch = -1;  // now_ns / width_ns_ of the step it holds; -1: empty
    uint64_t count = 0;
    uint64_t sum_ns = 0;
    int64_t min_ns = 0;
    int64_t max_ns = 0;
    double flop = 0;
    double bus_bytes = 0;
    double algo_bytes = 0;
  };
  struct Sample {
    int64_t epoch;
    int64_t duration_ns;
  };

  // Points add_index_ at epoch's bucket, emptied first when it held an older step.
  void StartBucket(int64_t epoch, int64_t duration_ns);

  bool InWindow(int64_t epoch, int64_t now_epoch) const {
    return epoch > now_epoch - static_cast<int64_t>(buckets_.size()) && epoch <= now_epoch;
  }

  int64_t width_ns_;
  std::vector<Bucket> buckets_;
  size_t max_samples_;
  std::vector<Sample> samples_;  // ring, grows up to max_samples_
  size_t next_ = 0;              // where the next sample goes once the ring is full
  int64_t add_epoch_ = -1;       // the step of the last Add and its bucket's index: a step holds
  size_t add_index_ = 0;         // many ops, and the index costs a division
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_WINDOW_H_
