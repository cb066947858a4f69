#include <algorithm>
#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "format/record.h"
#include "gtest/gtest.h"

namespace xtimer {
namespace analysis {
namespace {

constexpr int64_t kS = 1000000000;
constexpr uint64_t kComm = 0xabc;
constexpr int64_t kT0 = 1000 * kS;
constexpr uint16_t kAllReduce = static_cast<uint16_t>(format::Operation::kAllReduce);
constexpr uint16_t kAllGather = static_cast<uint16_t>(format::Operation::kAllGather);

Arrival Op(uint64_t seq, uint16_t op = kAllReduce, uint64_t count = 1024) {
  Arrival a;
  a.comm_id = kComm;
  a.seq = seq;
  a.op = op;
  a.count = count;
  a.bytes = count * 4;
  a.dtype = static_cast<uint8_t>(format::DType::kF32);
  a.comm_size = 4;
  return a;
}

// `n` ranks of a communicator of `size` that completed seqs 1..20 once a second (seq i ends at
// kT0 + i s), then all issued seq 21 at kT0 + 20.1 s and started it.
std::vector<RankInput> Stalled(int n = 4, int size = 4) {
  std::vector<RankInput> ranks(n);
  for (int r = 0; r < n; ++r) {
    ranks[r].rank = r;
    ranks[r].comms.push_back({kComm, 0, size, r, {}});
    for (uint64_t s = 1; s <= 20; ++s) {
      Arrival a = Op(s);
      a.comm_size = size;
      a.start_ns = kT0 + static_cast<int64_t>(s) * kS - kS / 10;
      a.end_ns = kT0 + static_cast<int64_t>(s) * kS;
      ranks[r].arrivals.push_back(a);
    }
    Progress p;
    p.comm_id = kComm;
    p.last_issued_seq = 21;
    p.last_completed_seq = 20;
    p.oldest_issue_ns = kT0 + 20 * kS + kS / 10;
    p.has_inflight = true;
    p.inflight = Op(21);
    p.inflight.comm_size = size;
    p.inflight.state = OpState::kStarted;
    ranks[r].progress.push_back(p);
  }
  return ranks;
}

Options At(int64_t seconds_after_last) {
  Options o;
  o.now_ns = kT0 + 20 * kS + seconds_after_last * kS;
  return o;
}

void NeverIssue(RankInput* r) {
  Progress& p = r->progress[0];
  p.last_issued_seq = 20;
  p.oldest_issue_ns = 0;
  p.has_inflight = false;
  r->last_activity = "GemmEx m=8192 n=8192 k=8192, completed 59.0 s ago";
}

TEST(HangThreshold, AdaptsToCadenceWithinBounds) {
  Options o;
  std::vector<int64_t> ends;
  EXPECT_EQ(HangThresholdNs(ends, o), o.hang_timeout_ns);
  for (int i = 0; i < 7; ++i) ends.push_back(i * kS);
  EXPECT_EQ(HangThresholdNs(ends, o), o.early_hang_ns) << "fewer than min_cadence_samples";
  ends.push_back(7 * kS);
  EXPECT_EQ(HangThresholdNs(ends, o), 10 * kS);
  std::vector<int64_t> slow;
  for (int i = 0; i < 20; ++i) slow.push_back(i * 5 * kS);
  EXPECT_EQ(HangThresholdNs(slow, o), 50 * kS);
  std::vector<int64_t> fast;
  for (int i = 0; i < 20; ++i) fast.push_back(i * kS / 100);
  EXPECT_EQ(HangThresholdNs(fast, o), o.min_hang_ns);
  std::vector<int64_t> rare;
  for (int i = 0; i < 20; ++i) rare.push_back(i * 100 * kS);
  EXPECT_EQ(HangThresholdNs(rare, o), o.hang_timeout_ns);
}

TEST(HangThreshold, UsesTheRecentWindowOnly) {
  Options o;
  std::vector<int64_t> ends;
  for (int i = 0; i < 100; ++i) ends.push_back(i * 10 * kS);           // 10 s gaps long ago
  for (int i = 1; i <= 65; ++i) ends.push_back(990 * kS + i * 2 * kS);  // then 2 s gaps
  EXPECT_EQ(HangThresholdNs(ends, o), 20 * kS);
}

TEST(HangThreshold, FromArrivalsSelectsTheCommunicator) {
  std::vector<RankInput> ranks = Stalled();
  Options o;
  EXPECT_EQ(HangThresholdNs(ranks[0].arrivals, kComm, o), 10 * kS);
  EXPECT_EQ(HangThresholdNs(ranks[0].arrivals, kComm + 1, o), o.hang_timeout_ns);
}

TEST(Hang, NoVerdictBeforeTheThreshold) {
  EXPECT_TRUE(Analyze(Stalled(), At(9)).hangs.empty());
  std::vector<RankInput> ranks = Stalled();
  NeverIssue(&ranks[2]);
  EXPECT_TRUE(Analyze(ranks, At(9)).hangs.empty());
  EXPECT_EQ(Analyze(ranks, At(11)).hangs.size(), 1u);
}

TEST(Hang, NeverIssuedNamesTheRankThatDidNotCall) {
  std::vector<RankInput> ranks = Stalled();
  NeverIssue(&ranks[2]);
  Report report = Analyze(ranks, At(60));
  ASSERT_EQ(report.hangs.size(), 1u);
  const HangVerdict& v = report.hangs[0];
  EXPECT_EQ(v.kind, HangKind::kNeverIssued);
  EXPECT_STREQ(HangKindName(v.kind), "never_issued");
  EXPECT_EQ(v.culprit_ranks, std::vector<int32_t>({2}));
  EXPECT_EQ(v.waiting_ranks, std::vector<int32_t>({0, 1, 3}));
  EXPECT_EQ(v.comm_id, kComm);
  EXPECT_EQ(v.seq, 21u);
  EXPECT_EQ(v.op, kAllReduce);
  EXPECT_NEAR(v.threshold_s, 10, 1e-9);
  EXPECT_NEAR(v.stalled_s, 59.9, 1e-6);
  ASSERT_EQ(v.evidence.size(), 1u);
  EXPECT_NE(v.evidence[0].find("rank 2 never issued seq 21"), std::string::npos) << v.evidence[0];
  EXPECT_NE(v.evidence[0].find("GemmEx m=8192"), std::string::npos) << v.evidence[0];
}

TEST(Hang, MismatchedOpBlamesTheMinority) {
  std::vector<RankInput> ranks = Stalled();
  ranks[3].progress[0].inflight.op = kAllGather;
  Report report = Analyze(ranks, At(60));
  ASSERT_EQ(report.hangs.size(), 1u);
  const HangVerdict& v = report.hangs[0];
  EXPECT_EQ(v.kind, HangKind::kMismatch);
  EXPECT_EQ(v.mismatch, "op");
  EXPECT_EQ(v.culprit_ranks, std::vector<int32_t>({3}));
  EXPECT_EQ(v.waiting_ranks, std::vector<int32_t>({0, 1, 2}));
  EXPECT_EQ(v.op, kAllReduce);
  ASSERT_FALSE(v.evidence.empty());
  EXPECT_NE(v.evidence[0].find("rank 3 issued AllGather"), std::string::npos) << v.evidence[0];
}

TEST(Hang, MismatchNamesTheFirstDifferingField) {
  std::vector<RankInput> ranks = Stalled();
  ranks[1].progress[0].inflight.count = 2048;
  ranks[1].progress[0].inflight.root = 3;
  Report report = Analyze(ranks, At(60));
  ASSERT_EQ(report.hangs.size(), 1u);
  EXPECT_EQ(report.hangs[0].mismatch, "count");
  EXPECT_EQ(report.hangs[0].culprit_ranks, std::vector<int32_t>({1}));
  ranks = Stalled();
  ranks[0].progress[0].inflight.dtype = static_cast<uint8_t>(format::DType::kBF16);
  report = Analyze(ranks, At(60));
  ASSERT_EQ(report.hangs.size(), 1u);
  EXPECT_EQ(report.hangs[0].mismatch, "dtype");
  EXPECT_EQ(report.hangs[0].culprit_ranks, std::vector<int32_t>({0}));
}

TEST(Hang, MismatchTieBlamesTheGroupWithoutTheLowestRank) {
  std::vector<RankInput> ranks = Stalled();
  ranks[1].progress[0].inflight.op = kAllGather;
  ranks[3].progress[0].inflight.op = kAllGather;
  Report report = Analyze(ranks, At(60));
  ASSERT_EQ(report.hangs.size(), 1u);
  EXPECT_EQ(report.hangs[0].culprit_ranks, std::vector<int32_t>({1, 3}));
  EXPECT_EQ(report.hangs[0].op, kAllReduce);
}

// Campaign seed 1 run 66: a node's daemon sees 2 of the communicator's 4 members, and they
// disagree on the root. The majority is on the other node: naming either is a guess.
TEST(Hang, ATieAmongSomeMembersIsLeftToTheOthers) {
  std::vector<RankInput> ranks = Stalled(2, 4);
  ranks[0].progress[0].inflight.root = 1;
  ranks[1].progress[0].inflight.root = 0;
  Report report = Analyze(ranks, At(60));
  ASSERT_EQ(report.hangs.size(), 1u);
  const HangVerdict& v = report.hangs[0];
  EXPECT_EQ(v.kind, HangKind::kWaitingOnRemote);
  EXPECT_TRUE(v.culprit_ranks.empty());
  ASSERT_FALSE(v.evidence.empty());
  EXPECT_NE(v.evidence[0].find("no side holds a majority"), std::string::npos) << v.evidence[0];
}

// 3 of 5 members given, 2 against 1: two hold no majority of 5 either. 4 of 5, 3 against 1:
// three are a majority whatever the fifth issued.
TEST(Hang, SomeMembersNameACulpritOnlyWithAMajorityOfTheWhole) {
  std::vector<RankInput> ranks = Stalled(3, 5);
  ranks[2].progress[0].inflight.op = kAllGather;
  Report report = Analyze(ranks, At(60));
  ASSERT_EQ(report.hangs.size(), 1u);
  EXPECT_EQ(report.hangs[0].kind, HangKind::kWaitingOnRemote);
  ranks = Stalled(4, 5);
  ranks[2].progress[0].inflight.op = kAllGather;
  report = Analyze(ranks, At(60));
  ASSERT_EQ(report.hangs.size(), 1u);
  EXPECT_EQ(report.hangs[0].kind, HangKind::kMismatch);
  EXPECT_EQ(report.hangs[0].culprit_ranks, std::vector<int32_t>({2}));
}

TEST(Hang, NotStartedQuotesWhatBlocksTheStream) {
  std::vector<RankInput> ranks = Stalled();
  ranks[1].progress[0].inflight.state = OpState::kQueued;
  ranks[1].progress[0].blocked_by = "GemmEx m=8192 n=8192 k=8192 launched 41.2 s ago";
  Report report = Analyze(ranks, At(60));
  ASSERT_EQ(report.hangs.size(), 1u);
  const HangVerdict& v = report.hangs[0];
  EXPECT_EQ(v.kind, HangKind::kNotStarted);
  EXPECT_EQ(v.culprit_ranks, std::vector<int32_t>({1}));
  EXPECT_EQ(v.waiting_ranks, std::vector<int32_t>({0, 2, 3}));
  ASSERT_EQ(v.evidence.size(), 1u);
  EXPECT_NE(v.evidence[0].find("launched 41.2 s ago"), std::string::npos) << v.evidence[0];
}

TEST(Hang, QueuedBehindCommunicationIsNotBlamed) {
  std::vector<RankInput> ranks = Stalled();
  ranks[1].progress[0].inflight.state = OpState::kQueued;
  ranks[1].progress[0].blocked_by = "Recv launched 41.2 s ago";
  ranks[1].progress[0].blocked_by_communication = true;
  Report report = Analyze(ranks, At(60));
  ASSERT_EQ(report.hangs.size(), 1u);
  EXPECT_NE(report.hangs[0].kind, HangKind::kNotStarted);
  EXPECT_TRUE(report.hangs[0].culprit_ranks.empty());
}

TEST(Hang, StuckInCollectiveBlamesNoRank) {
  Report report = Analyze(Stalled(), At(60));
  ASSERT_EQ(report.hangs.size(), 1u);
  const HangVerdict& v = report.hangs[0];
  EXPECT_EQ(v.kind, HangKind::kStuckInCollective);
  EXPECT_TRUE(v.culprit_ranks.empty());
  EXPECT_EQ(v.waiting_ranks, std::vector<int32_t>({0, 1, 2, 3}));
}

TEST(Hang, ExitedWinsAndSaysHow) {
  std::vector<RankInput> ranks = Stalled();
  NeverIssue(&ranks[3]);
  ranks[3].exit = {true, format::ExitKind::kSignal, 11, kT0 + 48 * kS};
  Report report = Analyze(ranks, At(40));
  ASSERT_EQ(report.hangs.size(), 1u);
  const HangVerdict& v = report.hangs[0];
  EXPECT_EQ(v.kind, HangKind::kExited);
  EXPECT_EQ(v.culprit_ranks, std::vector<int32_t>({3}));
  EXPECT_EQ(v.waiting_ranks, std::vector<int32_t>({0, 1, 2}));
  ASSERT_EQ(v.evidence.size(), 1u);
  EXPECT_EQ(v.evidence[0], "rank 3 exited: signal 11 (SIGSEGV) 12.0 s ago");
  // With a crash report (docs/crash.md) the crashing frame joins the evidence.
  ranks[3].exit.crash_frame = "FaultHere (crash_program)";
  report = Analyze(ranks, At(40));
  ASSERT_EQ(report.hangs.size(), 1u);
  ASSERT_EQ(report.hangs[0].evidence.size(), 1u);
  EXPECT_EQ(report.hangs[0].evidence[0],
            "rank 3 exited: signal 11 (SIGSEGV) in FaultHere (crash_program) 12.0 s ago");
}

TEST(Hang, ExitStatusAndLostConnectionAreNamed) {
  std::vector<RankInput> ranks = Stalled();
  ranks[1].exit = {true, format::ExitKind::kExited, 3, 0};
  ranks[2].exit = {true, format::ExitKind::kNone, -1, 0};
  ranks[3].exit = {true, std::nullopt, 0, 0};  // a source that did not say how
  Report report = Analyze(ranks, At(60));
  ASSERT_EQ(report.hangs.size(), 1u);
  EXPECT_EQ(report.hangs[0].culprit_ranks, std::vector<int32_t>({1})) << "the first failure";
  EXPECT_EQ(report.hangs[0].evidence[0], "rank 1 exited: exit status 3");
  EXPECT_EQ(report.hangs[0].evidence[1],
            "rank 2 exited: connection to the daemon lost (after the first failure: not blamed)");
  EXPECT_EQ(report.hangs[0].evidence[2],
            "rank 3 exited: cause unknown (after the first failure: not blamed)");
}

TEST(Hang, MembersMissingFromTheInputsLeaveTheVerdictToTheOthers) {
  Report report = Analyze(Stalled(4, 8), At(60));
  ASSERT_EQ(report.hangs.size(), 1u);
  EXPECT_EQ(report.hangs[0].kind, HangKind::kWaitingOnRemote);
  EXPECT_TRUE(report.hangs[0].culprit_ranks.empty());
  EXPECT_EQ(report.hangs[0].waiting_ranks, std::vector<int32_t>({0, 1, 2, 3}));
  // A local culprit is still named.
  std::vector<RankInput> ranks = Stalled(4, 8);
  NeverIssue(&ranks[2]);
  report = Analyze(ranks, At(60));
  ASSERT_EQ(report.hangs.size(), 1u);
  EXPECT_EQ(report.hangs[0].kind, HangKind::kNeverIssued);
}

TEST(Hang, StalledInstanceIsTheFirstOneWaitedIn) {
  // Ranks 0 and 1 wait in 21; rank 2 completed 21 and waits in 22; rank 3 never issued 21.
  std::vector<RankInput> ranks = Stalled();
  NeverIssue(&ranks[3]);
  Arrival done = Op(21);
  done.start_ns = kT0 + 20 * kS + kS / 5;
  done.end_ns = kT0 + 20 * kS + kS / 4;
  ranks[2].arrivals.push_back(done);
  ranks[2].progress[0].last_issued_seq = 22;
  ranks[2].progress[0].last_completed_seq = 21;
  ranks[2].progress[0].inflight = Op(22);
  Report report = Analyze(ranks, At(60));
  ASSERT_EQ(report.hangs.size(), 1u);
  EXPECT_EQ(report.hangs[0].seq, 21u);
  EXPECT_EQ(report.hangs[0].kind, HangKind::kNeverIssued);
  EXPECT_EQ(report.hangs[0].culprit_ranks, std::vector<int32_t>({3}));
}

TEST(Hang, CompletedInstancesThatDifferAreAMismatchWithoutStall) {
  std::vector<RankInput> ranks = Stalled();
  for (RankInput& r : ranks) r.progress.clear();
  ranks[2].arrivals[4].count = 512;
  Report report = Analyze(ranks, At(60));
  ASSERT_EQ(report.hangs.size(), 1u);
  const HangVerdict& v = report.hangs[0];
  EXPECT_EQ(v.kind, HangKind::kMismatch);
  EXPECT_EQ(v.mismatch, "count");
  EXPECT_EQ(v.seq, 5u);
  EXPECT_EQ(v.culprit_ranks, std::vector<int32_t>({2}));
  EXPECT_EQ(v.waiting_ranks, std::vector<int32_t>({0, 1, 3}));
  EXPECT_EQ(v.stalled_s, 0);
}

TEST(Hang, SeveralCommunicatorsMostSevereFirst) {
  std::vector<RankInput> a = Stalled();  // stuck on kComm
  std::vector<RankInput> b = Stalled();
  for (RankInput& r : b) {
    r.rank += 4;
    r.comms[0].id = kComm + 1;
    r.progress[0].comm_id = kComm + 1;
    for (Arrival& x : r.arrivals) x.comm_id = kComm + 1;
  }
  NeverIssue(&b[1]);
  a.insert(a.end(), b.begin(), b.end());
  Report report = Analyze(a, At(60));
  ASSERT_EQ(report.hangs.size(), 2u);
  EXPECT_EQ(report.hangs[0].kind, HangKind::kNeverIssued);
  EXPECT_EQ(report.hangs[0].culprit_ranks, std::vector<int32_t>({5}));
  EXPECT_EQ(report.hangs[1].kind, HangKind::kStuckInCollective);
}

// Gives ranks 0-3 a second communicator (kComm + 1, 4 members) with the same 20 completed
// collectives and seq 21 in flight, as on kComm; returns their progress rows on it.
std::vector<Progress*> AddSecondCommunicator(std::vector<RankInput>* ranks) {
  std::vector<Progress*> rows;
  for (int r = 0; r < 4; ++r) {
    RankInput& in = (*ranks)[r];
    in.comms.push_back({kComm + 1, 0, 4, r, {}});
    Progress p = in.progress[0];
    p.comm_id = kComm + 1;
    p.last_issued_seq = 21;
    p.inflight.comm_id = kComm + 1;
    in.progress.push_back(p);
    for (uint64_t s = 1; s <= 20; ++s) {
      Arrival a = in.arrivals[s - 1];
      a.comm_id = kComm + 1;
      in.arrivals.push_back(a);
    }
  }
  for (int r = 0; r < 4; ++r) rows.push_back(&(*ranks)[r].progress.back());
  return rows;
}

// Ranks 0-3 wait in kComm's seq 21, which rank 4 never issues (a communicator of 0-4); ranks
// 0-3's next collective on a second communicator is queued behind it: they are victims there.
TEST(Hang, RanksWaitingElsewhereAreNotBlamedForTheNextCommunicator) {
  std::vector<RankInput> ranks = Stalled(5, 5);
  NeverIssue(&ranks[4]);
  for (Progress* p : AddSecondCommunicator(&ranks)) {
    p->inflight.state = OpState::kQueued;
    p->blocked_by = "AllReduce launched 40.0 s ago";
  }
  Report report = Analyze(ranks, At(60));
  ASSERT_EQ(report.hangs.size(), 1u);
  EXPECT_EQ(report.hangs[0].kind, HangKind::kNeverIssued);
  EXPECT_EQ(report.hangs[0].comm_id, kComm);
  EXPECT_EQ(report.hangs[0].culprit_ranks, std::vector<int32_t>({4}));
}

// Ranks 0-3 are all inside kComm's seq 21 (stuck). On a second communicator, rank 0's seq 21
// is queued behind that collective while ranks 1-3 started theirs: a stall that follows from the
// first. Only the cause is reported; alone, the downstream stall is reported and says so.
TEST(Hang, StallsThatFollowFromAnotherAreLeftToTheirCause) {
  std::vector<RankInput> ranks = Stalled();
  Progress* rank0 = AddSecondCommunicator(&ranks)[0];
  rank0->inflight.state = OpState::kQueued;
  rank0->blocked_by = "AllReduce seq 21 on comm 0x0000000000000abc launched 40.0 s ago";
  rank0->blocked_by_communication = true;
  Report report = Analyze(ranks, At(60));
  ASSERT_EQ(report.hangs.size(), 1u);
  EXPECT_EQ(report.hangs[0].kind, HangKind::kStuckInCollective);
  EXPECT_EQ(report.hangs[0].comm_id, kComm);
  EXPECT_FALSE(report.hangs[0].downstream);

  // kComm progresses: the second communicator's stall is all there is.
  for (RankInput& in : ranks) in.progress.erase(in.progress.begin());
  for (RankInput& in : ranks) {
    in.arrivals.erase(std::remove_if(in.arrivals.begin(), in.arrivals.end(),
                                     [](const Arrival& a) { return a.comm_id == kComm; }),
                      in.arrivals.end());
  }
  report = Analyze(ranks, At(60));
  ASSERT_EQ(report.hangs.size(), 1u);
  const HangVerdict& v = report.hangs[0];
  EXPECT_EQ(v.comm_id, kComm + 1);
  EXPECT_TRUE(v.downstream);
  EXPECT_TRUE(v.culprit_ranks.empty());
  EXPECT_NE(v.evidence.back().find("waits behind a stalled communication op"), std::string::npos)
      << v.evidence.back();
}

TEST(Hang, BadInputDoesNotCrash) {
  std::vector<RankInput> ranks = Stalled();
  ranks[0].arrivals[3].seq = ~uint64_t{0};
  ranks[1].arrivals[2].comm_size = -5;
  ranks[2].progress[0].inflight.seq = 0;
  ranks[3].arrivals.push_back(ranks[3].arrivals.back());  // duplicate
  Options o = At(60);
  o.cadence_window = 0;
  o.min_cadence_samples = -3;
  Report report = Analyze(ranks, o);  // the odd seq makes the cadence 16 s: no verdict yet
  for (const HangVerdict& v : report.hangs) EXPECT_EQ(v.comm_id, kComm);
  o.now_ns += 1000 * kS;
  EXPECT_FALSE(Analyze(ranks, o).hangs.empty());
  EXPECT_TRUE(Analyze({}, o).hangs.empty());
}

// ---- thresholds without history, pauses seen before, send/receive, exits, order.

TEST(HangThreshold, APauseSeenBeforeDoesNotAlarm) {
  Options o;
  std::vector<int64_t> ends;
  for (int i = 0; i < 30; ++i) ends.push_back(i * kS);
  EXPECT_EQ(HangThresholdNs(ends, o), 10 * kS);
  ends.push_back(29 * kS + 60 * kS);  // a 60 s checkpoint
  for (int i = 1; i < 30; ++i) ends.push_back(89 * kS + i * kS);
  EXPECT_EQ(HangThresholdNs(ends, o), 120 * kS) << "pause_factor x the longest gap";
}

// Two pipeline peers on a send/receive-only communicator: sends and receives complete once a
// second for 20 s; then rank 0 waits in a receive that rank 1 never sends.
std::vector<RankInput> PipelinePair(int present = 2) {
  std::vector<RankInput> ranks(present);
  for (int r = 0; r < present; ++r) {
    ranks[r].rank = r;
    ranks[r].comms.push_back({kComm, 0, 2, r, {}});
    for (int s = 1; s <= 20; ++s) ranks[r].p2p_completions.push_back({kComm, kT0 + s * kS});
    Progress p;
    p.comm_id = kComm;
    ranks[r].progress.push_back(p);
    ranks[r].last_activity_ns = kT0 + 20 * kS;
  }
  ranks[0].progress[0].oldest_issue_ns = kT0 + 20 * kS + kS / 10;
  return ranks;
}

TEST(Hang, SendReceiveOnlyCommunicatorGetsItsOwnCadence) {
  EXPECT_TRUE(Analyze(PipelinePair(), At(9)).hangs.empty());
  Report report = Analyze(PipelinePair(), At(12));
  ASSERT_EQ(report.hangs.size(), 1u) << "10 s from the send/receive cadence, not --hang-timeout";
  const HangVerdict& v = report.hangs[0];
  EXPECT_EQ(v.kind, HangKind::kNeverIssued);
  EXPECT_TRUE(v.point_to_point);
  EXPECT_EQ(v.op, 0);
  EXPECT_EQ(v.culprit_ranks, std::vector<int32_t>({1}));
  EXPECT_EQ(v.waiting_ranks, std::vector<int32_t>({0})) << "the waiter is never a culprit";
  ASSERT_EQ(report.thresholds.size(), 1u);
  EXPECT_EQ(report.thresholds[0].threshold_ns, 10 * kS);
  EXPECT_EQ(report.thresholds[0].cadence_samples, 40);
}

TEST(Hang, SendReceiveWithThePeerElsewhereWaitsOnRemote) {
  Report report = Analyze(PipelinePair(1), At(12));
  ASSERT_EQ(report.hangs.size(), 1u);
  EXPECT_EQ(report.hangs[0].kind, HangKind::kWaitingOnRemote);
  EXPECT_TRUE(report.hangs[0].culprit_ranks.empty());
  EXPECT_EQ(report.hangs[0].waiting_ranks, std::vector<int32_t>({0}));
}

TEST(Hang, SendReceiveBothWaitingIsStuckWithoutCulprit) {
  std::vector<RankInput> ranks = PipelinePair();
  ranks[1].progress[0].oldest_issue_ns = kT0 + 20 * kS + kS / 10;
  Report report = Analyze(ranks, At(12));
  ASSERT_EQ(report.hangs.size(), 1u);
  EXPECT_EQ(report.hangs[0].kind, HangKind::kStuckInCollective);
  EXPECT_EQ(report.hangs[0].waiting_ranks, std::vector<int32_t>({0, 1}));
}

// Stalled()'s ranks at the communicator's first instance: nothing completed, seq 1 in flight.
std::vector<RankInput> StalledAtTheFirstInstance(int n = 4, int size = 4) {
  std::vector<RankInput> ranks = Stalled(n, size);
  for (RankInput& r : ranks) {
    r.arrivals.clear();
    r.progress[0].last_completed_seq = 0;
    r.progress[0].last_issued_seq = 1;
    r.progress[0].inflight.seq = 1;
  }
  return ranks;
}

TEST(Hang, EarlyHangWithoutHistoryNeedsItsOwnEvidence) {
  // The first instance of a communicator: nothing completed yet; rank 2 never issued it.
  std::vector<RankInput> ranks = StalledAtTheFirstInstance();
  for (RankInput& r : ranks) r.last_activity_ns = kT0 + 20 * kS;
  NeverIssue(&ranks[2]);
  ranks[2].progress[0].last_issued_seq = 0;
  EXPECT_TRUE(Analyze(ranks, At(29)).hangs.empty());
  Report report = Analyze(ranks, At(31));
  ASSERT_EQ(report.hangs.size(), 1u);
  EXPECT_EQ(report.hangs[0].kind, HangKind::kNeverIssued);
  EXPECT_EQ(report.hangs[0].culprit_ranks, std::vector<int32_t>({2}));
  EXPECT_EQ(report.hangs[0].threshold_s, 30);
  ASSERT_EQ(report.thresholds.size(), 1u);
  EXPECT_EQ(report.thresholds[0].threshold_ns, 30 * kS) << "the threshold in force is exported";
  // The culprit did something 5 s ago: not idle, no early verdict.
  ranks[2].last_activity_ns = kT0 + 26 * kS;
  EXPECT_TRUE(Analyze(ranks, At(31)).hangs.empty());
  // Every member inside the first instance: a slow first connection is no evidence.
  std::vector<RankInput> inside = Stalled();
  for (RankInput& r : inside) r.arrivals.clear();
  EXPECT_TRUE(Analyze(inside, At(60)).hangs.empty());
  EXPECT_EQ(Analyze(inside, At(301)).hangs.size(), 1u);
}

// Campaign seed 1 run 50: rank 1 passes another count to the first loss all-reduce (step 1) of
// 8 ranks on 2 nodes. The node with ranks 0-3 sees 3 against 1, no majority of 8: it leaves the
// culprit to the others (waiting_on_remote), but the calls that differ are evidence that needs no
// history, so it says so at the early threshold, not at --hang-timeout (it said nothing for 300 s,
// and no automatic dump was written for offline analysis).
TEST(Hang, EarlyDisagreementWithoutAMajorityIsWaitingOnRemoteAtTheEarlyThreshold) {
  std::vector<RankInput> ranks = StalledAtTheFirstInstance(4, 8);
  ranks[1].progress[0].inflight.count = 512;
  EXPECT_TRUE(Analyze(ranks, At(29)).hangs.empty());
  Report report = Analyze(ranks, At(31));
  ASSERT_EQ(report.hangs.size(), 1u);
  EXPECT_EQ(report.hangs[0].kind, HangKind::kWaitingOnRemote);
  EXPECT_TRUE(report.hangs[0].culprit_ranks.empty());
  EXPECT_EQ(report.hangs[0].threshold_s, 30);
  // Members that all agree, some missing: no evidence of their own before --hang-timeout.
  EXPECT_TRUE(Analyze(StalledAtTheFirstInstance(4, 8), At(60)).hangs.empty());
}

TEST(Hang, FewCompletionsUseTheEarlyThreshold) {
  std::vector<RankInput> ranks = Stalled();
  for (RankInput& r : ranks) r.arrivals.resize(3);  // seqs 1..3 completed
  NeverIssue(&ranks[1]);
  EXPECT_TRUE(Analyze(ranks, At(29)).hangs.empty());
  ASSERT_EQ(Analyze(ranks, At(31)).hangs.size(), 1u);
}

TEST(Hang, AbnormalExitIsAVerdictWithoutWaiters) {
  std::vector<RankInput> ranks = Stalled();
  for (RankInput& r : ranks) r.progress[0].oldest_issue_ns = 0;  // nobody waits yet
  ranks[3].exit = {true, format::ExitKind::kSignal, 11, kT0 + 20 * kS};
  Report report = Analyze(ranks, At(1));
  ASSERT_EQ(report.hangs.size(), 1u);
  EXPECT_EQ(report.hangs[0].kind, HangKind::kExited);
  EXPECT_EQ(report.hangs[0].culprit_ranks, std::vector<int32_t>({3}));
  // Every rank returning 0 is a job that ended.
  for (RankInput& r : ranks) r.exit = {true, format::ExitKind::kExited, 0, kT0 + 20 * kS};
  EXPECT_TRUE(Analyze(ranks, At(1)).hangs.empty());
}

TEST(Hang, TheFirstFailureHeadsAndAFaultSignalBeatsATeardown) {
  std::vector<RankInput> ranks = Stalled();
  ranks[2].exit = {true, format::ExitKind::kNone, -1, kT0 + 20 * kS};  // killed by its launcher
  ranks[3].exit = {true, format::ExitKind::kSignal, 11, kT0 + 20 * kS + kS / 2};  // 0.5 s later
  Report report = Analyze(ranks, At(12));
  ASSERT_FALSE(report.hangs.empty());
  EXPECT_EQ(report.hangs[0].culprit_ranks, std::vector<int32_t>({3}));
  // Seconds apart, the earliest heads.
  ranks[3].exit.at_ns = kT0 + 25 * kS;
  report = Analyze(ranks, At(12));
  EXPECT_EQ(report.hangs[0].culprit_ranks, std::vector<int32_t>({2}));
}

// Campaign 2922/6: rank 3 raises SIGSEGV; rank 5, on a communicator rank 3 is not in, exits 1
// on NCCL's remote error 0.4 s later, and its peers there wait. Rank 5 heads its own
// communicator's exits, but it is the job's first failure's victim: one verdict, rank 3 (before:
// exited [3] and exited [5], and every surface's culprits were both).
TEST(Hang, AVictimThatExitsOnAnotherCommunicatorIsNotAFirstFailure) {
  std::vector<RankInput> ranks = Stalled();
  std::vector<RankInput> b = Stalled();
  for (RankInput& r : b) {
    r.rank += 4;
    for (Arrival& x : r.arrivals) x.comm_id = kComm + 1;
    r.progress[0].comm_id = kComm + 1;
    r.progress[0].inflight.comm_id = kComm + 1;
    r.comms[0].id = kComm + 1;
    ranks.push_back(r);
  }
  ranks[3].exit = {true, format::ExitKind::kSignal, 11, kT0 + 20 * kS};
  ranks[5].exit = {true, format::ExitKind::kExited, 1, kT0 + 20 * kS + 4 * kS / 10};
  Report report = Analyze(ranks, At(12));
  ASSERT_EQ(report.hangs.size(), 1u);
  EXPECT_EQ(report.hangs[0].kind, HangKind::kExited);
  EXPECT_EQ(report.hangs[0].culprit_ranks, std::vector<int32_t>({3}));
  // Without the first failure among the inputs (another node's view), rank 5 is its own.
  ranks.erase(ranks.begin(), ranks.begin() + 4);
  report = Analyze(ranks, At(12));
  ASSERT_EQ(report.hangs.size(), 1u);
  EXPECT_EQ(report.hangs[0].culprit_ranks, std::vector<int32_t>({5}));
}

TEST(Hang, OrderIsStableWhenStallsDifferByLessThanASecond) {
  // Two communicators of different ranks, each with a rank that never issued; which stalled a
  // little longer must not change the headline.
  for (int64_t shift : {-kS / 2, kS / 2}) {
    std::vector<RankInput> ranks = Stalled();
    NeverIssue(&ranks[1]);
    std::vector<RankInput> b = Stalled();
    NeverIssue(&b[3]);
    for (RankInput& r : b) {
      r.rank += 4;
      for (Arrival& x : r.arrivals) x.comm_id = kComm + 1;
      r.progress[0].comm_id = kComm + 1;
      r.progress[0].inflight.comm_id = kComm + 1;
      if (r.progress[0].oldest_issue_ns > 0) r.progress[0].oldest_issue_ns += shift;
      r.comms[0].id = kComm + 1;
      ranks.push_back(r);
    }
    Report report = Analyze(ranks, At(60));
    ASSERT_EQ(report.hangs.size(), 2u);
    EXPECT_EQ(report.hangs[0].culprit_ranks, std::vector<int32_t>({1})) << shift;
    EXPECT_EQ(report.hangs[1].culprit_ranks, std::vector<int32_t>({7})) << shift;
  }
}

TEST(Hang, QueuedBehindItsOwnCommunicatorsReceiveIsNotDownstream) {
  // A pipeline communicator with a peer on another node: rank 0's collective there waits behind
  // the communicator's own receive. That is the communicator's stall, not another's.
  std::vector<RankInput> ranks = Stalled(4, 8);
  Progress& p = ranks[0].progress[0];
  p.inflight.state = OpState::kQueued;
  p.blocked_by = "Recv on comm 0x0000000000000abc launched 40.0 s ago";
  p.blocked_by_communication = true;
  p.blocked_by_comm_id = kComm;
  Report report = Analyze(ranks, At(60));
  ASSERT_EQ(report.hangs.size(), 1u);
  EXPECT_EQ(report.hangs[0].kind, HangKind::kWaitingOnRemote);
  EXPECT_FALSE(report.hangs[0].downstream);
}

TEST(Hang, AConsequenceWaitsForItsCauseOnACommunicatorWithALongerThreshold) {
  // kComm is in its first steps (3 completions: a 30 s threshold) and every member waits in its
  // seq 4; the second communicator (20 completions: 10 s) has rank 0's collective queued behind
  // it. At 20 s the consequence alone would head: no verdict until the cause's own.
  std::vector<RankInput> ranks = Stalled();
  Progress* rank0 = AddSecondCommunicator(&ranks)[0];
  for (RankInput& r : ranks) {
    auto late = [](const Arrival& a) { return a.comm_id == kComm && a.seq > 3; };
    r.arrivals.erase(std::remove_if(r.arrivals.begin(), r.arrivals.end(), late),
                     r.arrivals.end());
    r.progress[0].last_completed_seq = 3;
    r.progress[0].last_issued_seq = 4;
    r.progress[0].inflight.seq = 4;
  }
  rank0->inflight.state = OpState::kQueued;
  rank0->blocked_by = "AllReduce seq 4 on comm 0x0000000000000abc launched 20.0 s ago";
  rank0->blocked_by_communication = true;
  rank0->blocked_by_comm_id = kComm;
  EXPECT_TRUE(Analyze(ranks, At(20)).hangs.empty());
  Report report = Analyze(ranks, At(31));
  ASSERT_EQ(report.hangs.size(), 1u);
  EXPECT_EQ(report.hangs[0].comm_id, kComm);
  EXPECT_FALSE(report.hangs[0].downstream);
}

TEST(Hang, CarriedThresholdIsUsed) {
  std::vector<RankInput> ranks = PipelinePair();
  for (RankInput& r : ranks) {
    r.p2p_completions.clear();
    r.progress[0].threshold_ns = 10 * kS;
    r.progress[0].cadence_samples = 40;
  }
  EXPECT_EQ(Analyze(ranks, At(12)).hangs.size(), 1u) << "the daemon's threshold, not 300 s";
}

}  // namespace
}  // namespace analysis
}  // namespace xtimer
