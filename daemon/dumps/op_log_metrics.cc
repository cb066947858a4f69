#include "daemon/dumps/op_log_metrics.h"

#include "daemon/export/metric_families.h"

namespace xtimer {
namespace daemon {

std::vector<prometheus::MetricFamily> OpLogCollector::Collect() const {
  static const FamilyInfo kFamilies[] = {
      {"xtimer_op_log_lines_total", prometheus::MetricType::Counter,
       "Op log lines handed to the files (docs/oplog.md)."},
      {"xtimer_op_log_dropped_total", prometheus::MetricType::Counter,
       "Op log lines dropped, by reason: queue_full (the writer fell behind), file (the disk "
       "cap, a full disk or a folder or file that could not be written) (docs/oplog.md)."},
  };
  const OpLogCounters c = writer_->counters();
  FamilyBuilder b(kFamilies, 2);
  b.Add(0, {}, static_cast<double>(c.written));
  b.Add(1, {{"reason", "queue_full"}}, static_cast<double>(c.queue_dropped));
  b.Add(1, {{"reason", "file"}}, static_cast<double>(c.file_dropped));
  return b.Take();
}

}  // namespace daemon
}  // namespace xtimer
