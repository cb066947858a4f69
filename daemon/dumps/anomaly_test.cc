#include "daemon/dumps/anomaly.h"

#include <random>

#include "daemon/base/test_util.h"
#include "gtest/gtest.h"

namespace xtimer {
namespace daemon {
namespace {

using format::DType;
using format::Operation;
using testing::MakeOp;

// One rank's host thread and stream, timed as the hook times them: the start event is stamped
// when the stream reaches it (at once on an idle stream), the op's work begins when the stream
// reaches it and the host has launched it, the end event when the work ends.
struct Rank {
  uint64_t member = 1;
  int64_t host_ns = 1000000000;  // the host thread's clock
  int64_t tail_ns = 0;           // the stream's end of queued work
  // Issues `r` taking `work_ns` of GPU time, the host launching it `gap_ns` after its start event
  // was recorded; returns the record.
  format::OpRecord Issue(format::OpRecord r, int64_t work_ns, int64_t gap_ns = 0) {
    r.stream = 0x5000;
    r.cpu_launch_ns = host_ns;
    r.gpu_start_ns = std::max(host_ns, tail_ns);
    host_ns += gap_ns + 1000;  // the launch; 1 us of host time per call
    const int64_t begin = std::max(r.gpu_start_ns, host_ns);
    tail_ns = begin + work_ns;
    r.duration_ns = tail_ns - r.gpu_start_ns;
    host_ns += 1000;
    return r;
  }
};

format::OpRecord Gemm(int64_t m) {
  format::OpRecord g = MakeOp(Operation::kGemmEx, DType::kBF16, 0).op;
  g.m = m;
  g.n = g.k = 1024;
  return g;
}

format::OpRecord Copy() {
  format::OpRecord c = MakeOp(Operation::kMemcpyHtoD, DType::kU8, 0).op;
  c.bytes = 1 << 20;
  return c;
}

format::OpRecord AllGather(uint64_t seq) {
  format::OpRecord a = MakeOp(Operation::kAllGather, DType::kBF16, 0).op;
  a.bytes = 1 << 22;
  a.comm_id = 0xc0;
  a.comm_size = 2;
  a.seq = seq;
  return a;
}

struct Named {
  std::vector<AnomalyDecision> all;
  std::vector<AnomalyDecision> anomalous() const {
    std::vector<AnomalyDecision> out;
    for (const AnomalyDecision& d : all) {
      if (d.verdict.anomalous) out.push_back(d);
    }
    return out;
  }
};

// One training step of one rank that the host runs ahead of (a busy stream): two GEMM shapes and
// a copy, each with +-25% jitter. `slow` multiplies the 4096 GEMM's work.
void Step(std::mt19937* rng, Rank* rank, AnomalyDetector* d, Named* named, double slow = 1) {
  std::uniform_real_distribution<double> jitter(0.75, 1.25);
  for (int64_t m : {1024, 4096}) {
    const double f = m == 4096 ? slow : 1;
    d->Add(rank->member, rank->Issue(Gemm(m), static_cast<int64_t>(m * 100 * jitter(*rng) * f)),
           0, &named->all);
  }
  d->Add(rank->member, rank->Issue(Copy(), static_cast<int64_t>(40000 * jitter(*rng))), 0,
         &named->all);
}

TEST(AnomalyTest, HealthyRunOf300StepsNamesNothing) {
  AnomalyDetector d(AnomalyOptions{});
  std::mt19937 rng(1);
  Rank rank;
  Named named;
  for (int step = 0; step < 300; ++step) Step(&rng, &rank, &d, &named);
  d.Expire(0, /*all=*/true, &named.all);
  EXPECT_EQ(named.all.size(), 900u);
  EXPECT_TRUE(named.anomalous().empty());
  EXPECT_EQ(d.signatures(), 3u);
  EXPECT_EQ(d.held(), 0u);
}

TEST(AnomalyTest, FiveTimesSlowOpIsNamedWithItsMedianAndOnlyIt) {
  AnomalyDetector d(AnomalyOptions{});
  std::mt19937 rng(2);
  Rank rank;
  Named named;
  for (int step = 0; step < 300; ++step) Step(&rng, &rank, &d, &named, step == 200 ? 5 : 1);
  const std::vector<AnomalyDecision> a = named.anomalous();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].record.m, 4096);
  EXPECT_EQ(a[0].verdict.judged_ns, a[0].record.duration_ns);  // the host ran ahead: all work
  EXPECT_TRUE(a[0].verdict.exact);
  EXPECT_GT(a[0].verdict.median_ns, 4096 * 100 * 0.85);
  EXPECT_LT(a[0].verdict.median_ns, 4096 * 100 * 1.15);
  EXPECT_EQ(a[0].verdict.samples, 63u);
}

// Each step a GEMM, then a copy on the same stream, the host ahead of the stream; in step 150 the
// host synchronizes before the copy (its stream goes idle) and launches it `gap_ns` after its
// start event, the copy's work taking `work_ns`.
Named IdleCopyRun(int64_t gap_ns, int64_t work_ns) {
  AnomalyDetector d(AnomalyOptions{});
  Rank rank;
  Named named;
  for (int step = 0; step < 300; ++step) {
    d.Add(rank.member, rank.Issue(Gemm(1024), 100000), 0, &named.all);
    if (step != 150) {
      d.Add(rank.member, rank.Issue(Copy(), 40000), 0, &named.all);
      continue;
    }
    rank.host_ns = rank.tail_ns + 50000;
    d.Add(rank.member, rank.Issue(Copy(), work_ns, gap_ns), 0, &named.all);
  }
  d.Expire(0, true, &named.all);
  return named;
}

TEST(AnomalyTest, HostGapOnAnIdleStreamIsNotNamed) {
  const Named named = IdleCopyRun(2000000, 40000);
  ASSERT_EQ(named.all.size(), 600u);
  const AnomalyDecision& gap = named.all[301];
  EXPECT_GT(gap.record.duration_ns, 2000000);  // 50x the copy's
  EXPECT_LE(gap.verdict.judged_ns, 40000);     // the work
  EXPECT_FALSE(gap.verdict.exact);
  EXPECT_GT(gap.verdict.median_ns, 30000);     // judged, against the busy stream's copies
  EXPECT_TRUE(named.anomalous().empty());
}

TEST(AnomalyTest, SlowWorkOnAnIdleStreamIsNamed) {
  const Named named = IdleCopyRun(0, 200000);
  const std::vector<AnomalyDecision> a = named.anomalous();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].record.gpu_start_ns, named.all[301].record.gpu_start_ns);
  EXPECT_GT(a[0].verdict.judged_ns, 190000);
  EXPECT_FALSE(a[0].verdict.exact);  // a lower bound: the launch might have come later
  EXPECT_GT(a[0].verdict.median_ns, 30000);
}

