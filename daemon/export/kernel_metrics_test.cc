#include "daemon/export/kernel_metrics.h"

#include <prometheus/text_serializer.h>

#include <cstring>
#include <string>

#include "daemon/base/test_util.h"
#include "gtest/gtest.h"

namespace xtimer {
namespace daemon {
namespace {

using format::DType;
using format::Operation;
using testing::Lines;
using testing::MakeOp;
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

format::RecordSlot Name(uint32_t id, const std::string& text) {
  return format::NamePart(id, text, 0);  // names of one part
}

format::RecordSlot Kernel(uint32_t name_id, int64_t ns) {
  format::RecordSlot s = MakeOp(Operation::kKernelLaunch, DType::kUnknown, ns);
  s.op.name_id = name_id;
  return s;
}

std::string Scrape(const KernelMetrics& m) {
  return prometheus::TextSerializer().Serialize(m.Collect());
}

TEST(KernelMetricsTest, TopKernelsByTotalTimeWithEscapedNames) {
  AggregatorOptions o;
  Aggregator agg(o);
  KernelMetrics metrics(&agg, 2, [] { return kT0; });
  auto id = agg.AddProcess(100, Id(0));
  const std::string quoted = "void k<\"a\\b\">(float*)";
  format::RecordSlot recs[] = {Name(1, "small(float*)"), Name(2, "big(float*)"),
                               Name(3, quoted),          Kernel(1, 1000),
                               Kernel(2, 5000),          Kernel(2, 5000),
                               Kernel(3, 3000),          Kernel(0, 99999),  // unnamed: not listed
                               MakeOp(Operation::kGemmEx, DType::kBF16, 99999)};
  agg.Ingest(id, recs, sizeof(recs) / sizeof(recs[0]), kT0);
  const std::string text = Scrape(metrics);
  const std::string rank = "job=\"job\",host=\"host\",pod=\"\",rank=\"0\",local_rank=\"0\",";
  ASSERT_EQ(Lines(text, "xtimer_kernel_seconds_total{").size(), 2u) << text;  // top 2 of 3
  EXPECT_DOUBLE_EQ(Sample(text, "xtimer_kernel_seconds_total{" + rank +
                                    "kernel=\"big\",signature=\"big(float*)\"}"),
                   1e-5);
  EXPECT_DOUBLE_EQ(Sample(text, "xtimer_kernel_launches_total{" + rank +
                                    "kernel=\"big\",signature=\"big(float*)\"}"),
                   2);
  // The serializer escapes the quote and the backslash.
  EXPECT_NE(text.find("kernel=\"k<\\\"a\\\\b\\\">\",signature=\"void k<\\\"a\\\\b\\\">(float*)\""),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("small(float*)"), std::string::npos) << text;

  agg.RemoveProcess(id);
  EXPECT_TRUE(Lines(Scrape(metrics), "xtimer_kernel_seconds_total{").empty());
}

// Kernels that differ only past their template's head share `kernel` (sum by (kernel) adds them)
// and keep one series each by `signature`.
TEST(KernelMetricsTest, ShortNameAndFullSignature) {
  AggregatorOptions o;
  Aggregator agg(o);
  KernelMetrics metrics(&agg, 5, [] { return kT0; });
  auto id = agg.AddProcess(100, Id(0));
  const std::string fill = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >(int)";
  const std::string mul = "void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<float> >(int)";
  format::RecordSlot recs[] = {Name(1, fill), Name(2, mul), Kernel(1, 1000), Kernel(2, 3000)};
  agg.Ingest(id, recs, sizeof(recs) / sizeof(recs[0]), kT0);
  const std::string text = Scrape(metrics);
  const std::string series = "xtimer_kernel_seconds_total{job=\"job\",host=\"host\",pod=\"\",rank=\"0\","
                             "local_rank=\"0\",kernel=\"vectorized_elementwise_kernel<4, ...>\",signature=\"";
  EXPECT_DOUBLE_EQ(Sample(text, series + fill + "\"}"), 1e-6) << text;
  EXPECT_DOUBLE_EQ(Sample(text, series + mul + "\"}"), 3e-6) << text;
}

TEST(KernelMetricsTest, LabelIsPrintableAndCapped) {
  EXPECT_EQ(KernelLabel("a\nb\x80"), "a_b_");  // the free-text rule, util/label.h
  const std::string label = KernelLabel(std::string(1000, 'x'));
  EXPECT_EQ(label.size(), kMaxKernelLabel);
  EXPECT_EQ(label.substr(label.size() - 3), "...");
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
