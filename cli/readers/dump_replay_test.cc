// xtimer analyze's streamed judgment (AnalyzeDump) gives the report of the whole dump read at
// once (ReadDump + Analyze), with the files read in several rounds, and falls back to reading
// whole a file more out of order than the stream's window.
#include "cli/readers/dump_replay.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/report_json.h"
#include "cli/readers/dump_reader.h"
#include "cli/readers/test_job.h"
#include "gtest/gtest.h"
#include "timeline/timeline_io.h"

namespace xtimer {
namespace cli {
namespace {

std::string TempDir(const std::string& name) {
  const char* t = std::getenv("TEST_TMPDIR");
  return std::string(t ? t : "/tmp") + "/" + name;
}

struct Both {
  std::string whole, streamed;
  bool was_streamed = false;
  analysis::Report report;
};

// The JSON report of the dump in `dirs` read whole and streamed in rounds of about `per_round`
// arrivals.
Both Judge(const std::vector<std::string>& dirs, uint64_t per_round) {
  DumpReadOptions ro;
  ro.inputs = dirs;
  ro.jobs = 2;
  std::string error;
  DumpInput whole;
  EXPECT_TRUE(ReadDump(ro, &whole, &error)) << error;
  analysis::Options opt;
  opt.now_ns = whole.now_ns;
  Both b;
  b.whole = analysis::ReportJson(analysis::Analyze(whole.ranks, opt), {});
  DumpInput first;
  DumpReplay replay;
  EXPECT_TRUE(OpenDump(ro, &first, &replay, &error)) << error;
  EXPECT_EQ(first.now_ns, whole.now_ns);
  for (const analysis::RankInput& r : first.ranks) EXPECT_TRUE(r.arrivals.empty());
  replay.arrivals_per_round = per_round;
  b.report = AnalyzeDump(replay, first.ranks, opt, &b.was_streamed);
  b.streamed = analysis::ReportJson(b.report, {});
  return b;
}

TEST(AnalyzeDump, StragglersStreamedAsReadWhole) {
  TestJob job;
  job.steps = 300;
  job.slow_rank = 3;
  job.pipeline = true;
  job.node_skew_ns = {0, 2000000};
  std::string error;
  auto dirs = WriteTestJob(job, TempDir("replay_straggler"), &error);
  ASSERT_EQ(dirs.size(), 2u) << error;
  for (uint64_t per_round : {50, 1000, 1000000}) {
    Both b = Judge(dirs, per_round);
    EXPECT_TRUE(b.was_streamed) << per_round;
    EXPECT_EQ(b.streamed, b.whole) << per_round;
    ASSERT_FALSE(b.report.stragglers.empty());
    EXPECT_EQ(b.report.stragglers[0].rank, 3);
  }
}

TEST(AnalyzeDump, HangStreamedAsReadWhole) {
  TestJob job;
  job.steps = 200;
  job.stop_rank = 5;
  job.stop_step = 150;
  job.node_skew_ns = {0, 3000000};
  std::string error;
  auto dirs = WriteTestJob(job, TempDir("replay_hang"), &error);
  ASSERT_EQ(dirs.size(), 2u) << error;
  Both b = Judge(dirs, 100);
  EXPECT_TRUE(b.was_streamed);
  EXPECT_EQ(b.streamed, b.whole);
  ASSERT_FALSE(b.report.hangs.empty());
  EXPECT_EQ(b.report.hangs[0].culprit_ranks, std::vector<int32_t>({5}));
}

// Rewrites `path` with its events in reverse order.
void Reverse(const std::string& path) {
  std::vector<timeline::EventRecord> events;
  timeline::ReadResult r =
      timeline::ReadTimeline(path, [&](const timeline::EventRecord& e) { events.push_back(e); });
  ASSERT_TRUE(r.ok) << r.error;
  std::reverse(events.begin(), events.end());
  std::string error;
  auto w = timeline::TimelineWriter::Create(path, r.metadata, &error);
  ASSERT_NE(w, nullptr) << error;
  for (const timeline::EventRecord& e : events) ASSERT_TRUE(w->Append(e));
  ASSERT_TRUE(w->Finish(&error)) << error;
}

TEST(AnalyzeDump, AFileOutOfOrderIsReadWhole) {
  TestJob job;
  job.steps = 1000;  // 2,000 events: one block, reversed beyond the stream's window
  job.slow_rank = 6;
  std::string error;
  auto dirs = WriteTestJob(job, TempDir("replay_order"), &error);
  ASSERT_EQ(dirs.size(), 2u) << error;
  Both in_order = Judge(dirs, 500);
  EXPECT_TRUE(in_order.was_streamed);
  Reverse(dirs[0] + "/00001-00008.timeline");
  Both b = Judge(dirs, 500);
  EXPECT_FALSE(b.was_streamed);
  EXPECT_EQ(b.streamed, b.whole);
  EXPECT_EQ(b.whole, in_order.whole) << "one block is sorted whole";
}

}  // namespace
}  // namespace cli
}  // namespace xtimer
