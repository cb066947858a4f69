#include <algorithm>
#include <random>
#include <vector>

#include "analysis/analysis.h"
#include "format/record.h"
#include "gtest/gtest.h"

namespace xtimer {
namespace analysis {
namespace {

constexpr int64_t kMs = 1000000;

TimedOp Work(format::Operation op, int64_t start, int64_t dur) {
  TimedOp t;
  t.op = static_cast<uint16_t>(op);
  t.kind = format::KindOfOperation(t.op);
  t.start_ns = start;
  t.issue_ns = start - kMs / 10;
  t.duration_ns = dur;
  return t;
}

TimedOp Coll(uint64_t comm, uint64_t seq, int64_t issue, int64_t start, int64_t dur) {
  TimedOp t = Work(format::Operation::kAllReduce, start, dur);
  t.comm_id = comm;
  t.seq = seq;
  t.count = 256;
  t.bytes = 1024;
  t.dtype = static_cast<uint8_t>(format::DType::kF32);
  t.comm_size = 4;
  t.issue_ns = issue;
  return t;
}

// A rank's step: matmul 10..20, AllReduce 22..24 (issued at 11), kernel 30..35 and a send
// 35..36 (neither work nor idle), a host sync (ignored), AllReduce 40..42 issued at 38.
std::vector<TimedOp> Step() {
  return {
      Work(format::Operation::kGemmEx, 10 * kMs, 10 * kMs),
      Coll(7, 1, 11 * kMs, 22 * kMs, 2 * kMs),
      Work(format::Operation::kKernelLaunch, 30 * kMs, 5 * kMs),
      Work(format::Operation::kSend, 35 * kMs, 1 * kMs),
      Work(format::Operation::kStreamSynchronize, 24 * kMs, 14 * kMs),
      Coll(7, 2, 38 * kMs, 40 * kMs, 2 * kMs),
  };
}

TEST(SummarizeRank, BusyAndIdleBetweenCollectives) {
  std::vector<Arrival> a = SummarizeRank(Step());
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].seq, 1u);
  EXPECT_EQ(a[0].busy_before_ns, 0) << "the first collective has no window";
  EXPECT_EQ(a[1].comm_id, 7u);
  EXPECT_EQ(a[1].seq, 2u);
  EXPECT_EQ(a[1].start_ns, 40 * kMs);
  EXPECT_EQ(a[1].end_ns, 42 * kMs);
  EXPECT_EQ(a[1].issue_ns, 38 * kMs);
  EXPECT_EQ(a[1].count, 256u);
  EXPECT_EQ(a[1].bytes, 1024u);
  EXPECT_EQ(a[1].comm_size, 4);
  EXPECT_EQ(a[1].state, OpState::kCompleted);
  EXPECT_EQ(a[1].busy_before_ns, 5 * kMs);
  EXPECT_EQ(a[1].idle_before_ns, (40 - 24 - 6) * kMs);
}

// Campaign 7/4 (pp 2): the second stage's receive waits for the first stage, which is slow. The
// wait is the peer's delay, not this rank's work nor its host's gap: counted as busy, the relay
// was named a compute straggler beside the real one (as idle it would be named a host one).
TEST(SummarizeRank, APipelineReceiveIsNeitherWorkNorIdle) {
  std::vector<Arrival> a = SummarizeRank({
      Coll(7, 1, 1 * kMs, 2 * kMs, 1 * kMs),                // 2..3
      Work(format::Operation::kRecv, 4 * kMs, 30 * kMs),      // 4..34, waits for stage 0
      Work(format::Operation::kGemmEx, 30 * kMs, 10 * kMs),   // 30..40, overlaps the receive
      Coll(7, 2, 40 * kMs, 41 * kMs, 1 * kMs),               // 41..42
  });
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[1].busy_before_ns, 10 * kMs);
  EXPECT_EQ(a[1].idle_before_ns, 2 * kMs);  // 3..4 and 40..41
}

