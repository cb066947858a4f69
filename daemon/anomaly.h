// The anomaly log's judgment (docs/oplog.md "Anomaly log"): an operation is anomalous when it
// took more than `factor` times the median duration of its own signature (operation, shape or
// size, dtype, communicator size), the median taken over the signature's last `window`
// durations once it has `min_samples` of them. Bounded: at most `max_signatures` signatures are
// tracked (operations of further ones are counted, not judged) and each keeps `window` durations.
// Not thread-safe: one owner (the op log's writer thread).
#ifndef XTIMER_DAEMON_ANOMALY_H_
#define XTIMER_DAEMON_ANOMALY_H_

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "format/record.h"

namespace xtimer {
namespace daemon {

struct AnomalyOptions {
  double factor = 3;          // --op-log-anomaly-factor: k
  size_t window = 63;         // durations kept per signature (the median's sample)
  size_t min_samples = 16;    // no judgment before this many durations
  size_t max_signatures = 4096;
};

struct AnomalyVerdict {
  bool anomalous = false;
  int64_t median_ns = 0;  // 0 while the signature has fewer than min_samples durations
  uint64_t samples = 0;   // durations the median was taken over
};

class AnomalyDetector {
 public:
  explicit AnomalyDetector(const AnomalyOptions& options);
  // Judges `r` against its signature's median, then adds its duration to the signature.
  AnomalyVerdict Observe(const format::OpRecord& r);
  size_t signatures() const { return signatures_.size(); }
  uint64_t untracked() const { return untracked_; }  // ops of signatures beyond the bound

 private:
  struct Key {
    uint16_t op;
    uint8_t dtype;
    int32_t comm_size;
    int64_t m, n, k, batch;
    uint64_t bytes;
    bool operator==(const Key& o) const;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  struct Durations {
    std::vector<int64_t> ring;  // up to window, oldest overwritten
    size_t next = 0;
  };
  const AnomalyOptions options_;
  std::unordered_map<Key, Durations, KeyHash> signatures_;
  std::vector<int64_t> scratch_;
  uint64_t untracked_ = 0;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_ANOMALY_H_
