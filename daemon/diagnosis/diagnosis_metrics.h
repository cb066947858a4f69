// Prometheus exposition of the live diagnosis (docs/metrics.md "Live diagnosis"): hang verdicts
// and culprits, the adaptive hang thresholds, per rank and communicator collective counters, and
// observed vs true bus bandwidth. Every family is always present; series come from the newest
// LiveState (one pass a second), so a scrape never runs the analysis.
#ifndef XTIMER_DAEMON_DIAGNOSIS_METRICS_H_
#define XTIMER_DAEMON_DIAGNOSIS_METRICS_H_

#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "daemon/diagnosis/diagnosis.h"

namespace xtimer {
namespace daemon {

std::vector<prometheus::MetricFamily> BuildDiagnosisFamilies(const LiveState& state);

class DiagnosisCollector : public prometheus::Collectable {
 public:
  explicit DiagnosisCollector(const LiveDiagnosis* diagnosis) : diagnosis_(diagnosis) {}
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const LiveDiagnosis* diagnosis_;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_DIAGNOSIS_METRICS_H_
