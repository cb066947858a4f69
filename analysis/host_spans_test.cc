// What the host was doing: each kind of span classified, idle time credited to the innermost
// span and never beyond the idle time, and a straggler of cause host naming what covered its
// late arrivals' idle time (whole and streamed), nothing when the rank has no spans.
#include "analysis/host_spans.h"

#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/report_json.h"
#include "analysis/report_text.h"
#include "analysis/stream.h"
#include "analysis/synthetic.h"
#include "format/python_spans.h"
#include "gtest/gtest.h"

namespace xtimer {
namespace analysis {
namespace {

// The Python spans' categories (format/python_spans.h).
constexpr uint32_t kCall = static_cast<uint32_t>(format::PythonSpanKind::kCall);
constexpr uint32_t kGcSpan = static_cast<uint32_t>(format::PythonSpanKind::kGc);
constexpr uint32_t kData = static_cast<uint32_t>(format::PythonSpanKind::kData);
constexpr uint32_t kStep = static_cast<uint32_t>(format::PythonSpanKind::kStep);

HostSpan Span(const std::string& name, const std::string& domain, uint32_t category,
              int64_t start, int64_t end) {
  HostSpan s;
  s.name = name;
  s.domain = domain;
  s.category = category;
  s.tid = 7;
  s.start_ns = start;
  s.end_ns = end;
  return s;
}

TEST(ClassifyHostSpan, EachKind) {
  const HostSpanClass data = ClassifyHostSpan(
      Span("torch.utils.data.dataloader:_BaseDataLoaderIter.__next__", format::kPythonSpanDomain,
           kData, 0, 1));
  EXPECT_EQ(data.kind, HostKind::kDataLoading);
  EXPECT_EQ(data.text, "the data loader (torch.utils.data.dataloader:_BaseDataLoaderIter.__next__)");
  const HostSpanClass gc = ClassifyHostSpan(Span("gc gen2", format::kPythonSpanDomain, kGcSpan, 0, 1));
  EXPECT_EQ(gc.kind, HostKind::kGc);
  EXPECT_EQ(gc.text, "GC generation 2");
  const HostSpanClass call =
      ClassifyHostSpan(Span("torch.cuda:synchronize", format::kPythonSpanDomain, kCall, 0, 1));
  EXPECT_EQ(call.kind, HostKind::kTracedFunction);
  EXPECT_EQ(call.text, "the traced function torch.cuda:synchronize");
  EXPECT_EQ(ClassifyHostSpan(Span("m:train_step", format::kPythonSpanDomain, kStep, 0, 1)).kind,
            HostKind::kTracedFunction);
  const HostSpanClass nvtx = ClassifyHostSpan(Span("load_batch", "", 3, 0, 1));
  EXPECT_EQ(nvtx.kind, HostKind::kNvtxRange);
  EXPECT_EQ(nvtx.text, "NVTX range 'load_batch'");
  EXPECT_EQ(ClassifyHostSpan(Span("fwd", "megatron", 0, 0, 1)).text,
            "NVTX range 'fwd' in domain 'megatron'");
  // Category 3 outside the Python domain is the application's own: an NVTX range.
  EXPECT_EQ(ClassifyHostSpan(Span("x", "other", kData, 0, 1)).kind, HostKind::kNvtxRange);
  // Category 0 in the Python domain (a file without categories): by the name.
  EXPECT_EQ(ClassifyHostSpan(Span("gc gen1", format::kPythonSpanDomain, 0, 0, 1)).text, "GC generation 1");
  EXPECT_EQ(ClassifyHostSpan(Span("m:f", format::kPythonSpanDomain, 0, 0, 1)).kind,
            HostKind::kTracedFunction);
  EXPECT_STREQ(HostKindName(HostKind::kDataLoading), "data_loading");
  EXPECT_STREQ(HostKindName(HostKind::kGc), "gc");
  EXPECT_STREQ(HostKindName(HostKind::kTracedFunction), "traced_function");
  EXPECT_STREQ(HostKindName(HostKind::kNvtxRange), "nvtx_range");
}

TEST(NvtxSpanBuilder, RangesAndPairedStartsAndEnds) {
  NvtxSpanBuilder b;
  b.Add(1, 0, 10, 20, 7, 0, "push", "");
  b.Add(4, 0, 15, 15, 7, 0, "mark", "");
  b.Add(1, 0, 12, 18, 7, 0, "", "");  // no message: nothing to name
  b.Add(2, 42, 30, 0, 8, 3, "started", "d");
  b.Add(3, 99, 0, 70, 9, 0, "", "");  // its start comes later
  b.Add(3, 42, 0, 50, 9, 0, "", "");
  b.Add(2, 99, 60, 0, 8, kData, "late start", format::kPythonSpanDomain);
  b.Add(2, 5, 80, 0, 8, 0, "never ended", "");
  const std::vector<HostSpan> spans = b.Take();
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans[0].name, "push");
  EXPECT_EQ(spans[1].name, "started");
  EXPECT_EQ(spans[1].domain, "d");
  EXPECT_EQ(spans[1].category, 3u);
  EXPECT_EQ(spans[1].tid, 8u);
  EXPECT_EQ(spans[1].start_ns, 30);
  EXPECT_EQ(spans[1].end_ns, 50);
  EXPECT_EQ(spans[2].name, "late start");
  EXPECT_EQ(spans[2].start_ns, 60);
  EXPECT_EQ(spans[2].end_ns, 70);
  EXPECT_TRUE(b.Take().empty());
}

TEST(HostIndex, CreditsTheInnermostSpanWithinTheWindow) {
  // An outer step range 0-100, a data-loader wait 10-60 inside it, a GC 30-40 inside that, a
  // mark (no duration), and a span after the window.
  const HostIndex index({Span("step", "", 0, 0, 100),
                         Span("loader", format::kPythonSpanDomain, kData, 10, 60),
                         Span("gc gen0", format::kPythonSpanDomain, kGcSpan, 30, 40),
                         Span("mark", "", 0, 50, 50), Span("later", "", 0, 200, 300)});
  ASSERT_EQ(index.labels(), 4u);  // the mark covers no time
  std::vector<double> credit;
  std::vector<int64_t> scratch;
  index.Credit(5, 95, /*idle_ns=*/90, &credit, &scratch);
  ASSERT_EQ(credit.size(), 4u);
  EXPECT_DOUBLE_EQ(credit[0], 40);  // 5-10 and 60-95
  EXPECT_DOUBLE_EQ(credit[1], 40);  // 10-30 and 40-60
  EXPECT_DOUBLE_EQ(credit[2], 10);
  EXPECT_DOUBLE_EQ(credit[3], 0);
  // The credits of a window add up to at most its idle time.
  std::vector<double> scaled;
  index.Credit(5, 95, /*idle_ns=*/45, &scaled, &scratch);
  EXPECT_DOUBLE_EQ(scaled[0] + scaled[1] + scaled[2], 45);
  EXPECT_DOUBLE_EQ(scaled[1], 20);
  // Nothing covers a window outside every span, nor a window without idle time.
  std::vector<double> none;
  index.Credit(120, 180, 60, &none, &scratch);
  index.Credit(0, 100, 0, &none, &scratch);
  for (double c : none) EXPECT_EQ(c, 0);
}

// A synthetic job whose rank 2 has 3 ms of extra host gap before every step, with `spans` on
// that rank covering `covered_ns` of each such gap (from its start) and a GC pause of
// `gc_ns` inside it.
std::vector<RankInput> HostJob(const std::string& domain, uint32_t category,
                               const std::string& name, int64_t covered_ns, int64_t gc_ns) {
  SyntheticJob job;
  job.groups.tp = 4;
  job.groups.dp = 2;
  job.steps = 100;
  job.host_rank = 2;
  std::vector<RankInput> ranks = MakeJob(job);
  for (const Arrival& a : ranks[2].arrivals) {
    if (a.comm_id != kTpCommBase || a.gap_begin_ns <= 0 || covered_ns <= 0) continue;
    const int64_t begin = a.gap_begin_ns;
    ranks[2].host_spans.push_back(Span(name, domain, category, begin, begin + covered_ns));
    if (gc_ns > 0) {
      ranks[2].host_spans.push_back(
          Span("gc gen2", format::kPythonSpanDomain, kGcSpan, begin + 1000, begin + 1000 + gc_ns));
    }
  }
  return ranks;
}

Options OptionsFor(const std::vector<RankInput>& ranks) {
  Options o;
  o.now_ns = JobEnd(ranks) + 1000000;
  return o;
}

const Straggler& OnlyStraggler(const Report& r) {
  EXPECT_FALSE(r.stragglers.empty());
  EXPECT_EQ(r.stragglers[0].rank, 2);
  EXPECT_EQ(r.stragglers[0].cause, Cause::kHost);
  return r.stragglers[0];
}

TEST(HostStraggler, NamesTheDataLoaderAndTheGcInsideIt) {
  const std::vector<RankInput> ranks =
      HostJob(format::kPythonSpanDomain, kData, "m:Loader.__next__", 2500000, 400000);
  const Report r = Analyze(ranks, OptionsFor(ranks));
  const Straggler& s = OnlyStraggler(r);
  ASSERT_EQ(s.host.size(), 2u);
  EXPECT_EQ(s.host[0].kind, "data_loading");
  EXPECT_EQ(s.host[0].name, "m:Loader.__next__");
  EXPECT_EQ(s.host[1].kind, "gc");
  EXPECT_EQ(s.host[1].text, "GC generation 2");
  // The loader is credited 2.1 ms of each late gap (2.5 ms less the GC inside it), the GC 0.4 ms,
  // over the arrivals it was last in (about 3.05 ms idle each).
  const double late = s.host_idle_s / 0.00305;
  EXPECT_GT(late, 50);
  EXPECT_NEAR(s.host[0].seconds / late, 0.0021, 0.0001);
  EXPECT_NEAR(s.host[1].seconds / late, 0.0004, 0.0001);
  const std::string text = ReportText(r);
  EXPECT_NE(text.find("cause host (the host was in the data loader (m:Loader.__next__) "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("its host was in the data loader (m:Loader.__next__) "), std::string::npos);
  const std::string json = ReportJson(r, ReportContext());
  EXPECT_NE(json.find("\"host\":[{\"kind\":\"data_loading\",\"name\":\"m:Loader.__next__\""),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"host_idle_s\":"), std::string::npos);
}

TEST(HostStraggler, NamesAnNvtxRangeAndATracedFunction) {
  std::vector<RankInput> ranks = HostJob("", 0, "load_batch", 3000000, 0);
  Report r = Analyze(ranks, OptionsFor(ranks));
  ASSERT_EQ(OnlyStraggler(r).host.size(), 1u);
  EXPECT_EQ(r.stragglers[0].host[0].text, "NVTX range 'load_batch'");
  ranks = HostJob(format::kPythonSpanDomain, kCall, "torch.cuda:synchronize", 3000000, 0);
  r = Analyze(ranks, OptionsFor(ranks));
  ASSERT_EQ(OnlyStraggler(r).host.size(), 1u);
  EXPECT_EQ(r.stragglers[0].host[0].kind, "traced_function");
}

TEST(HostStraggler, StreamedGivesTheSameReport) {
  const std::vector<RankInput> ranks =
      HostJob(format::kPythonSpanDomain, kData, "m:Loader.__next__", 2500000, 400000);
  std::vector<RankInput> bare = ranks;
  std::vector<RankPlan> plans(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    bare[i].arrivals.clear();
    for (const Arrival& a : ranks[i].arrivals) plans[i].Add(a.comm_id, a.comm_size, a.seq);
  }
  AnalysisStream stream(std::move(bare), plans, OptionsFor(ranks));
  for (size_t i = 0; i < ranks.size(); ++i) ASSERT_TRUE(stream.Add(i, ranks[i].arrivals));
  const Report streamed = stream.Finish();
  EXPECT_EQ(ReportJson(streamed, ReportContext()),
            ReportJson(Analyze(ranks, OptionsFor(ranks)), ReportContext()));
  EXPECT_EQ(OnlyStraggler(streamed).host.size(), 2u);
}

TEST(HostStraggler, NothingWithoutSpansOrOutsideTheGaps) {
  std::vector<RankInput> ranks = HostJob("", 0, "load_batch", 0, 0);
  ASSERT_TRUE(ranks[2].host_spans.empty());
  Report r = Analyze(ranks, OptionsFor(ranks));
  EXPECT_TRUE(OnlyStraggler(r).host.empty());
  EXPECT_GT(r.stragglers[0].host_idle_s, 0);
  EXPECT_EQ(ReportText(r).find("the host was in"), std::string::npos);
  // Spans on another rank, or on rank 2 far from its gaps, name nothing.
  ranks[0].host_spans.push_back(Span("load_batch", "", 0, 0, JobEnd(ranks)));
  ranks[2].host_spans.push_back(Span("setup", "", 0, 1, 1000));
  r = Analyze(ranks, OptionsFor(ranks));
  EXPECT_TRUE(OnlyStraggler(r).host.empty());
}

TEST(HostStraggler, ComputeStragglersNameNoHostSpan) {
  SyntheticJob job;
  job.groups.tp = 4;
  job.groups.dp = 2;
  job.steps = 100;
  job.slow_rank = 5;
  std::vector<RankInput> ranks = MakeJob(job);
  for (const Arrival& a : ranks[5].arrivals) {
    if (a.gap_begin_ns > 0) ranks[5].host_spans.push_back(Span("fwd", "", 0, a.gap_begin_ns, a.start_ns));
  }
  const Report r = Analyze(ranks, OptionsFor(ranks));
  ASSERT_FALSE(r.stragglers.empty());
  EXPECT_EQ(r.stragglers[0].cause, Cause::kCompute);
  EXPECT_TRUE(r.stragglers[0].host.empty());
  EXPECT_EQ(ReportJson(r, ReportContext()).find("\"host\":"), std::string::npos);
}

}  // namespace
}  // namespace analysis
}  // namespace xtimer
