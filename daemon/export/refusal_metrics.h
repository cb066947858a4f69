// Exports RefusalLog counts as one Prometheus counter family, a series per source and cause:
// e.g. xtimer_refused_connections_total{port="control",cause="idle_timeout"} (docs/metrics.md).
// The family is always present, with no series until something is refused.
#ifndef XTIMER_DAEMON_REFUSAL_METRICS_H_
#define XTIMER_DAEMON_REFUSAL_METRICS_H_

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "daemon/base/refusal_log.h"

namespace xtimer {
namespace daemon {

class RefusalCollector : public prometheus::Collectable {
 public:
  RefusalCollector(std::string name, std::string help);
  // `log` must outlive the collector's registration; `label` names the source, e.g.
  // {"port", "control"}. Thread-safe: a source may be added while scrapes run.
  void Add(std::pair<std::string, std::string> label, const RefusalLog* log);
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  std::string name_;
  std::string help_;
  mutable std::mutex mu_;
  std::vector<std::pair<std::pair<std::string, std::string>, const RefusalLog*>> sources_;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_REFUSAL_METRICS_H_
