#include "cli/op_diff.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <string>

#include "cli/readers/op_table.h"
#include "cli/readers/test_job.h"
#include "format/record.h"

namespace xtimer {
namespace cli {
namespace {

std::string TempDir(const std::string& name) {
  const char* t = std::getenv("TEST_TMPDIR");
  std::string d = std::string(t ? t : "/tmp") + "/" + name;
  return d;
}

OpTable Read(const std::vector<std::string>& dirs) {
  OpTable t;
  std::string error;
  EXPECT_TRUE(ReadOpTable(dirs, 2, &t, &error)) << error;
  return t;
}

TEST(OpTable, CountsAndMediansPerSignature) {
  TestJob job;
  job.steps = 10;
  std::string error;
  auto dirs = WriteTestJob(job, TempDir("healthy"), &error);
  ASSERT_EQ(dirs.size(), 2u) << error;
  OpTable t = Read(dirs);
  EXPECT_EQ(t.ranks, 8);
  EXPECT_EQ(t.events, 8u * 10 * 2);
  ASSERT_EQ(t.durations.size(), 2u);  // one GEMM shape, one AllReduce size
  for (const auto& kv : t.durations) {
    EXPECT_EQ(kv.second.size(), 80u);
    if (kv.first.name == "AllReduce") {
      EXPECT_EQ(kv.first.comm_size, 8);
      EXPECT_EQ(kv.first.Shape(), "64 MiB");
    } else {
      EXPECT_EQ(kv.first.name, "GemmEx");
      EXPECT_EQ(kv.first.Shape(), "4096x4096x4096");
    }
  }
}

TEST(OpTable, DiffRanksTheSlowedOpFirst) {
  TestJob a;
  a.steps = 10;
  TestJob b = a;
  b.transfer_factor = 2.0;  // every AllReduce's transfer takes twice as long
  b.gemm_factor = 1.05;     // and the GEMMs a little longer
  std::string error;
  auto da = WriteTestJob(a, TempDir("a"), &error);
  auto db = WriteTestJob(b, TempDir("b"), &error);
  ASSERT_FALSE(db.empty()) << error;
  std::vector<DiffRow> rows = DiffTables(Read(da), Read(db));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].signature.name, "AllReduce");
  EXPECT_EQ(rows[1].signature.name, "GemmEx");
  // The AllReduce's transfer got 1 ms slower (1 ms -> 2 ms), 10 calls per rank; the jitter of
  // the arrivals is not part of it.
  EXPECT_NEAR(rows[0].impact_s, 10 * 1.0e-3, 1e-6);
  EXPECT_GT(rows[0].b.median_s, rows[0].a.median_s);
  EXPECT_LT(rows[0].b.throughput, rows[0].a.throughput);
  // GEMM: 2 ms -> 2.1 ms, 10 calls per rank.
  EXPECT_NEAR(rows[1].impact_s, 10 * 0.1e-3, 0.05e-3);
  EXPECT_STREQ(rows[1].unit, "TFLOPS");
  EXPECT_NEAR(rows[1].a.throughput, 2.0 * 4096 * 4096 * 4096 / rows[1].a.mean_s / 1e12, 1e-9);
  EXPECT_NEAR(rows[1].change, 0.05, 0.005);
}

// A straggler makes its peers wait in every AllReduce; the AllReduce's own time (the transfer) is
// unchanged, and the slowed op, the straggler's GEMM, comes first.
TEST(OpTable, WaitingIsNotACollectivesSlowdown) {
  TestJob a;
  a.steps = 10;
  TestJob b = a;
  b.slow_rank = 3;  // its GEMM takes 1.3x: 0.6 ms more, the others wait as long
  std::string error;
  auto da = WriteTestJob(a, TempDir("balanced"), &error);
  auto db = WriteTestJob(b, TempDir("straggler"), &error);
  ASSERT_FALSE(db.empty()) << error;
  std::vector<DiffRow> rows = DiffTables(Read(da), Read(db));
  ASSERT_GE(rows.size(), 2u);
  EXPECT_EQ(rows[0].signature.name, "GemmEx");
  for (const DiffRow& r : rows) {
    if (r.signature.name != "AllReduce") continue;
    EXPECT_NEAR(r.b.median_s, r.a.median_s, 1e-9);
    EXPECT_NEAR(r.impact_s, 0, 1e-9);
  }
}

// One communicator of four slows down 4x: the median of the signature does not move, its mean
// and the impact do.
TEST(OpTable, ImpactCountsASlowdownOfSomeInstances) {
  OpTable a, b;
  OpSignature ar;
  ar.name = "AllReduce";
  a.ranks = b.ranks = 8;
  a.durations[ar] = std::vector<int64_t>(8, 1000000);
  b.durations[ar] = {1000000, 1000000, 1000000, 1000000, 1000000, 1000000, 4000000, 4000000};
  std::vector<DiffRow> rows = DiffTables(a, b);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_DOUBLE_EQ(rows[0].a.median_s, rows[0].b.median_s);
  EXPECT_NEAR(rows[0].b.mean_s, 1.75e-3, 1e-12);
  EXPECT_NEAR(rows[0].impact_s, 0.75e-3 * 8 / 8, 1e-12);
  EXPECT_NEAR(rows[0].change, 0.75, 1e-9);  // the mean's change, as the impact
  EXPECT_NEAR(rows[0].b.p90_s, 4e-3, 1e-12);
}

TEST(OpTable, OpsInOneDumpOnly) {
  OpTable a, b;
  OpSignature gone, added;
  gone.name = "Gone";
  added.name = "New";
  a.ranks = b.ranks = 2;
  a.durations[gone] = {1000000, 1000000};
  b.durations[added] = {2000000, 2000000, 2000000, 2000000};
  std::vector<DiffRow> rows = DiffTables(a, b);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].signature.name, "New");
  EXPECT_NEAR(rows[0].impact_s, 2e-3 * 4 / 2, 1e-12);
  EXPECT_NEAR(rows[1].impact_s, -1e-3 * 2 / 2, 1e-12);
  EXPECT_TRUE(std::isnan(rows[0].change));
  EXPECT_TRUE(std::isnan(rows[1].change));
}

