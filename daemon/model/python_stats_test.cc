// A process's Python totals (python_stats.h) from NVTX records of the Python domain.
#include "daemon/model/python_stats.h"

#include <gtest/gtest.h>

#include <string>

#include "daemon/model/nvtx_history.h"
#include "format/python_spans.h"
#include "format/record.h"

namespace xtimer {
namespace daemon {
namespace {

using format::PythonSpanKind;

constexpr int64_t kT0 = int64_t{1700000000} * 1000000000;
constexpr uint32_t kDomain = 1, kOtherDomain = 2, kLoader = 3, kStep = 4;

format::NvtxRecord Span(uint32_t domain, uint32_t name, PythonSpanKind kind, int64_t ns,
                        uint64_t payload = 0) {
  format::NvtxRecord r{};
  r.version = format::kRecordVersion;
  r.type = static_cast<uint8_t>(format::RecordType::kNvtx);
  r.event = static_cast<uint8_t>(format::NvtxEvent::kRange);
  r.domain_id = domain;
  r.name_id = name;
  r.category = static_cast<uint32_t>(kind);
  r.start_ns = kT0;
  r.end_ns = kT0 + ns;
  r.payload = payload;
  return r;
}

NvtxHistory Strings() {
  NvtxHistory h(16);
  const auto yes = [](size_t) { return true; };
  const char* texts[] = {"", format::kPythonSpanDomain, "app", "m:Loader.__next__", "m:step"};
  for (uint32_t id = 1; id <= 4; ++id) {
    h.AddString(format::NamePart(id, texts[id], 0, format::RecordType::kNvtxString).name, 100,
                yes);
  }
  return h;
}

TEST(PythonStatsTest, GcPausesByGenerationDataWaitsAndFunctions) {
  const NvtxHistory strings = Strings();
  PythonStats s;
  EXPECT_TRUE(s.empty());
  s.Add(Span(kDomain, 0, PythonSpanKind::kGc, 2000000, 2), strings);
  s.Add(Span(kDomain, 0, PythonSpanKind::kGc, 1000000, 0), strings);
  s.Add(Span(kDomain, 0, PythonSpanKind::kGc, 3000000, 0), strings);
  s.Add(Span(kDomain, kLoader, PythonSpanKind::kData, 20000000), strings);
  s.Add(Span(kDomain, kStep, PythonSpanKind::kStep, 300000000), strings);
  s.Add(Span(kDomain, kStep, PythonSpanKind::kStep, 500000), strings);
  s.Add(Span(kOtherDomain, kStep, PythonSpanKind::kStep, 500000), strings);  // an app's range
  format::NvtxRecord mark = Span(kDomain, kStep, PythonSpanKind::kStep, 0);
  mark.event = static_cast<uint8_t>(format::NvtxEvent::kMark);
  s.Add(mark, strings);
  EXPECT_FALSE(s.empty());
  EXPECT_EQ(s.gc_pauses(0), 2u);
  EXPECT_DOUBLE_EQ(s.gc_seconds(0), 0.004);
  EXPECT_EQ(s.gc_pauses(1), 0u);
  EXPECT_EQ(s.gc_pauses(2), 1u);
  EXPECT_DOUBLE_EQ(s.gc_seconds(2), 0.002);
  EXPECT_EQ(s.data_waits(), 1u);
  EXPECT_DOUBLE_EQ(s.data_wait_seconds(), 0.02);
  ASSERT_EQ(s.functions().size(), 2u);
  const PythonStats::Function& loader = s.functions()[0];
  EXPECT_EQ(loader.name, "m:Loader.__next__");
  EXPECT_EQ(loader.kind, PythonSpanKind::kData);
  EXPECT_EQ(loader.calls, 1u);
  EXPECT_EQ(loader.buckets[3], 0u);  // 20 ms: above 10 ms, within 50 ms
  EXPECT_EQ(loader.buckets[4], 1u);
  const PythonStats::Function& step = s.functions()[1];
  EXPECT_EQ(step.name, "m:step");
  EXPECT_EQ(step.calls, 2u);
  EXPECT_DOUBLE_EQ(step.seconds, 0.3005);
  EXPECT_EQ(step.buckets[1], 1u);  // 0.5 ms
  EXPECT_EQ(step.buckets[6], 1u);  // 300 ms
  s.Add(Span(kDomain, kStep, PythonSpanKind::kStep, int64_t{11} * 1000000000), strings);
  EXPECT_EQ(s.functions()[1].buckets[PythonStats::kBuckets.size()], 1u);  // beyond 10 s
}

TEST(PythonStatsTest, FunctionNamesAreBounded) {
  const NvtxHistory strings = Strings();
  PythonStats s;
  for (uint32_t id = 100; id < 100 + PythonStats::kMaxFunctions + 5; ++id) {
    s.Add(Span(kDomain, id, PythonSpanKind::kCall, 1000), strings);
  }
  EXPECT_EQ(s.functions().size(), PythonStats::kMaxFunctions);
  EXPECT_EQ(s.functions()[0].name, "#100");  // its string unknown
  EXPECT_EQ(s.functions_dropped(), 5u);
}

TEST(PythonStatsTest, WithoutThePythonDomainNothingCounts) {
  NvtxHistory none(16);
  PythonStats s;
  s.Add(Span(kDomain, kStep, PythonSpanKind::kStep, 1000), none);  // the domain is unknown
  s.Add(Span(0, kStep, PythonSpanKind::kStep, 1000), none);
  EXPECT_TRUE(s.empty());
  EXPECT_TRUE(s.functions().empty());
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