// Campaign 7/4 (tp 1): the tensor-parallel all-reduce has one member and sits between the GEMMs
// and the data-parallel all-reduce. It waits on nobody: it is the rank's own work, and the
// window of the data-parallel arrival starts at the previous collective with peers, so the GEMMs
// count as busy before it (before: 0 busy, and a 1.95x slower rank passed for a relay).
TEST(SummarizeRank, ACollectiveWithoutPeersIsWorkNotAWindowStart) {
  TimedOp solo = Coll(9, 1, 11 * kMs, 20 * kMs, 1 * kMs);
  solo.comm_size = 1;
  std::vector<Arrival> a = SummarizeRank({
      Coll(7, 1, 1 * kMs, 2 * kMs, 1 * kMs),              // 2..3, with peers
      Work(format::Operation::kGemmEx, 4 * kMs, 16 * kMs),  // 4..20
      solo,                                                 // 20..21, alone
      Coll(7, 2, 21 * kMs, 22 * kMs, 3 * kMs),             // 22..25, with peers
  });
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[1].comm_size, 1);
  // Nothing to compare it with: no busy or idle time of its own (measuring it cost the daemon
  // a scan of every op since the last collective with peers, per such collective).
  EXPECT_EQ(a[1].busy_before_ns, 0);
  EXPECT_EQ(a[1].idle_before_ns, 0);
  EXPECT_EQ(a[2].comm_id, 7u);
  EXPECT_EQ(a[2].busy_before_ns, 17 * kMs);  // the GEMM and the solo all-reduce
  EXPECT_EQ(a[2].idle_before_ns, 2 * kMs);   // 3..4 and 21..22
}

// A world-1 rank: every collective is alone, the first one opens the only window, and each
// later one adds to the work before a collective with peers that never comes. Work out of order
// (another stream) is still counted once when a collective with peers finally arrives.
TEST(SummarizeRank, AWorldOfOneRankAddsWorkWithoutArrivalsToCompare) {
  std::vector<TimedOp> ops;
  for (int i = 0; i < 100; ++i) {
    TimedOp solo = Coll(9, i + 1, i * 10 * kMs, i * 10 * kMs + 5 * kMs, kMs);
    solo.comm_size = 1;
    ops.push_back(Work(format::Operation::kGemmEx, i * 10 * kMs, 5 * kMs));
    ops.push_back(solo);
  }
  ops.push_back(Work(format::Operation::kMemcpyDtoD, 7 * kMs, 2 * kMs));  // 7..9, added late
  ops.push_back(Coll(7, 1, 1000 * kMs, 1001 * kMs, kMs));
  RankSummarizer summarizer;
  std::vector<Arrival> a;
  for (const TimedOp& op : ops) {
    Arrival one;
    if (summarizer.Add(op, &one)) a.push_back(one);
  }
  ASSERT_EQ(a.size(), 101u);
  for (size_t i = 0; i < 100; ++i) EXPECT_EQ(a[i].busy_before_ns, 0) << i;
  // The window opens at the first solo all-reduce's end (6 ms): 99 GEMMs and solos of 6 ms each
  // and the copy are busy; the rest of 6..1001 is idle.
  EXPECT_EQ(a[100].busy_before_ns, 99 * 6 * kMs + 2 * kMs);
  EXPECT_EQ(a[100].idle_before_ns, (1001 - 6) * kMs - 99 * 6 * kMs - 2 * kMs);
}

TEST(SummarizeRank, OverlappingWorkCountsOnce) {
  std::vector<TimedOp> ops = {
      Coll(7, 1, 0, 1 * kMs, kMs),
      Work(format::Operation::kKernelLaunch, 3 * kMs, 4 * kMs),   // 3..7
      Work(format::Operation::kMemcpyDtoD, 5 * kMs, 4 * kMs),     // 5..9, another stream
      Work(format::Operation::kGemmEx, 1 * kMs, 3 * kMs),         // 1..4, before the window too
      Coll(7, 2, 0, 12 * kMs, kMs),
  };
  std::vector<Arrival> a = SummarizeRank(ops);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[1].busy_before_ns, 7 * kMs);  // 2..9
  EXPECT_EQ(a[1].idle_before_ns, 3 * kMs);
}

