// Python metric families (python_metrics.h) from NVTX records of the Python domain ingested by a
// real Aggregator.
#include "daemon/export/python_metrics.h"

#include <prometheus/text_serializer.h>

#include <string>

#include "daemon/base/test_util.h"
#include "format/python_spans.h"
#include "format/record.h"
#include "gtest/gtest.h"

namespace xtimer {
namespace daemon {
namespace {

using format::PythonSpanKind;
using testing::Lines;
using testing::Sample;

constexpr int64_t kT0 = int64_t{1700000000} * 1000000000;

format::Identity Id(int rank) {
  format::Identity id;
  id.job = "job";
  id.host = "host";
  id.rank = rank;
  id.local_rank = rank;
  id.world_size = 2;
  return id;
}

format::RecordSlot String(uint32_t id, const std::string& text) {
  return format::NamePart(id, text, 0, format::RecordType::kNvtxString);
}

format::RecordSlot Span(uint32_t name, PythonSpanKind kind, int64_t ns, uint64_t payload = 0) {
  format::RecordSlot s{};
  format::NvtxRecord& r = s.nvtx;
  r.version = format::kRecordVersion;
  r.type = static_cast<uint8_t>(format::RecordType::kNvtx);
  r.event = static_cast<uint8_t>(format::NvtxEvent::kRange);
  r.domain_id = 1;
  r.name_id = name;
  r.category = static_cast<uint32_t>(kind);
  r.start_ns = kT0;
  r.end_ns = kT0 + ns;
  if (kind == PythonSpanKind::kGc) {
    r.flags = format::kNvtxHasPayload;
    r.payload = payload;
  }
  return s;
}

TEST(PythonMetricsTest, GcDataWaitAndFunctionsPerRank) {
  AggregatorOptions o;
  Aggregator agg(o);
  PythonMetrics metrics(&agg, [] { return kT0; });
  const auto python = agg.AddProcess(100, Id(0));
  agg.AddProcess(101, Id(1));  // no Python span: no series
  format::RecordSlot recs[] = {String(1, format::kPythonSpanDomain),
                               String(2, "gc gen2"),
                               String(3, "torch.utils.data.dataloader:_BaseDataLoaderIter.__next__"),
                               String(4, "m:\"q\".f"),
                               Span(2, PythonSpanKind::kGc, 4000000, 2),
                               Span(3, PythonSpanKind::kData, 30000000),
                               Span(3, PythonSpanKind::kData, 10000000),
                               Span(4, PythonSpanKind::kCall, 2000)};
  agg.Ingest(python, recs, sizeof(recs) / sizeof(recs[0]), kT0);
  const std::string text = prometheus::TextSerializer().Serialize(metrics.Collect());
  const std::string rank = "job=\"job\",host=\"host\",pod=\"\",rank=\"0\",local_rank=\"0\",";
  EXPECT_DOUBLE_EQ(
      Sample(text, "xtimer_python_gc_pause_seconds_total{" + rank + "generation=\"2\"}"), 0.004)
      << text;
  EXPECT_DOUBLE_EQ(Sample(text, "xtimer_python_gc_pauses_total{" + rank + "generation=\"2\"}"),
                   1);
  EXPECT_DOUBLE_EQ(Sample(text, "xtimer_python_gc_pauses_total{" + rank + "generation=\"0\"}"),
                   0);
  EXPECT_DOUBLE_EQ(Sample(text, "xtimer_python_data_wait_seconds_total{" +
                                    rank.substr(0, rank.size() - 1) + "}"),
                   0.04);
  const std::string loader =
      rank + "function=\"torch.utils.data.dataloader:_BaseDataLoaderIter.__next__\",kind=\"data\"";
  EXPECT_DOUBLE_EQ(Sample(text, "xtimer_python_function_calls_total{" + loader + "}"), 2);
  EXPECT_DOUBLE_EQ(
      Sample(text, "xtimer_python_function_duration_seconds_bucket{" + loader + ",le=\"0.01\"}"),
      1);
  EXPECT_DOUBLE_EQ(
      Sample(text, "xtimer_python_function_duration_seconds_bucket{" + loader + ",le=\"+Inf\"}"),
      2);
  EXPECT_DOUBLE_EQ(Sample(text, "xtimer_python_function_duration_seconds_sum{" + loader + "}"),
                   0.04);
  EXPECT_NE(text.find("function=\"m:\\\"q\\\".f\",kind=\"call\""), std::string::npos) << text;
  EXPECT_TRUE(Lines(text, "xtimer_python_gc_pauses_total{job=\"job\",host=\"host\",pod=\"\","
                          "rank=\"1\"")
                  .empty());
  agg.RemoveProcess(python);
  EXPECT_TRUE(Lines(prometheus::TextSerializer().Serialize(metrics.Collect()),
                    "xtimer_python_gc_pauses_total{")
                  .empty());
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
