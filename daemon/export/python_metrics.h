// Python metric families (docs/metrics.md "Python"): per rank, garbage-collection pauses by
// generation, data-loader waits, and the calls and time of each traced Python function (a
// counter pair and a histogram), from the Aggregator's per-process PythonStats
// (daemon/model/python_stats.h). A process with no Python span has no series; a process that
// drives several devices reports under its first rank only (its Python time is the process's).
#ifndef XTIMER_DAEMON_EXPORT_PYTHON_METRICS_H_
#define XTIMER_DAEMON_EXPORT_PYTHON_METRICS_H_

#include <cstdint>
#include <functional>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "daemon/model/aggregator.h"

namespace xtimer {
namespace daemon {

class PythonMetrics : public prometheus::Collectable {
 public:
  // `aggregator` must outlive this; `clock` gives CLOCK_REALTIME nanoseconds (the snapshot).
  PythonMetrics(const Aggregator* aggregator, std::function<int64_t()> clock)
      : aggregator_(aggregator), clock_(std::move(clock)) {}

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const Aggregator* aggregator_;
  std::function<int64_t()> clock_;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_EXPORT_PYTHON_METRICS_H_
