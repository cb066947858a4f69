// End-to-end checks of Analyze on whole synthetic jobs: no false alarms on healthy runs.
#include <vector>

#include "analysis/analysis.h"
#include "analysis/synthetic.h"
#include "gtest/gtest.h"

namespace xtimer {
namespace analysis {
namespace {

// Live-like progress: every communicator's next op issued `age_ns` before now, not started.
void AddProgress(std::vector<RankInput>* ranks, int64_t now, int64_t age_ns) {
  for (RankInput& r : *ranks) {
    for (const Communicator& c : r.comms) {
      Progress p;
      p.comm_id = c.id;
      uint64_t last = 0;
      for (const Arrival& a : r.arrivals) {
        if (a.comm_id == c.id) last = a.seq;
      }
      p.last_completed_seq = last;
      p.last_issued_seq = last + (age_ns > 0);
      if (age_ns > 0) {
        p.oldest_issue_ns = now - age_ns;
        p.has_inflight = true;
        p.inflight = r.arrivals.back();
        p.inflight.comm_id = c.id;
        p.inflight.seq = last + 1;
        p.inflight.state = OpState::kStarted;
      }
      r.progress.push_back(p);
    }
  }
}

TEST(Analyze, HealthyJobsGiveNoVerdict) {
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    for (Groups g : {Groups{2, 1, 1, 4, 1}, Groups{4, 1, 1, 2, 1}, Groups{2, 1, 1, 2, 2}}) {
      SyntheticJob job;
      job.groups = g;
      job.steps = 300;
      job.seed = seed;
      job.jitter_ns = 1000000;  // 10% of the compute time
      std::vector<RankInput> ranks = MakeJob(job);
      Options o;
      o.now_ns = JobEnd(ranks) + 5000000;
      o.has_groups = true;
      o.groups = g;
      AddProgress(&ranks, o.now_ns, 4000000);
      Report r = Analyze(ranks, o);
      EXPECT_TRUE(r.hangs.empty()) << "seed " << seed;
      EXPECT_TRUE(r.stragglers.empty())
          << "seed " << seed << " tp" << g.tp << ": " << r.stragglers[0].evidence[0];
      EXPECT_EQ(r.bounding_stage, -1) << "seed " << seed;
      EXPECT_GT(r.instances, 0u);
    }
  }
}

TEST(Analyze, AJobThatStopsIsAHangOnlyAfterItsCadence) {
  SyntheticJob job;
  job.groups.tp = 4;
  job.groups.dp = 2;
  std::vector<RankInput> ranks = MakeJob(job);
  int64_t end = JobEnd(ranks);
  // Steps take about 12 ms: the adaptive threshold is the 10 s floor.
  Options o;
  o.now_ns = end + 9000000000;
  std::vector<RankInput> live = ranks;
  AddProgress(&live, o.now_ns, 8900000000);
  EXPECT_TRUE(Analyze(live, o).hangs.empty());
  o.now_ns = end + 11000000000;
  live = ranks;
  AddProgress(&live, o.now_ns, 10900000000);
  Report r = Analyze(live, o);
  ASSERT_FALSE(r.hangs.empty());
  EXPECT_EQ(r.hangs[0].kind, HangKind::kStuckInCollective);
  EXPECT_NEAR(r.hangs[0].threshold_s, 10, 1e-9);
}

TEST(Analyze, EmptyAndOddInputs) {
  Options o;
  Report r = Analyze({}, o);
  EXPECT_TRUE(r.hangs.empty());
  EXPECT_TRUE(r.stragglers.empty());
  EXPECT_EQ(r.instances, 0u);
  std::vector<RankInput> ranks(3);  // no data at all
  ranks[1].rank = 7;
  r = Analyze(ranks, o);
  EXPECT_EQ(r.ranks.size(), 3u);
  EXPECT_EQ(r.instances, 0u);
}

}  // namespace
}  // namespace analysis
}  // namespace xtimer