// Two ranks of one node in a communicator; each step a GEMM, then an all-gather. `late` delays
// rank B's host by 5 ms before its all-gather (its stream idles; A waits in the collective);
// `slow_link` makes the all-gather's transfer 5x longer on both.
void CollectiveStep(uint64_t seq, bool late, bool slow_link, Rank* a, Rank* b, AnomalyDetector* d,
                    Named* named) {
  for (Rank* r : {a, b}) d->Add(r->member, r->Issue(Gemm(1024), 100000), 0, &named->all);
  if (late) b->host_ns = b->tail_ns + 5000000;
  // The transfer begins when both have arrived: at the later of the two streams' positions.
  const int64_t arrive =
      std::max(std::max(a->tail_ns, a->host_ns), std::max(b->tail_ns, b->host_ns));
  const int64_t transfer = slow_link ? 1000000 : 200000;
  for (Rank* r : {a, b}) {
    format::OpRecord c = AllGather(seq);
    c.stream = 0x5000;
    c.cpu_launch_ns = r->host_ns;
    c.gpu_start_ns = std::max(r->host_ns, r->tail_ns);
    r->tail_ns = arrive + transfer;
    c.duration_ns = r->tail_ns - c.gpu_start_ns;
    r->host_ns += 2000;
    d->Add(r->member, c, 0, &named->all);
  }
}