TestJob Pipeline() {
  TestJob job;
  job.steps = 10;
  job.pipeline = true;
  return job;
}

// A send and its receive are one transfer, counted once, lasting the transfer only: the first of
// the pair to arrive waits for the other, and the hook numbers sends and receives per peer with
// one counter, so a send and its receive carry different seqs.
TEST(OpTable, SendAndReceiveAreOneTransfer) {
  TestJob job = Pipeline();
  job.slow_rank = 5;  // its partner, rank 1, waits in every group
  std::string error;
  auto dirs = WriteTestJob(job, TempDir("pipe-transfers"), &error);
  ASSERT_FALSE(dirs.empty()) << error;
  OpTable t = Read(dirs);
  int rows = 0;
  for (const auto& kv : t.durations) {
    if (kv.first.kind != static_cast<uint8_t>(format::OpKind::kP2P)) continue;
    ++rows;
    EXPECT_EQ(kv.first.name, kTransferName);
    EXPECT_EQ(kv.first.comm_size, 2);
    EXPECT_EQ(kv.second.size(), 4u * 2 * 10);  // 4 pairs, 2 transfers a step, 10 steps
    for (int64_t d : kv.second) EXPECT_EQ(d, job.p2p_ns);
  }
  EXPECT_EQ(rows, 1);
}

// One rank in 8 has 1.5x slower GEMMs in a pipeline: the GEMM comes first with the growth of its
// mean, the waiting it causes in send/recv and the AllReduce is no one's slowdown, rank 5 alone
// is named for its own work.
TEST(OpTable, OneSlowRankInAPipeline) {
  TestJob a = Pipeline();
  TestJob b = a;
  b.slow_rank = 5;
  b.slow_factor = 1.5;
  b.noise_seed = 1;
  std::string error;
  auto da = WriteTestJob(a, TempDir("pipe-healthy"), &error);
  auto db = WriteTestJob(b, TempDir("pipe-slow5"), &error);
  ASSERT_FALSE(db.empty()) << error;
  const OpTable ta = Read(da), tb = Read(db);
  std::vector<DiffRow> rows = DiffTables(ta, tb);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].signature.name, "GemmEx");
  EXPECT_NEAR(rows[0].change, 0.5 / 8, 0.005);  // 1 ms more on 1 call in 8 of 2 ms
  EXPECT_NEAR(rows[0].impact_s, 10 * 1e-3 / 8, 0.02e-3);
  for (size_t i = 1; i < rows.size(); ++i) {
    EXPECT_LT(std::abs(rows[i].change), 0.001) << rows[i].signature.name;
    EXPECT_LT(std::abs(rows[i].impact_s), 0.01 * rows[0].impact_s) << rows[i].signature.name;
  }
  std::vector<RankDiff> ranks = DiffRanks(ta, tb);
  ASSERT_EQ(ranks.size(), 8u);
  EXPECT_EQ(ranks[0].rank, 5);
  EXPECT_TRUE(ranks[0].grew);
  EXPECT_NEAR(ranks[0].change, 0.5, 0.01);
  ASSERT_FALSE(ranks[0].ops.empty());
  EXPECT_EQ(ranks[0].ops[0].signature.name, "GemmEx");
  EXPECT_NEAR(ranks[0].ops[0].change, 0.5, 0.01);
  EXPECT_NEAR(ranks[0].growth_s, 10 * 1e-3, 0.05e-3);
  EXPECT_NEAR(ranks[0].excess_s, 10 * 1e-3, 0.05e-3);  // the other ranks' GEMMs: +0%
  EXPECT_NEAR(ranks[0].ops[0].median_change, 0, 0.005);
  for (size_t i = 1; i < ranks.size(); ++i) EXPECT_FALSE(ranks[i].grew) << ranks[i].rank;
}

