// Training steps from NVTX (ranges the hook flagged as steps, format::kNvtxStep) in the metrics:
// the histogram of step time per rank, xtimer_step_seconds{source="nvtx"} (docs/metrics.md), that
// promtool accepts and whose buckets count every step once.
#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <cstring>
#include <string>
#include <vector>

#include "daemon/base/test_util.h"
#include "daemon/diagnosis/diagnosis.h"
#include "daemon/diagnosis/diagnosis_metrics.h"
#include "daemon/model/aggregator.h"
#include "format/python_spans.h"
#include "format/record.h"

namespace xtimer {
namespace daemon {
namespace {

constexpr int64_t kNow = 1700000000000000000;

format::RecordSlot Range(int64_t duration_ns, bool step) {
  format::RecordSlot s;
  std::memset(&s, 0, sizeof(s));
  s.nvtx.version = format::kRecordVersion;
  s.nvtx.type = static_cast<uint8_t>(format::RecordType::kNvtx);
  s.nvtx.event = static_cast<uint8_t>(format::NvtxEvent::kRange);
  s.nvtx.name_id = step ? 1 : 2;
  s.nvtx.start_ns = kNow - duration_ns;
  s.nvtx.end_ns = kNow;
  s.nvtx.flags = step ? format::kNvtxStep : 0;
  return s;
}

// `guessed`: the rank's steps guessed from its collectives (the diagnosis pass's StepTracker).
// A range that starts `start_ms` after the first and lasts 1 ms (a step lasts from its range's
// start to the next one's).
format::RecordSlot At(int64_t start_ms, bool step) {
  format::RecordSlot s = Range(1000000, step);
  s.nvtx.start_ns = kNow - int64_t{300} * 1000000000 + start_ms * 1000000;
  s.nvtx.end_ns = s.nvtx.start_ns + 1000000;
  return s;
}

std::string Exposition(const std::vector<format::RecordSlot>& records,
                       const StepHistogram& guessed = StepHistogram()) {
  Aggregator agg(AggregatorOptions{}, kNow);
  format::Identity id;
  id.job = "train";
  id.host = "h";
  id.rank = 5;
  id.local_rank = 1;
  id.world_size = 8;
  const ProcessId p = agg.AddProcess(1, id);
  agg.Ingest(p, records.data(), records.size(), kNow);
  // The live diagnosis's view of the rank: its process snapshot (the steps are the model's).
  LiveState state;
  JobLive job;
  job.job = "train";
  RankLive rank;
  rank.process = agg.TakeSnapshot(kNow + 1000000000, /*with_series=*/false).processes.at(0);
  rank.steps = guessed;
  job.ranks.push_back(rank);
  state.jobs.push_back(job);
  return prometheus::TextSerializer().Serialize(BuildDiagnosisFamilies(state));
}

TEST(StepMetricsTest, StepRangesFillAHistogramPerRank) {
  const int64_t ms = 1000000;
  // Steps of 3, 20, 20, 2000 and 200000 ms between six step ranges; another range between.
  const std::string m = Exposition({At(0, true), At(3, true), At(23, true), At(30, false),
                                    At(43, true), At(2043, true), At(202043, true)});
  (void)ms;
  const std::string labels =
      "job=\"train\",host=\"h\",pod=\"\",rank=\"5\",local_rank=\"1\",source=\"nvtx\"";
  const auto line = [&](const std::string& le, const std::string& n) {
    return "xtimer_step_seconds_bucket{" + labels + ",le=\"" + le + "\"} " + n + "\n";
  };
  EXPECT_NE(m.find("# TYPE xtimer_step_seconds histogram\n"), std::string::npos) << m;
  EXPECT_NE(m.find(line("0.0025", "0")), std::string::npos) << m;
  EXPECT_NE(m.find(line("0.005", "1")), std::string::npos) << m;
  EXPECT_NE(m.find(line("0.01", "1")), std::string::npos) << m;
  EXPECT_NE(m.find(line("0.025", "3")), std::string::npos) << m;
  EXPECT_NE(m.find(line("2.5", "4")), std::string::npos) << m;
  EXPECT_NE(m.find(line("60", "4")), std::string::npos) << m;
  EXPECT_NE(m.find(line("+Inf", "5")), std::string::npos) << m;
  EXPECT_NE(m.find("xtimer_step_seconds_count{" + labels + "} 5\n"), std::string::npos);
  EXPECT_NE(m.find("xtimer_step_seconds_sum{" + labels + "} 202.043\n"),
            std::string::npos)
      << m;
  std::string promtool;
  EXPECT_EQ(testing::RunCapture({"/usr/bin/promtool", "check", "metrics"}, m, &promtool), 0)
      << promtool;
}

// A rank's histogram has one source, so that a sum over ranks counts each step once: the steps
// its process marks where it marks any, else those guessed from its collectives.
TEST(StepMetricsTest, MarkedStepsWinOverTheGuess) {
  StepHistogram guessed;
  guessed.Observe(0.02);
  guessed.Observe(0.02);
  const std::string marked = Exposition({At(0, true), At(20, true)}, guessed);
  EXPECT_NE(marked.find("source=\"nvtx\"} 1\n"), std::string::npos) << marked;
  EXPECT_EQ(marked.find(",source=\"collectives\""), std::string::npos) << marked;
  const std::string unmarked = Exposition({At(0, false), At(20, false)}, guessed);
  EXPECT_NE(unmarked.find("source=\"collectives\"} 2\n"), std::string::npos) << unmarked;
  EXPECT_EQ(unmarked.find(",source=\"nvtx\""), std::string::npos) << unmarked;
}

// A Python step function's spans (the hook flags them as steps in the xtimer.python domain) are
// the source "python"; an NVTX step range of the application wins over them.
TEST(StepMetricsTest, PythonStepFunctionsAreTheirOwnSource) {
  format::RecordSlot domain = format::NamePart(7, format::kPythonSpanDomain, 0,
                                               format::RecordType::kNvtxString);
  std::vector<format::RecordSlot> py = {domain};
  for (int64_t start_ms : {0, 30, 60}) {  // optimizer steps 30 ms apart: two steps
    format::RecordSlot s = At(start_ms, true);
    s.nvtx.domain_id = 7;
    s.nvtx.name_id = 0;
    s.nvtx.category = static_cast<uint32_t>(format::PythonSpanKind::kStep);
    py.push_back(s);
  }
  const std::string python = Exposition(py);
  EXPECT_NE(python.find(",source=\"python\"} 2\n"), std::string::npos) << python;
  EXPECT_NE(python.find(",source=\"python\",le=\"0.025\"} 0\n"), std::string::npos) << python;
  EXPECT_NE(python.find(",source=\"python\",le=\"0.05\"} 2\n"), std::string::npos) << python;
  EXPECT_EQ(python.find(",source=\"nvtx\""), std::string::npos) << python;
  py.push_back(At(0, true));
  py.push_back(At(20, true));
  const std::string both = Exposition(py);
  EXPECT_NE(both.find(",source=\"nvtx\"} 1\n"), std::string::npos) << both;
  EXPECT_EQ(both.find(",source=\"python\""), std::string::npos) << both;
}

TEST(StepMetricsTest, WithoutStepsThereIsNoSeries) {
  const std::string m = Exposition({Range(1000000, false)});
  EXPECT_NE(m.find("# TYPE xtimer_step_seconds histogram\n"), std::string::npos);
  EXPECT_EQ(m.find("xtimer_step_seconds_count"), std::string::npos) << m;
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
