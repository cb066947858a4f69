#include "cli/readers/rank_progress.h"

#include <cstdlib>
#include <string>
#include <vector>

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

// A rank whose last 50 AllReduces on communicator 9 ended at `ends_s[i]` (Unix seconds on its
// node's clock), as its daemon's pass at `now_s` (on the same clock) ships them.
RankProgress RankEndingAt(int rank, double now_s, const std::vector<double>& ends_s) {
  RankProgress p;
  p.set_job("j");
  p.set_rank(rank);
  p.set_world_size(4);
  for (size_t i = 0; i < ends_s.size(); ++i) {
    CollectiveArrival* a = p.add_recent();
    a->set_comm_id("0x0000000000000009");
    a->set_seq(i + 1);
    a->set_state(CollectiveArrival::completed);
    a->set_end_age_s(now_s - ends_s[i]);
    a->set_start_age_s(now_s - ends_s[i] + 0.001);
    a->set_issue_age_s(now_s - ends_s[i] + 0.002);
  }
  return p;
}

// Two daemons' answers as of passes `pass_gap_s` apart, node n1's clock `skew_s` ahead of n0's,
// every collective ending at the same instant on both nodes (every 20 ms, the last 0.1 s before
// n0's pass; n1's pass is after it: a daemon's pass runs at its own moment within its period).
LiveInput LiveOfTwoNodes(double pass_gap_s, double skew_s) {
  const double now0 = 1000.0, now1 = now0 + pass_gap_s + skew_s;  // each on its own clock
  std::vector<double> ends0, ends1;
  for (int i = 0; i < 50; ++i) {
    ends0.push_back(now0 - 0.1 - 0.02 * (49 - i));
    ends1.push_back(ends0.back() + skew_s);
  }
  HangCheckResponse n0, n1;
  n0.set_node("vm");
  n0.set_now(now0);
  n1.set_node("vm");
  n1.set_now(now1);
  *n0.add_ranks() = RankEndingAt(0, now0, ends0);
  *n0.add_ranks() = RankEndingAt(1, now0, ends0);
  *n1.add_ranks() = RankEndingAt(2, now1, ends1);
  *n1.add_ranks() = RankEndingAt(3, now1, ends1);
  LiveInput live;
  std::string error;
  EXPECT_TRUE(CombineHangChecks({n0, n1}, "", &live, &error)) << error;
  return live;
}

// The offsets `xtimer analyze --hosts` reports are the nodes' clock offsets, whatever moment each
// daemon's pass ran: two emulated nodes on one host (one clock) read 0, not the half second
// between their passes; a node whose clock runs 2 ms ahead reads -2 ms. The analysis's now is the
// later pass, on the reference clock. (1 us: the answers' `now` is a double of Unix seconds.)
TEST(RankProgressTest, OffsetsAreTheClocksNotTheMomentsOfThePasses) {
  for (double skew : {0.0, 0.002}) {
    const LiveInput live = LiveOfTwoNodes(0.5, skew);
    ASSERT_EQ(live.offsets.size(), 2u);
    EXPECT_EQ(live.offsets[0].first, "vm#1");
    EXPECT_EQ(live.offsets[1].first, "vm#2");
    EXPECT_LE(std::llabs(live.offsets[0].second), 1000) << skew;
    EXPECT_LE(std::llabs(live.offsets[1].second + static_cast<int64_t>(skew * 1e9)), 1000)
        << skew << ": " << live.offsets[1].second;
    EXPECT_LE(std::llabs(live.now_ns - 1000500000000), 1000) << skew;
    ASSERT_EQ(live.ranks.size(), 4u);
    for (size_t i = 0; i < 50; ++i) {
      EXPECT_LE(std::llabs(live.ranks[0].arrivals[i].end_ns - live.ranks[3].arrivals[i].end_ns),
                1000) << i;
    }
    EXPECT_LE(std::llabs(live.ranks[3].arrivals[49].end_ns - (1000000000000 - 100000000)), 1000);
  }
}

// A node sharing no collective with the others cannot be aligned: it is taken as of the latest
// aligned pass (its ages from that instant), whatever its clock reads, and is named.
TEST(RankProgressTest, ANodeSharingNoCollectiveIsTakenAsOfTheLatestPass) {
  std::vector<double> ends;
  for (int i = 0; i < 50; ++i) ends.push_back(999.9 - 0.02 * (49 - i));
  HangCheckResponse n0, n1, n2;
  n0.set_node("a");
  n0.set_now(1000.0);
  n1.set_node("b");
  n1.set_now(1000.5);  // the same clock, a pass half a second later
  n2.set_node("c");
  n2.set_now(990.2);  // its clock 10 s behind
  *n0.add_ranks() = RankEndingAt(0, 1000.0, ends);
  *n1.add_ranks() = RankEndingAt(1, 1000.5, ends);
  for (int rank : {2, 3}) {
    RankProgress p = RankEndingAt(rank, 990.2, {});
    CommProgress* c = p.add_comms();
    c->set_comm_id("0x0000000000000001");
    c->set_oldest_inflight_age_s(5);
    *n2.add_ranks() = p;
  }
  LiveInput live;
  std::string error;
  ASSERT_TRUE(CombineHangChecks({n0, n1, n2}, "", &live, &error)) << error;
  ASSERT_EQ(live.offsets.size(), 3u);
  EXPECT_LE(std::llabs(live.offsets[1].second), 1000) << live.offsets[1].second;
  EXPECT_LE(std::llabs(live.offsets[2].second - 10300000000), 1000) << live.offsets[2].second;
  EXPECT_LE(std::llabs(live.now_ns - 1000500000000), 1000);
  ASSERT_EQ(live.ranks.size(), 4u);
  EXPECT_EQ(live.ranks[2].progress[0].oldest_issue_ns, live.now_ns - 5000000000);
  ASSERT_EQ(live.warnings.size(), 1u);
  EXPECT_NE(live.warnings[0].find("node c shares no collective"), std::string::npos);
}

}  // namespace
}  // namespace cli
}  // namespace xtimer