TEST(AnomalyTest, LateRankPeersWaitsAreNotNamed) {
  AnomalyDetector d(AnomalyOptions{});
  Rank a, b;
  b.member = 2;
  Named named;
  for (uint64_t seq = 1; seq <= 300; ++seq) {
    CollectiveStep(seq, seq % 50 == 0, false, &a, &b, &d, &named);
  }
  d.Expire(0, true, &named.all);
  int waits = 0;
  for (const AnomalyDecision& x : named.all) {
    if (x.record.seq % 50 == 0 && x.record.seq != 0 && x.member == 1) {
      ++waits;
      EXPECT_GT(x.record.duration_ns, 5000000);  // A waited 5 ms for B
      EXPECT_LE(x.verdict.judged_ns, 200000);    // the transfer, less at most the late host's
      EXPECT_GE(x.verdict.judged_ns, 190000);    // call (B's stream was idle: a bound)
    }
  }
  EXPECT_EQ(waits, 6);
  EXPECT_TRUE(named.anomalous().empty());
  EXPECT_EQ(d.held(), 0u);
}

TEST(AnomalyTest, SlowLinkIsNamedOnEveryMember) {
  AnomalyDetector d(AnomalyOptions{});
  Rank a, b;
  b.member = 2;
  Named named;
  for (uint64_t seq = 1; seq <= 300; ++seq) {
    CollectiveStep(seq, false, seq == 200, &a, &b, &d, &named);
  }
  const std::vector<AnomalyDecision> x = named.anomalous();
  ASSERT_EQ(x.size(), 2u);
  for (const AnomalyDecision& n : x) {
    EXPECT_EQ(n.record.seq, 200u);
    EXPECT_EQ(n.verdict.judged_ns, 1000000);
    EXPECT_EQ(n.verdict.median_ns, 200000);
  }
  EXPECT_NE(x[0].member, x[1].member);
}

// The first instance of a communicator waits for all comm_size members (here B starts 400 ms
// late, A waits for it): A's wait is not named, though the signature's median is known.
TEST(AnomalyTest, FirstInstanceWaitsForEveryMember) {
  AnomalyDetector d(AnomalyOptions{});
  Rank a, b;
  b.member = 2;
  Named named;
  for (uint64_t seq = 1; seq <= 100; ++seq) {  // another communicator of the signature
    CollectiveStep(seq, false, false, &a, &b, &d, &named);
  }
  format::OpRecord first = AllGather(1);
  first.comm_id = 0xc1;
  first.stream = 0x5000;
  first.cpu_launch_ns = first.gpu_start_ns = a.host_ns;
  first.duration_ns = 400000000;  // B arrives 400 ms later
  d.Add(a.member, first, 0, &named.all);
  d.Add(a.member, a.Issue(Gemm(1024), 100000), 0, &named.all);  // bounds A's all-gather
  const auto of_c1 = [&named] {
    std::vector<AnomalyDecision> out;
    for (const AnomalyDecision& x : named.all) {
      if (x.record.comm_id == 0xc1) out.push_back(x);
    }
    return out;
  };
  EXPECT_TRUE(of_c1().empty());  // A's waits for B
  format::OpRecord late = first;
  late.cpu_launch_ns = late.gpu_start_ns = a.host_ns + 399800000;
  late.duration_ns = 200000;
  d.Add(b.member, late, 0, &named.all);
  d.Add(b.member, b.Issue(Gemm(1024), 100000), 0, &named.all);
  const std::vector<AnomalyDecision> c1 = of_c1();
  ASSERT_EQ(c1.size(), 2u);  // both decided once B's arrived
  for (const AnomalyDecision& x : c1) EXPECT_LE(x.verdict.judged_ns, 200000);
  EXPECT_GT(c1[0].verdict.median_ns, 0);
  EXPECT_TRUE(named.anomalous().empty());
}

