#include "daemon/anomaly.h"

#include <random>

#include "daemon/test_util.h"
#include "gtest/gtest.h"

namespace xtimer {
namespace daemon {
namespace {

using format::DType;
using format::Operation;
using testing::MakeOp;

// One training step: two GEMM shapes, an all-reduce and a copy, each with +-25% jitter.
std::vector<format::OpRecord> Step(std::mt19937* rng) {
  std::uniform_real_distribution<double> jitter(0.75, 1.25);
  std::vector<format::OpRecord> ops;
  for (int64_t m : {1024, 4096}) {
    format::OpRecord g = MakeOp(Operation::kGemmEx, DType::kBF16, 0).op;
    g.m = m;
    g.n = g.k = 1024;
    g.duration_ns = static_cast<int64_t>(m * 100 * jitter(*rng));
    ops.push_back(g);
  }
  format::OpRecord ar = MakeOp(Operation::kAllReduce, DType::kF32, 0).op;
  ar.bytes = 1 << 24;
  ar.comm_size = 8;
  ar.duration_ns = static_cast<int64_t>(900000 * jitter(*rng));
  ops.push_back(ar);
  format::OpRecord cp = MakeOp(Operation::kMemcpyHtoD, DType::kU8, 0).op;
  cp.bytes = 1 << 20;
  cp.duration_ns = static_cast<int64_t>(40000 * jitter(*rng));
  ops.push_back(cp);
  return ops;
}

TEST(AnomalyTest, HealthyRunOf300StepsNamesNothing) {
  AnomalyDetector d(AnomalyOptions{});
  std::mt19937 rng(1);
  int named = 0;
  for (int step = 0; step < 300; ++step) {
    for (const format::OpRecord& r : Step(&rng)) named += d.Observe(r).anomalous;
  }
  EXPECT_EQ(named, 0);
  EXPECT_EQ(d.signatures(), 4u);
}

TEST(AnomalyTest, FiveTimesSlowOpIsNamedWithItsMedianAndOnlyIt) {
  AnomalyDetector d(AnomalyOptions{});
  std::mt19937 rng(2);
  int named = 0;
  for (int step = 0; step < 300; ++step) {
    std::vector<format::OpRecord> ops = Step(&rng);
    if (step == 200) ops[1].duration_ns = 4096 * 100 * 5;  // the 4096 GEMM, 5x its nominal time
    for (size_t i = 0; i < ops.size(); ++i) {
      const AnomalyVerdict v = d.Observe(ops[i]);
      if (!v.anomalous) continue;
      ++named;
      EXPECT_EQ(step, 200);
      EXPECT_EQ(ops[i].m, 4096);
      EXPECT_GT(v.median_ns, 4096 * 100 * 0.85);
      EXPECT_LT(v.median_ns, 4096 * 100 * 1.15);
      EXPECT_EQ(v.samples, 63u);
    }
  }
  EXPECT_EQ(named, 1);
}

TEST(AnomalyTest, NoJudgmentBeforeMinSamplesAndSignaturesBounded) {
  AnomalyOptions o;
  o.max_signatures = 2;
  AnomalyDetector d(o);
  format::OpRecord r = MakeOp(Operation::kAllReduce, DType::kF32, 1000).op;
  r.duration_ns = 1000;
  for (size_t i = 0; i + 1 < o.min_samples; ++i) d.Observe(r);
  r.duration_ns = 100000;
  EXPECT_FALSE(d.Observe(r).anomalous);  // 15 samples: not judged yet
  EXPECT_TRUE(d.Observe(r).anomalous);   // 16
  for (uint64_t bytes = 1; bytes <= 5; ++bytes) {
    r.bytes = bytes;
    d.Observe(r);
  }
  EXPECT_EQ(d.signatures(), 2u);
  EXPECT_EQ(d.untracked(), 4u);
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
