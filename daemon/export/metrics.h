// Prometheus exposition of the Aggregator's state: a prometheus::Collectable that builds every
// `xtimer_` metric family from one Snapshot at scrape time. Every family is always present (a
// stable set of names, types and label names); series of processes that exited are gone because
// the Aggregator no longer has them. docs/metrics.md documents each family.
#ifndef XTIMER_DAEMON_METRICS_H_
#define XTIMER_DAEMON_METRICS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <prometheus/client_metric.h>
#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "daemon/model/aggregator.h"
#include "util/clock.h"

namespace xtimer {
namespace daemon {

using Labels = std::vector<prometheus::ClientMetric::Label>;

// The labels every per-rank series carries: job, host, pod, rank, local_rank.
Labels RankLabels(const ProcessSnapshot& p);
// A communicator's label value: "0x%016x", "none" for 0.
std::string CommLabel(uint64_t id);

// All families for one snapshot.
std::vector<prometheus::MetricFamily> BuildFamilies(const Snapshot& snapshot);

class MetricsCollector : public prometheus::Collectable {
 public:
  // `clock` returns CLOCK_REALTIME nanoseconds (replaceable in tests).
  MetricsCollector(const Aggregator* aggregator, std::function<int64_t()> clock);
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const Aggregator* aggregator_;
  std::function<int64_t()> clock_;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_METRICS_H_
