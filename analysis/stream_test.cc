// AnalysisStream gives Analyze's report on the same ranks, however their arrivals are split and
// interleaved, and refuses arrivals it cannot stream.
#include "analysis/stream.h"

#include <algorithm>
#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/report_json.h"
#include "analysis/synthetic.h"
#include "gtest/gtest.h"

namespace xtimer {
namespace analysis {
namespace {

std::string Json(const Report& r) { return ReportJson(r, ReportContext()); }

// Streams `ranks` `chunk` arrivals per rank at a time, rank after rank, folding between rounds.
Report Streamed(const std::vector<RankInput>& ranks, const Options& options, size_t chunk,
                size_t* most_held) {
  std::vector<RankInput> bare = ranks;
  std::vector<RankPlan> plans(ranks.size());
  for (size_t r = 0; r < ranks.size(); ++r) {
    bare[r].arrivals.clear();
    for (const Arrival& a : ranks[r].arrivals) plans[r].Add(a.comm_id, a.comm_size, a.seq);
  }
  AnalysisStream stream(std::move(bare), plans, options);
  *most_held = 0;
  for (size_t from = 0;; from += chunk) {
    bool any = false;
    for (size_t r = 0; r < ranks.size(); ++r) {
      const std::vector<Arrival>& all = ranks[r].arrivals;
      if (from >= all.size()) continue;
      any = true;
      std::vector<Arrival> part(all.begin() + from,
                                all.begin() + std::min(all.size(), from + chunk));
      EXPECT_TRUE(stream.Add(r, part));
    }
    *most_held = std::max(*most_held, stream.held());
    stream.Fold();
    if (!any) break;
  }
  return stream.Finish();
}

// Live-like progress on rank `r`: every communicator's next op in flight for `age_ns`.
void Stall(RankInput* r, int64_t now, int64_t age_ns) {
  for (const Communicator& c : r->comms) {
    Progress p;
    p.comm_id = c.id;
    for (const Arrival& a : r->arrivals) {
      if (a.comm_id == c.id) p.last_completed_seq = a.seq;
    }
    p.last_issued_seq = p.last_completed_seq + 1;
    p.oldest_issue_ns = now - age_ns;
    p.has_inflight = true;
    p.inflight = r->arrivals.back();
    p.inflight.comm_id = c.id;
    p.inflight.seq = p.last_completed_seq + 1;
    p.inflight.state = OpState::kStarted;
    r->progress.push_back(p);
  }
}

SyntheticJob Job(uint32_t seed) {
  SyntheticJob job;
  job.groups = Groups{2, 1, 1, 4, 1};
  job.steps = 200;
  job.seed = seed;
  return job;
}

TEST(AnalysisStream, StragglersAndLinksAsAnalyze) {
  for (int variant = 0; variant < 3; ++variant) {
    SyntheticJob job = Job(3 + variant);
    if (variant == 0) job.slow_rank = 5;
    if (variant == 1) job.host_rank = 2;
    if (variant == 2) job.slow_dp_group = 1;
    std::vector<RankInput> ranks = MakeJob(job);
    Options o;
    o.now_ns = JobEnd(ranks);
    const Report whole = Analyze(ranks, o);
    ASSERT_FALSE(whole.stragglers.empty()) << variant;
    for (size_t chunk : {1, 7, 1000}) {
      size_t most_held = 0;
      EXPECT_EQ(Json(Streamed(ranks, o, chunk, &most_held)), Json(whole))
          << variant << " " << chunk;
      // Folding keeps up: a round's arrivals, not the job's, are held.
      if (chunk == 7) {
        EXPECT_LE(most_held, 3 * 7 * ranks.size()) << variant;
      }
    }
  }
}

TEST(AnalysisStream, HangsAsAnalyze) {
  std::vector<RankInput> ranks = MakeJob(Job(9));
  const int64_t now = JobEnd(ranks) + int64_t{600} * 1000000000;
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (r == 6) continue;  // rank 6 never issues the next collective: the culprit
    Stall(&ranks[r], now, int64_t{500} * 1000000000);
  }
  ranks[3].arrivals.pop_back();  // one member's last completion missing
  Options o;
  o.now_ns = now;
  const Report whole = Analyze(ranks, o);
  ASSERT_FALSE(whole.hangs.empty());
  size_t most_held = 0;
  EXPECT_EQ(Json(Streamed(ranks, o, 5, &most_held)), Json(whole));
}

TEST(AnalysisStream, CompletedMismatchAsAnalyze) {
  std::vector<RankInput> ranks = MakeJob(Job(11));
  ranks[4].arrivals[40].count += 1;
  ranks[4].arrivals[90].count += 1;
  Options o;
  o.now_ns = JobEnd(ranks);
  const Report whole = Analyze(ranks, o);
  ASSERT_FALSE(whole.hangs.empty());
  EXPECT_EQ(whole.hangs[0].kind, HangKind::kMismatch);
  size_t most_held = 0;
  EXPECT_EQ(Json(Streamed(ranks, o, 3, &most_held)), Json(whole));
}

TEST(AnalysisStream, RefusesWhatItCannotStream) {
  std::vector<RankInput> ranks = MakeJob(Job(13));
  std::vector<RankInput> bare = ranks;
  std::vector<RankPlan> plans(ranks.size());
  for (size_t r = 0; r < ranks.size(); ++r) {
    bare[r].arrivals.clear();
    for (const Arrival& a : ranks[r].arrivals) plans[r].Add(a.comm_id, a.comm_size, a.seq);
  }
  {  // a seq again on its communicator
    AnalysisStream s(bare, plans, Options());
    EXPECT_TRUE(s.Add(0, {ranks[0].arrivals[0]}));
    EXPECT_FALSE(s.Add(0, {ranks[0].arrivals[0]}));
    EXPECT_FALSE(s.Add(1, {ranks[1].arrivals[0]}));  // unusable from then on
  }
  {  // beyond the plan
    AnalysisStream s(bare, plans, Options());
    Arrival late = ranks[0].arrivals.back();
    late.seq += 1;
    EXPECT_FALSE(s.Add(0, {late}));
  }
  {  // a communicator the plan does not name
    AnalysisStream s(bare, plans, Options());
    Arrival other = ranks[0].arrivals[0];
    other.comm_id = 0x9999;
    EXPECT_FALSE(s.Add(0, {other}));
  }
}

}  // namespace
}  // namespace analysis
}  // namespace xtimer
