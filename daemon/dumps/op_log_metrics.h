// The op log's own metrics (docs/metrics.md, docs/oplog.md): lines written and lines dropped by
// cause, so that a full disk, the disk cap or a full queue is visible where operators look.
#ifndef XTIMER_DAEMON_DUMPS_OP_LOG_METRICS_H_
#define XTIMER_DAEMON_DUMPS_OP_LOG_METRICS_H_

#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "daemon/dumps/op_log_writer.h"

namespace xtimer {
namespace daemon {

// xtimer_op_log_lines_total and xtimer_op_log_dropped_total{reason}.
class OpLogCollector : public prometheus::Collectable {
 public:
  explicit OpLogCollector(const OpLogWriter* writer) : writer_(writer) {}
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const OpLogWriter* writer_;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_DUMPS_OP_LOG_METRICS_H_