TEST(SummarizeRank, OverlappingCollectivesHaveNoWindow) {
  std::vector<TimedOp> ops = {
      Coll(7, 1, 0, 1 * kMs, 10 * kMs),
      Work(format::Operation::kGemmEx, 2 * kMs, 3 * kMs),
      Coll(8, 1, 0, 6 * kMs, 2 * kMs),  // another communicator, inside the first
  };
  std::vector<Arrival> a = SummarizeRank(ops);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[1].comm_id, 8u) << "oldest first, by arrival";
  EXPECT_EQ(a[1].start_ns, 6 * kMs);
  EXPECT_EQ(a[1].busy_before_ns, 0);
  EXPECT_EQ(a[1].idle_before_ns, 0);
}

TEST(SummarizeRank, IgnoresOpsThatNeverRan) {
  std::vector<TimedOp> ops = Step();
  ops.push_back(Coll(7, 3, 50 * kMs, 0, 0));
  TimedOp bad = Coll(7, 4, 50 * kMs, 60 * kMs, -5);
  ops.push_back(bad);
  TimedOp unknown = Work(format::Operation::kUnknown, 45 * kMs, kMs);
  unknown.kind = 0;
  ops.push_back(unknown);
  EXPECT_EQ(SummarizeRank(ops).size(), 2u);
}

TEST(RankSummarizer, IncrementalMatchesBatchInCompletionOrder) {
  std::mt19937 rng(3);
  std::vector<TimedOp> ops;
  int64_t t = 0;
  for (uint64_t seq = 1; seq <= 500; ++seq) {
    int n = std::uniform_int_distribution<int>(0, 6)(rng);
    for (int i = 0; i < n; ++i) {
      int64_t gap = std::uniform_int_distribution<int64_t>(0, kMs)(rng);
      int64_t dur = std::uniform_int_distribution<int64_t>(1, 3 * kMs)(rng);
      ops.push_back(Work(format::Operation::kGemmEx, t + gap, dur));
      t += gap + dur;
    }
    t += std::uniform_int_distribution<int64_t>(0, kMs)(rng);
    ops.push_back(Coll(7, seq, t - kMs, t, kMs));
    t += kMs;
  }
  std::vector<Arrival> batch = SummarizeRank(ops);
  RankSummarizer live;
  std::vector<Arrival> inc;
  Arrival a;
  for (const TimedOp& op : ops) {
    if (live.Add(op, &a)) inc.push_back(a);
  }
  ASSERT_EQ(batch.size(), 500u);
  ASSERT_EQ(inc.size(), 500u);
  for (size_t i = 0; i < batch.size(); ++i) {
    EXPECT_EQ(inc[i].seq, batch[i].seq);
    EXPECT_EQ(inc[i].busy_before_ns, batch[i].busy_before_ns) << i;
    EXPECT_EQ(inc[i].idle_before_ns, batch[i].idle_before_ns) << i;
    if (i > 0) {
      EXPECT_EQ(batch[i].busy_before_ns + batch[i].idle_before_ns,
                batch[i].start_ns - batch[i - 1].end_ns);
    }
  }
}

TEST(RankSummarizer, MemoryIsBoundedAndOldWorkDropped) {
  RankSummarizer live(16);
  Arrival a;
  for (int i = 0; i < 1000; ++i) {
    EXPECT_FALSE(live.Add(Work(format::Operation::kKernelLaunch, (i + 1) * kMs, kMs / 2), &a));
  }
  ASSERT_TRUE(live.Add(Coll(7, 1, 0, 2000 * kMs, kMs), &a));
  ASSERT_TRUE(live.Add(Coll(7, 2, 0, 2010 * kMs, kMs), &a));
  EXPECT_EQ(a.busy_before_ns, 0);
  EXPECT_EQ(a.idle_before_ns, 9 * kMs);
}


