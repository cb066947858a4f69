#include "cli/readers/rank_progress.h"

#include "gtest/gtest.h"

namespace xtimer {
namespace cli {
namespace {

constexpr int64_t kNow = 1000000000000;  // 1000 s

// A daemon's HangCheck answer carries each in-flight collective's state; every state reaches the
// analysis's progress, and `issued` (left untimed by the overhead budget: in flight, started or
// queued unknown) stays in flight. The conversion itself is proto/wire_arrival's.
TEST(RankProgressTest, EveryInflightStateReachesTheProgress) {
  const struct {
    CollectiveArrival::State proto;
    analysis::OpState want;
  } cases[] = {{CollectiveArrival::started, analysis::OpState::kStarted},
               {CollectiveArrival::queued, analysis::OpState::kQueued},
               {CollectiveArrival::issued, analysis::OpState::kIssued}};
  for (const auto& c : cases) {
    RankProgress p;
    p.set_rank(2);
    CommProgress* comm = p.add_comms();
    comm->set_comm_id("0x0000000000000001");
    comm->set_last_issued_seq(7);
    comm->set_last_completed_seq(6);
    comm->set_oldest_inflight_age_s(3);
    CollectiveArrival* a = comm->mutable_inflight();
    a->set_comm_id("0x0000000000000001");
    a->set_seq(7);
    a->set_state(c.proto);
    a->set_issue_age_s(3);
    analysis::RankInput in;
    ApplyRankProgress(p, kNow, &in);
    ASSERT_EQ(in.progress.size(), 1u);
    const analysis::Progress& pr = in.progress[0];
    EXPECT_TRUE(pr.has_inflight) << c.proto;
    EXPECT_EQ(pr.inflight.state, c.want) << c.proto;
    EXPECT_EQ(pr.inflight.seq, 7u);
    EXPECT_EQ(pr.inflight.comm_id, 1u);
    EXPECT_EQ(pr.inflight.issue_ns, kNow - 3000000000);
    EXPECT_EQ(pr.oldest_issue_ns, kNow - 3000000000);
  }
}

// RankProgress.recent keeps only completed collectives, with their GPU times on our clock.
TEST(RankProgressTest, RecentKeepsTheCompletedOnes) {
  RankProgress p;
  for (auto state : {CollectiveArrival::completed, CollectiveArrival::started}) {
    CollectiveArrival* a = p.add_recent();
    a->set_comm_id("0x0000000000000001");
    a->set_seq(state == CollectiveArrival::completed ? 5 : 6);
    a->set_state(state);
    a->set_start_age_s(2);
    a->set_end_age_s(1);
  }
  analysis::RankInput in;
  ApplyRankProgress(p, kNow, &in);
  ASSERT_EQ(in.arrivals.size(), 1u);
  EXPECT_EQ(in.arrivals[0].seq, 5u);
  EXPECT_EQ(in.arrivals[0].start_ns, kNow - 2000000000);
  EXPECT_EQ(in.arrivals[0].end_ns, kNow - 1000000000);
}

}  // namespace
}  // namespace cli
}  // namespace xtimer
