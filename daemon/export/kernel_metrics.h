// Per-kernel metric families (docs/metrics.md "Kernels"), on with --kernel-metrics-top N: for
// each rank, its N kernels of most total GPU time, one series per kernel labelled by its
// demangled name. An op tap on the Aggregator keeps every rank's totals per kernel name id
// (bounded: kMaxKernelsPerRank); a scrape picks the top N and asks the Aggregator for the names.
#ifndef XTIMER_DAEMON_KERNEL_METRICS_H_
#define XTIMER_DAEMON_KERNEL_METRICS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "daemon/model/aggregator.h"

namespace xtimer {
namespace daemon {

// A kernel name as a label value: printable ASCII kept (the serializer escapes \ " and newline),
// other bytes shown as '?', at most kMaxKernelLabel bytes (longer names end in "...").
constexpr size_t kMaxKernelLabel = 160;
std::string KernelLabel(const std::string& name);

class KernelMetrics : public prometheus::Collectable {
 public:
  // Kernels (name ids) whose totals a rank keeps; later ones are not counted (the hook names at
  // most 2048 per process, hook/kernel_table.h).
  static constexpr size_t kMaxKernelsPerRank = 4096;

  // Adds its op tap to `aggregator` (which must outlive this); `top` >= 1; `clock` gives
  // CLOCK_REALTIME nanoseconds for the snapshot that lists the live ranks.
  KernelMetrics(Aggregator* aggregator, size_t top, std::function<int64_t()> clock);
  ~KernelMetrics() override;
  KernelMetrics(const KernelMetrics&) = delete;
  KernelMetrics& operator=(const KernelMetrics&) = delete;

  // Totals of ranks that are gone (no longer in the Aggregator's snapshot) are dropped here.
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  struct Totals {
    uint64_t launches = 0;
    uint64_t ns = 0;
  };
  // One op of the tap's batch; needs mu_.
  void AddLocked(ProcessId id, int rank_device, const format::OpRecord& r);
  // The rank's top kernels by total time (name id, totals), most first.
  std::vector<std::pair<uint32_t, Totals>> Top(const RankKey& rank) const;

  Aggregator* aggregator_;
  size_t top_;
  std::function<int64_t()> clock_;
  int tap_ = 0;
  mutable std::mutex mu_;  // taken inside the Aggregator's lock (by the tap), never around it
  mutable std::map<RankKey, std::unordered_map<uint32_t, Totals>> ranks_;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_KERNEL_METRICS_H_
