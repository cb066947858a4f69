#include "daemon/export/exposition.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <prometheus/text_serializer.h>

#include "daemon/base/test_util.h"
#include "daemon/export/metrics.h"
#include "daemon/model/aggregator.h"
#include "gtest/gtest.h"

namespace xtimer {
namespace daemon {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

std::string Ours(const std::vector<MetricFamily>& families) {
  std::string out = "kept ";  // appended to, never replaced
  AppendExposition(families, &out);
  return out;
}

std::string Theirs(const std::vector<MetricFamily>& families) {
  return "kept " + prometheus::TextSerializer().Serialize(families);
}

MetricFamily Family(const char* name, MetricType type, const std::vector<double>& values) {
  MetricFamily f;
  f.name = name;
  f.help = "Help of " + std::string(name) + ".";
  f.type = type;
  for (size_t i = 0; i < values.size(); ++i) {
    ClientMetric m;
    m.label = {{"job", "j" + std::to_string(i)}, {"rank", std::to_string(i)}};
    m.counter.value = values[i];
    m.gauge.value = values[i];
    f.metric.push_back(m);
  }
  return f;
}

TEST(ExpositionTest, ValuesAreWrittenAsPrometheusCppWritesThem) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> values = {
      0, -0.0, 1, -1, 7, 42, 1e6, 123456789, 999999999999999, 1e15, 1e16, 1234567890123456789.0,
      0.1, 0.5, 1.5, -2.25, 1e-9, 3.3e-7, 2.5e-300, 1e300, 1.0 / 3, 6.02214076e23,
      std::numeric_limits<double>::quiet_NaN(), inf, -inf, 4503599627370496.5, 0.30000000000000004};
  const std::vector<MetricFamily> f = {Family("c_total", MetricType::Counter, values),
                                       Family("g", MetricType::Gauge, values)};
  EXPECT_EQ(Ours(f), Theirs(f));
}

TEST(ExpositionTest, LabelsHelpAndEmptyFamilies) {
  MetricFamily f = Family("g", MetricType::Gauge, {1, 2});
  f.metric[0].label.push_back({"odd", "a\"b\\c\nd"});
  f.metric[1].label.clear();  // no braces
  f.metric[1].timestamp_ms = 1700000000123;
  MetricFamily empty = Family("nothing_total", MetricType::Counter, {});
  MetricFamily no_help = Family("bare", MetricType::Gauge, {3});
  no_help.help.clear();
  const std::vector<MetricFamily> all = {f, empty, no_help};
  EXPECT_EQ(Ours(all), Theirs(all));
}

TEST(ExpositionTest, OtherTypesGoThroughPrometheusCpp) {
  MetricFamily s;
  s.name = "latency";
  s.help = "A summary.";
  s.type = MetricType::Summary;
  ClientMetric m;
  m.summary.sample_count = 3;
  m.summary.sample_sum = 1.5;
  m.summary.quantile = {{0.5, 0.25}, {0.99, 1.0}};
  s.metric.push_back(m);
  const std::vector<MetricFamily> all = {Family("a", MetricType::Gauge, {1}), s,
                                         Family("b_total", MetricType::Counter, {2})};
  EXPECT_EQ(Ours(all), Theirs(all));
}

TEST(ExpositionTest, TheDaemonsFamiliesAreWrittenAsBefore) {
  Aggregator agg(AggregatorOptions{}, 1700000000000000000);
  format::Identity id;
  id.job = "job \"quoted\"";
  id.host = "host";
  id.rank = 3;
  id.local_rank = 3;
  id.world_size = 8;
  const auto p = agg.AddProcess(1, id);
  std::vector<format::RecordSlot> ops;
  for (int i = 0; i < 50; ++i) {
    ops.push_back(testing::MakeOp(format::Operation::kAllReduce, format::DType::kBF16, 1000 + 37 * i));
    ops.push_back(testing::MakeOp(format::Operation::kGemmEx, format::DType::kF16, 2000 + 11 * i));
  }
  agg.Ingest(p, ops.data(), ops.size(), 1700000000500000000);
  const std::vector<MetricFamily> f = BuildFamilies(agg.TakeSnapshot(1700000001000000000));
  EXPECT_EQ(Ours(f), Theirs(f));
  EXPECT_NE(Ours(f).find("xtimer_ops_total{"), std::string::npos);
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