// A random rank's work and collectives, out of completion order as a timeline file's
// interleaved streams can be: every op is less than `spread` positions from its place.
std::vector<TimedOp> Interleaved(uint32_t seed, size_t spread) {
  std::mt19937 rng(seed);
  std::vector<TimedOp> ops;
  int64_t t = 0;
  for (uint64_t seq = 1; seq <= 3000; ++seq) {
    int n = std::uniform_int_distribution<int>(0, 5)(rng);
    for (int i = 0; i < n; ++i) {
      int64_t gap = std::uniform_int_distribution<int64_t>(0, kMs)(rng);
      int64_t dur = std::uniform_int_distribution<int64_t>(1, 3 * kMs)(rng);
      ops.push_back(Work(format::Operation::kGemmEx, t + gap, dur));
      t += gap + dur;
    }
    t += std::uniform_int_distribution<int64_t>(0, kMs)(rng);
    ops.push_back(Coll(7, seq, t - kMs, t, kMs));
    t += kMs;
  }
  for (size_t i = 0; i < ops.size(); i += spread) {  // shuffled within runs of `spread`
    std::shuffle(ops.begin() + i, ops.begin() + std::min(ops.size(), i + spread), rng);
  }
  return ops;
}

void ExpectSame(const std::vector<Arrival>& got, const std::vector<Arrival>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].seq, want[i].seq) << i;
    EXPECT_EQ(got[i].start_ns, want[i].start_ns) << i;
    EXPECT_EQ(got[i].busy_before_ns, want[i].busy_before_ns) << i;
    EXPECT_EQ(got[i].idle_before_ns, want[i].idle_before_ns) << i;
  }
}

std::vector<Arrival> InBlocks(const std::vector<TimedOp>& ops, size_t block, size_t window) {
  OrderedRankSummarizer summarizer(window);
  std::vector<TimedOp> b;
  for (size_t i = 0; i < ops.size(); i += block) {
    b.assign(ops.begin() + i, ops.begin() + std::min(ops.size(), i + block));
    summarizer.AddBlock(&b);
    EXPECT_TRUE(b.empty());
  }
  return summarizer.Finish();
}

TEST(OrderedRankSummarizer, BlocksInFileOrderMatchTheWholeSort) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    std::vector<TimedOp> ops = Interleaved(seed, 40);
    std::vector<Arrival> whole = SummarizeRank(ops);
    ASSERT_EQ(whole.size(), 3000u);
    // Disorder (40) below the window: exactly the whole sort, whatever the block size.
    ExpectSame(InBlocks(ops, 4096, 64), whole);
    ExpectSame(InBlocks(ops, 100, 64), whole);
    ExpectSame(InBlocks(ops, 1, 64), whole);
  }
}

TEST(OrderedRankSummarizer, DisorderBeyondTheWindowIsApproximateNotLost) {
  std::vector<TimedOp> ops = Interleaved(4, 300);
  std::vector<Arrival> whole = SummarizeRank(ops);
  std::vector<Arrival> got = InBlocks(ops, 50, 8);
  ASSERT_EQ(got.size(), whole.size());
  int differ = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].seq, whole[i].seq);
    EXPECT_EQ(got[i].start_ns, whole[i].start_ns) << i;
    EXPECT_EQ(got[i].end_ns, whole[i].end_ns) << i;
    differ += got[i].busy_before_ns != whole[i].busy_before_ns;
  }
  EXPECT_GT(differ, 0) << "the window was meant to be too small for this disorder";
}

}  // namespace
}  // namespace analysis
}  // namespace xtimer
