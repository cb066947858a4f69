// The daemon's exporters (metrics.cc, diagnosis_metrics.cc) each describe their metric families
// in one table of FamilyInfo, indexed by an enum, and fill them with a FamilyBuilder at scrape
// time: every family in the table is present in each exposition, even with no series.
#ifndef XTIMER_DAEMON_METRIC_FAMILIES_H_
#define XTIMER_DAEMON_METRIC_FAMILIES_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>
#include <prometheus/metric_type.h>

namespace xtimer {
namespace daemon {

struct FamilyInfo {
  const char* name;
  prometheus::MetricType type;
  const char* help;
};

class FamilyBuilder {
 public:
  // `table` (count entries) must outlive the builder.
  FamilyBuilder(const FamilyInfo* table, size_t count) : table_(table), families_(count) {
    for (size_t i = 0; i < count; ++i) {
      families_[i].name = table[i].name;
      families_[i].help = table[i].help;
      families_[i].type = table[i].type;
    }
  }

  // One series of family `family` (an index into the table).
  void Add(size_t family, const std::vector<prometheus::ClientMetric::Label>& labels,
           double value) {
    prometheus::ClientMetric m;
    m.label = labels;
    if (table_[family].type == prometheus::MetricType::Counter) {
      m.counter.value = value;
    } else {
      m.gauge.value = value;
    }
    families_[family].metric.push_back(std::move(m));
  }

  // One histogram series of family `family`: `bounds` the buckets' upper bounds (ascending; a
  // +Inf bucket follows), `counts` the observations per bucket (bounds.size() + 1 of them, not
  // cumulative), `sum` their sum.
  void AddHistogram(size_t family, const std::vector<prometheus::ClientMetric::Label>& labels,
                    const double* bounds, const uint64_t* counts, size_t n_bounds, double sum) {
    prometheus::ClientMetric m;
    m.label = labels;
    uint64_t cumulative = 0;
    for (size_t i = 0; i <= n_bounds; ++i) {
      cumulative += counts[i];
      prometheus::ClientMetric::Bucket b;
      b.cumulative_count = cumulative;
      b.upper_bound = i < n_bounds ? bounds[i] : std::numeric_limits<double>::infinity();
      m.histogram.bucket.push_back(b);
    }
    m.histogram.sample_count = cumulative;
    m.histogram.sample_sum = sum;
    families_[family].metric.push_back(std::move(m));
  }

  std::vector<prometheus::MetricFamily> Take() { return std::move(families_); }

 private:
  const FamilyInfo* table_;
  std::vector<prometheus::MetricFamily> families_;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_METRIC_FAMILIES_H_
