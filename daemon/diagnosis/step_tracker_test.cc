#include "daemon/diagnosis/step_tracker.h"

#include <vector>

#include <gtest/gtest.h>

#include "format/record.h"

namespace xtimer {
namespace daemon {
namespace {

constexpr int64_t kMs = 1000000;

// `steps` steps of `step_ms` from seq `first`: per step `per_step` all-reduces 1 ms apart.
std::vector<analysis::Arrival> Steps(uint64_t comm, uint64_t first_step, int steps, int per_step,
                                     int64_t step_ms) {
  std::vector<analysis::Arrival> v;
  for (int s = 0; s < steps; ++s) {
    for (int i = 0; i < per_step; ++i) {
      analysis::Arrival a;
      a.comm_id = comm;
      a.seq = (first_step + s) * per_step + i;
      a.op = static_cast<uint16_t>(format::Operation::kAllReduce);
      a.bytes = 1024 * (i % 3 + 1);
      a.start_ns = int64_t{1} << 50;
      a.start_ns += static_cast<int64_t>(first_step + s) * step_ms * kMs + i * kMs;
      v.push_back(a);
    }
  }
  return v;
}

TEST(StepTrackerTest, EachStepIsObservedOnceAcrossOverlappingPasses) {
  StepTracker t;
  const RankKey key{1, 0};
  // The diagnosis keeps a ring: each pass sees the newest arrivals, overlapping the last pass's.
  const StepHistogram& h1 = t.Update(key, Steps(7, 0, 10, 6, 40));
  EXPECT_EQ(h1.count, 9u);  // 10 steps: 9 measured from the one before
  EXPECT_EQ(h1.guess.per_step, 6u);
  const StepHistogram& h2 = t.Update(key, Steps(7, 5, 10, 6, 40));
  EXPECT_EQ(h2.count, 14u);  // steps 10..14 are new
  EXPECT_NEAR(h2.sum_s, 14 * 0.040, 1e-9);
  EXPECT_EQ(h2.counts[5], 14u);  // 40 ms: the (25 ms, 50 ms] bucket
  const StepHistogram& h3 = t.Update(key, Steps(7, 5, 10, 6, 40));
  EXPECT_EQ(h3.count, 14u);  // the same arrivals again: nothing new
}

// A loaded daemon's passes come late and each communicator's newest 256 cover different spans:
// the guess may move to another communicator and back. Time observed on one is not observed
// again on the other.
TEST(StepTrackerTest, AGuessThatMovesBetweenCommunicatorsCountsNoStepTwice) {
  StepTracker t;
  const RankKey key{5, 0};
  EXPECT_EQ(t.Update(key, Steps(7, 0, 10, 6, 40)).count, 9u);
  const StepHistogram& moved = t.Update(key, Steps(8, 0, 15, 4, 40));
  EXPECT_EQ(moved.guess.comm_id, 8u);
  EXPECT_EQ(moved.count, 14u);  // steps 10..14 only
  const StepHistogram& back = t.Update(key, Steps(7, 0, 20, 6, 40));
  EXPECT_EQ(back.guess.comm_id, 7u);
  EXPECT_EQ(back.count, 19u);  // steps 15..19 only
  EXPECT_NEAR(back.sum_s, 19 * 0.040, 1e-9);
}

TEST(StepTrackerTest, NoGuessNoObservationAndForgottenRanksStartOver) {
  StepTracker t;
  const RankKey key{2, -1};
  EXPECT_EQ(t.Update(key, Steps(7, 0, 2, 4, 40)).count, 0u);  // too few steps to guess
  EXPECT_FALSE(t.Update(key, {}).guess.found());
  EXPECT_EQ(t.Update(key, Steps(7, 0, 5, 4, 40)).count, 4u);
  t.Retain({});
  EXPECT_EQ(t.Update(key, Steps(7, 0, 5, 4, 40)).count, 4u);  // a new rank: from scratch
}

// Past a communicator's first 1,024 collectives the budget times a block of 16 in every 64: with
// 20 collectives a step, the live ring's newest 256 hold no two collectives one step apart, and
// the guess alone reads 60 (three steps). The step known from the fully timed start is kept, and
// the marks that are timed count the steps between them, each their mean.
TEST(StepTrackerTest, TheBudgetsSampledCollectivesKeepTheKnownStep) {
  auto ring = [](int first_step, int steps, bool sampled) {
    std::vector<analysis::Arrival> v;
    for (const analysis::Arrival& a : Steps(7, first_step, steps, 20, 40)) {
      if (!sampled || a.seq % 64 < 16) v.push_back(a);
    }
    if (v.size() > 256) v.erase(v.begin(), v.end() - 256);
    return v;
  };
  StepTracker alone;
  EXPECT_EQ(alone.Update({4, 0}, ring(100, 100, true)).guess.per_step, 60u);  // the pitfall
  StepTracker t;
  const RankKey key{3, 0};
  const StepHistogram& start = t.Update(key, ring(0, 12, false));  // 240 collectives, all timed
  ASSERT_EQ(start.guess.per_step, 20u);
  ASSERT_EQ(start.count, 11u);
  const StepHistogram& later = t.Update(key, ring(12, 100, true));
  EXPECT_EQ(later.guess.per_step, 20u);
  // The ring's 256 timed collectives span 1,024 seqs, about 51 steps: the steps between its
  // first and last timed marks are counted (those before it were gone when the pass came).
  EXPECT_GE(later.count, 11u + 45u);
  EXPECT_LE(later.count, 11u + 52u);
  EXPECT_NEAR(later.sum_s / later.count, 0.040, 1e-9);
  EXPECT_EQ(later.counts[5], later.count);  // every one 40 ms: the (25, 50] ms bucket
}

TEST(StepHistogramTest, BucketsByUpperBound) {
  StepHistogram h;
  h.Observe(0.001);  // on a bound: that bucket
  h.Observe(0.0011);
  h.Observe(1000);   // +Inf
  EXPECT_EQ(h.counts[0], 1u);
  EXPECT_EQ(h.counts[1], 1u);
  EXPECT_EQ(h.counts[kStepBucketsS.size()], 1u);
  EXPECT_EQ(h.count, 3u);
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