// The same healthy job twice, with other noise: no row and no rank changes by more than the
// noise.
TEST(OpTable, HealthyRunsDifferByNoiseOnly) {
  TestJob a = Pipeline();
  TestJob b = a;
  b.noise_seed = 7;
  std::string error;
  auto da = WriteTestJob(a, TempDir("pipe-run1"), &error);
  auto db = WriteTestJob(b, TempDir("pipe-run2"), &error);
  ASSERT_FALSE(db.empty()) << error;
  const OpTable ta = Read(da), tb = Read(db);
  for (const DiffRow& r : DiffTables(ta, tb)) {
    EXPECT_LT(std::abs(r.change), 0.01) << r.signature.name;
    EXPECT_LT(std::abs(r.impact_s), 10 * 0.02e-3) << r.signature.name;  // noise: < 20 us a call
  }
  for (const RankDiff& r : DiffRanks(ta, tb)) {
    EXPECT_FALSE(r.grew) << r.rank;
    EXPECT_LT(std::abs(r.change), 0.01) << r.rank;
  }
}

// A rank whose GEMMs do 1.3x the work through a larger k: its old shape is gone, the new one
// new, and B is twice as long as A. Its own work grew by 30%, measured over equal windows (its
// communication calls).
TEST(OpTable, RankWorkOfAChangedShapeOverAnotherWindow) {
  OpTable a, b;
  OpSignature old_shape, new_shape;
  old_shape.name = new_shape.name = "GemmEx";
  old_shape.k = 1000;
  new_shape.k = 1300;
  a.own[1][old_shape] = {10, 10 * 2e6};
  a.comm_calls[1] = 30;
  b.own[1][new_shape] = {20, 20 * 2.6e6};
  b.comm_calls[1] = 60;
  a.own[2][old_shape] = {10, 10 * 2e6};  // and an unchanged rank
  a.comm_calls[2] = 30;
  b.own[2][old_shape] = {20, 20 * 2e6};
  b.comm_calls[2] = 60;
  std::vector<RankDiff> ranks = DiffRanks(a, b);
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[0].rank, 1);
  EXPECT_NEAR(ranks[0].change, 0.3, 1e-9);
  EXPECT_NEAR(ranks[0].growth_s, 20 * 2.6e-3 - 20 * 2e-3, 1e-12);
  EXPECT_TRUE(ranks[0].grew);
  EXPECT_FALSE(ranks[1].grew);
  ASSERT_EQ(ranks[0].ops.size(), 2u);
  EXPECT_EQ(ranks[0].ops[0].signature.k, 1300);
  EXPECT_TRUE(std::isnan(ranks[0].ops[0].change));
}

// Every rank's own work grows alike (one-off start-up ops, a slower GPU for all): no rank stands
// out, none is named; the op table shows the slowdown.
TEST(OpTable, AGrowthOfEveryRankNamesNone) {
  TestJob a;
  a.steps = 10;
  TestJob b = a;
  b.gemm_factor = 1.05;
  std::string error;
  auto da = WriteTestJob(a, TempDir("all-a"), &error);
  auto db = WriteTestJob(b, TempDir("all-b"), &error);
  ASSERT_FALSE(db.empty()) << error;
  const std::vector<RankDiff> ranks = DiffRanks(Read(da), Read(db));
  ASSERT_EQ(ranks.size(), 8u);
  for (const RankDiff& r : ranks) {
    EXPECT_NEAR(r.growth_s, 10 * 0.1e-3, 0.02e-3) << r.rank;
    EXPECT_NEAR(r.change, 0, 0.005) << r.rank;
    EXPECT_FALSE(r.grew) << r.rank;
    EXPECT_NEAR(r.ops[0].median_change, 0.05, 0.005) << r.rank;
  }
}

// A one-off call (a start-up memset) that took one rank twice as long is one sample: not a
// rank's growth. Ten such calls are.
TEST(OpTable, OneOffCallsNameNoRank) {
  for (uint64_t calls : {1u, 10u}) {
    OpTable a, b;
    OpSignature memset;
    memset.name = "Memset";
    for (int32_t r = 0; r < 4; ++r) {
      a.own[r][memset] = {calls, calls * 1e6};
      b.own[r][memset] = {calls, calls * (r == 0 ? 2e6 : 1e6)};
    }
    std::vector<RankDiff> ranks = DiffRanks(a, b);
    ASSERT_EQ(ranks.size(), 4u);
    EXPECT_EQ(ranks[0].rank, 0);
    EXPECT_NEAR(ranks[0].growth_s, calls * 1e-3, 1e-12);
    EXPECT_EQ(ranks[0].grew, calls == 10) << calls;
    for (size_t i = 1; i < ranks.size(); ++i) EXPECT_FALSE(ranks[i].grew);
  }
}

TEST(OpTable, UnreadableInputsAreReported) {
  const std::string dir = TempDir("corrupt");
  mkdir(dir.c_str(), 0755);
  std::ofstream(dir + "/00000-00002.timeline") << "not a timeline file";
  OpTable t;
  std::string error;
  EXPECT_FALSE(ReadOpTable({dir, TempDir("no-such-dir")}, 1, &t, &error));
  EXPECT_NE(error.find("00000-00002.timeline"), std::string::npos) << error;
  EXPECT_NE(error.find("no-such-dir: No such file or directory"), std::string::npos) << error;
}

}  // namespace
}  // namespace cli
}  // namespace xtimer
