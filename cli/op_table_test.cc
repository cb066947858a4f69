#include "cli/op_table.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "cli/test_job.h"

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
  EXPECT_NEAR(rows[1].a.throughput, 2.0 * 4096 * 4096 * 4096 / rows[1].a.median_s / 1e12, 1e-9);
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