// A collective waits for every member seen on its communicator, at most hold_ns; the held ops
// never pass max_held.
TEST(AnomalyTest, HeldOpsAreBoundedInTimeAndNumber) {
  AnomalyOptions o;
  o.hold_ns = 1000;
  o.max_held = 8;
  AnomalyDetector d(o);
  std::vector<AnomalyDecision> decided;
  format::OpRecord c = AllGather(1);
  c.duration_ns = 100;
  d.Add(1, c, 0, &decided);
  d.Add(2, c, 0, &decided);
  c.seq = 2;
  d.Add(1, c, 10, &decided);  // member 2 never sends seq 2
  d.Add(1, Gemm(64), 10, &decided);
  EXPECT_EQ(decided.size(), 0u);
  EXPECT_EQ(d.held(), 4u);
  d.Expire(1000, false, &decided);  // instance 1 (held since 0)
  EXPECT_EQ(decided.size(), 2u);
  d.Expire(1010, false, &decided);
  EXPECT_EQ(decided.size(), 4u);
  for (uint64_t s = 0; s < 20; ++s) {
    format::OpRecord g = Gemm(64);
    g.stream = s;  // no op on its stream follows: held
    d.Add(1, g, 2000, &decided);
    EXPECT_LE(d.held(), 8u);
  }
  EXPECT_EQ(decided.size(), 4u + 12u);
}

// A host sync's duration is how far the host was ahead of its stream: never an anomaly.
TEST(AnomalyTest, HostSyncsAreNotJudged) {
  AnomalyDetector d(AnomalyOptions{});
  std::vector<AnomalyDecision> decided;
  format::OpRecord s = MakeOp(Operation::kEventSynchronize, DType::kUnknown, 0).op;
  for (int i = 0; i < 100; ++i) {
    s.duration_ns = i == 90 ? 10000000 : 1000000;
    d.Add(1, s, 0, &decided);
  }
  ASSERT_EQ(decided.size(), 100u);
  EXPECT_FALSE(decided[90].verdict.anomalous);
  EXPECT_EQ(d.signatures(), 0u);
}

TEST(AnomalyTest, NoJudgmentBeforeMinSamplesAndSignaturesBounded) {
  AnomalyOptions o;
  o.max_signatures = 2;
  AnomalyDetector d(o);
  Rank rank;
  Named named;
  format::OpRecord r = MakeOp(Operation::kAllReduce, DType::kF32, 0).op;
  r.bytes = 1000;
  // 16 ops; the first, on an idle stream, is not exact: 15 samples.
  for (size_t i = 0; i < o.min_samples; ++i) d.Add(1, rank.Issue(r, 10000), 0, &named.all);
  d.Add(1, rank.Issue(r, 1000000), 0, &named.all);  // 15 samples: not judged yet
  d.Add(1, rank.Issue(r, 1000000), 0, &named.all);  // 16
  d.Add(1, rank.Issue(Copy(), 10000), 0, &named.all);
  ASSERT_EQ(named.all.size(), 18u);
  EXPECT_FALSE(named.all[16].verdict.anomalous);
  EXPECT_EQ(named.all[16].verdict.samples, 0u);
  EXPECT_TRUE(named.all[17].verdict.anomalous);
  EXPECT_EQ(named.all[17].verdict.samples, 16u);
  for (uint64_t bytes = 1; bytes <= 5; ++bytes) {
    r.bytes = bytes;
    d.Add(1, rank.Issue(r, 10000), 0, &named.all);
  }
  d.Expire(0, true, &named.all);
  EXPECT_EQ(d.signatures(), 2u);
  EXPECT_EQ(d.untracked(), 5u);
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
