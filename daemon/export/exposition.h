// The Prometheus text format (0.0.4) of metric families, written straight into a caller's buffer.
//
// The output is byte for byte what prometheus::TextSerializer writes (exposition_test compares
// them), but without an ostringstream and its growing copies: a scrape renders into a buffer that
// the metrics server reuses from scrape to scrape (docs/daemon.md "Memory"). Counters and gauges,
// the daemon's own families, are rendered here; a summary, histogram or untyped family goes
// through prometheus::TextSerializer.
#ifndef XTIMER_DAEMON_EXPOSITION_H_
#define XTIMER_DAEMON_EXPOSITION_H_

#include <string>
#include <vector>

#include <prometheus/metric_family.h>

namespace xtimer {
namespace daemon {

void AppendExposition(const std::vector<prometheus::MetricFamily>& families, std::string* out);

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_EXPOSITION_H_
