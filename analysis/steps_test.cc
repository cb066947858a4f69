#include "analysis/steps.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "format/record.h"

namespace xtimer {
namespace analysis {
namespace {

constexpr uint64_t kDp = 0xd0, kTp = 0x70;

// Appends collectives of `comm` to `out`: each step issues `offsets_us.size()` all-reduces at
// those offsets from the step's start, of sizes `bytes` (cycled), for `steps` steps of `step_us`
// with +-`jitter` relative noise on the step.
struct Job {
  std::vector<Arrival> arrivals;
  std::mt19937 rng{7};
  void Add(uint64_t comm, int steps, double step_us, const std::vector<double>& offsets_us,
           const std::vector<uint64_t>& bytes, double jitter, uint64_t first_seq = 0) {
    std::uniform_real_distribution<double> noise(-jitter, jitter);
    double t = 1e6;
    uint64_t seq = first_seq;
    for (int s = 0; s < steps; ++s) {
      for (size_t i = 0; i < offsets_us.size(); ++i) {
        Arrival a;
        a.comm_id = comm;
        a.seq = seq++;
        a.op = static_cast<uint16_t>(format::Operation::kAllReduce);
        a.bytes = bytes[i % bytes.size()];
        a.start_ns = static_cast<int64_t>((t + offsets_us[i]) * 1e3);
        a.end_ns = a.start_ns + 10000;
        arrivals.push_back(a);
      }
      t += step_us * (1 + noise(rng));
    }
  }
};

// Per-parameter all-reduces in backward: 20 per step, four sizes (each recurs five times a
// step), 5 us apart, then the optimizer step and the next forward: a 6.6 ms step. The rarest
// recurring signature's median gap is 20 us (what the report used to call the step).
TEST(GuessStepsTest, PerParameterAllReducesGiveTheStepNotTheGapBetweenThem) {
  std::vector<double> offsets;
  for (int i = 0; i < 20; ++i) offsets.push_back(4000 + 5 * i);
  Job job;
  job.Add(kDp, 40, 6600, offsets, {4096, 1 << 20, 4096, 1 << 22}, 0.03);
  StepGuess g = GuessSteps(job.arrivals);
  ASSERT_TRUE(g.found());
  EXPECT_EQ(g.per_step, 20u);
  EXPECT_EQ(g.comm_id, kDp);
  EXPECT_NEAR(g.median_s, 6.6e-3, 0.05 * 6.6e-3);
  EXPECT_LE(g.p10_s, g.median_s);
  EXPECT_GE(g.p90_s, g.median_s);
  EXPECT_GE(g.periods, 30u);
}

// Same-size all-reduces evenly spaced through backward: only the step repeats the times.
// Two equal all-reduces a step on one communicator, at unequal distances (123.6 ms, then 132.6
// ms: the demo's tp all-reduces): period 1 is consistent within the spread, but alternates;
// period 2 is the step (a short dump window of the demo read half-steps).
TEST(GuessStepsTest, TwoEqualCollectivesAtUnequalDistancesAreOneStep) {
  Job job;
  job.Add(kTp, 12, 256200, {0, 123600}, {1 << 20}, 0.001);
  StepGuess g = GuessSteps(job.arrivals);
  ASSERT_TRUE(g.found());
  EXPECT_EQ(g.per_step, 2u);
  EXPECT_NEAR(g.median_s, 0.2562, 0.002);
}

// The same in a short window: 5 calls, 3 intervals at period 2 (the demo's `xtimer dump
// --history 37` read 123.6/132.6 ms half-steps so).
TEST(GuessStepsTest, AShortWindowOfUnequalDistancesIsStillOneStep) {
  Job job;
  job.Add(kTp, 3, 256200, {0, 123600}, {1 << 20}, 0.001);
  job.arrivals.pop_back();  // 5 calls
  StepGuess g = GuessSteps(job.arrivals);
  ASSERT_TRUE(g.found());
  EXPECT_EQ(g.per_step, 2u);
  EXPECT_NEAR(g.median_s, 0.2562, 0.002);
}

// Shorter still: 4 calls, 2 intervals at period 2, too few to show the step; period 1 visibly
// alternates (123.6, 132.6, 123.6 ms), so no step rather than half of one.
TEST(GuessStepsTest, TooShortAWindowToShowTheStepGivesNoneRatherThanHalfOfOne) {
  Job job;
  job.Add(kTp, 2, 256200, {0, 123600}, {1 << 20}, 0.001);  // 4 calls
  ASSERT_EQ(job.arrivals.size(), 4u);
  EXPECT_FALSE(GuessSteps(job.arrivals).found());
}

// Jitter alone never doubles a step: one all-reduce a step, +-10% noise on each.
TEST(GuessStepsTest, JitterDoesNotDoubleTheStep) {
  Job job;
  job.Add(kDp, 200, 10000, {500}, {1 << 20}, 0.1);
  StepGuess g = GuessSteps(job.arrivals);
  ASSERT_TRUE(g.found());
  EXPECT_EQ(g.per_step, 1u);
  EXPECT_NEAR(g.median_s, 0.010, 0.001);
}

TEST(GuessStepsTest, EvenlySpacedEqualCollectivesWithinAStepAreNotSteps) {
  std::vector<double> offsets;
  for (int i = 0; i < 8; ++i) offsets.push_back(2000 + 300 * i);
  Job job;
  job.Add(kDp, 30, 10000, offsets, {1 << 20}, 0.02);
  StepGuess g = GuessSteps(job.arrivals);
  ASSERT_TRUE(g.found());
  EXPECT_EQ(g.per_step, 8u);
  EXPECT_NEAR(g.median_s, 10e-3, 0.05 * 10e-3);
}

// Megatron-like: TP all-reduces per micro-batch (4 micro-batches, 6 each), one DP all-reduce per
// optimizer step: the step is the DP period, the longest of the communicators'.
TEST(GuessStepsTest, TheLongestCommunicatorPeriodIsTheStep) {
  std::vector<double> tp;
  for (int mb = 0; mb < 4; ++mb) {
    for (int i = 0; i < 6; ++i) tp.push_back(mb * 2000 + 100 + 250 * i);
  }
  Job job;
  job.Add(kTp, 25, 9000, tp, {1 << 16}, 0.02);
  job.Add(kDp, 25, 9000, {8500}, {1 << 24}, 0.02);
  StepGuess g = GuessSteps(job.arrivals);
  ASSERT_TRUE(g.found());
  EXPECT_EQ(g.comm_id, kDp);
  EXPECT_EQ(g.per_step, 1u);
  EXPECT_NEAR(g.median_s, 9e-3, 0.05 * 9e-3);
}

// The budget times a sample of collectives (a block of 16 in 64 after the first 1,024): the
// step is still found from the seqs that were timed.
TEST(GuessStepsTest, SampledCollectivesStillGiveTheStep) {
  std::vector<double> offsets;
  for (int i = 0; i < 4; ++i) offsets.push_back(1000 + 40 * i);
  Job job;
  job.Add(kDp, 200, 5000, offsets, {256, 512}, 0.02, /*first_seq=*/1024);
  std::vector<Arrival> sampled;
  for (const Arrival& a : job.arrivals) {
    if (a.seq % 64 < 16) sampled.push_back(a);
  }
  StepGuess g = GuessSteps(sampled);
  ASSERT_TRUE(g.found());
  EXPECT_EQ(g.per_step, 4u);
  EXPECT_NEAR(g.median_s, 5e-3, 0.05 * 5e-3);
}

TEST(GuessStepsTest, NoStepWithoutARepeatingPattern) {
  EXPECT_FALSE(GuessSteps({}).found());
  Job few;
  few.Add(kDp, 3, 5000, {100}, {256}, 0);  // 2 intervals: fewer than kMinStepPeriods
  EXPECT_FALSE(GuessSteps(few.arrivals).found());
  // Collectives at random times of random sizes.
  Job random;
  std::mt19937 rng(3);
  std::uniform_int_distribution<int64_t> gap(1000, 2000000);
  std::uniform_int_distribution<uint64_t> size(1, 1000);
  int64_t t = 1000000;
  for (uint64_t seq = 0; seq < 300; ++seq) {
    Arrival a;
    a.comm_id = kDp;
    a.seq = seq;
    a.bytes = size(rng);
    t += gap(rng);
    a.start_ns = t;
    random.arrivals.push_back(a);
  }
  EXPECT_FALSE(GuessSteps(random.arrivals).found());
  // Collectives without a GPU start are left out.
  Job unstarted;
  unstarted.Add(kDp, 20, 5000, {100}, {256}, 0);
  for (Arrival& a : unstarted.arrivals) a.start_ns = 0;
  EXPECT_FALSE(GuessSteps(unstarted.arrivals).found());
}

// Marked steps (NVTX) win over the guess once there are kMinStepPeriods of them.
TEST(StepsOfTest, MarkedStepsWinOverTheGuess) {
  Job job;
  job.Add(kDp, 20, 5000, {100}, {256}, 0);
  // Marks at 0, 7.0, 14.1, 21.0 ms (and 14.1 again: one mark): steps of 7.0, 7.1, 6.9 ms.
  RankSteps s = StepsOf({21000000, 0, 7000000, 14100000, 14100000}, job.arrivals);
  EXPECT_TRUE(s.marked);
  EXPECT_EQ(s.count, 3u);
  EXPECT_DOUBLE_EQ(s.median_s, 0.007);
  s = StepsOf({0, 7000000, 14100000}, job.arrivals);  // two steps: too few, the guess
  EXPECT_FALSE(s.marked);
  EXPECT_EQ(s.guess.per_step, 1u);
  EXPECT_NEAR(s.median_s, 0.005, 1e-9);
  s = StepsOf({}, {});
  EXPECT_FALSE(s.marked);
  EXPECT_EQ(s.median_s, 0);
}

// A marked step runs from its mark's start to the next mark's start, in time order; a repeated
// start is one mark, and the last mark begins no step.
TEST(MarkedStepsTest, StartToNextStart) {
  const std::vector<MarkedStep> steps = MarkedSteps({300, 100, 160, 160});
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].begin_ns, 100);
  EXPECT_EQ(steps[0].end_ns, 160);
  EXPECT_EQ(steps[1].begin_ns, 160);
  EXPECT_EQ(steps[1].end_ns, 300);
  EXPECT_TRUE(MarkedSteps({42}).empty());
  EXPECT_TRUE(MarkedSteps({}).empty());
}

// Guessed steps run from a collective to the one a step later, on the guess's communicator,
// where both are there.
TEST(GuessedStepsTest, FromACollectiveToTheOneAStepLater) {
  Job job;
  job.Add(kDp, 10, 6000, {100, 200}, {256, 256}, 0);  // two all-reduces a step, 6 ms apart
  const StepGuess g = GuessSteps(job.arrivals);
  ASSERT_EQ(g.per_step, 2u);
  std::vector<Arrival> arrivals = job.arrivals;
  const uint64_t first = arrivals.front().seq;
  arrivals.erase(std::remove_if(arrivals.begin(), arrivals.end(),
                                [&](const Arrival& a) { return a.seq == first + 6; }),
                 arrivals.end());
  const std::vector<MarkedStep> steps = GuessedSteps(arrivals, g);
  ASSERT_EQ(steps.size(), 7u);  // 9 step pairs, less the two that lose their seq first + 6
  for (const MarkedStep& s : steps) EXPECT_NEAR(s.end_ns - s.begin_ns, 6000000, 1000);
  EXPECT_TRUE(GuessedSteps(arrivals, StepGuess()).empty());
}

}  // namespace
}  // namespace analysis
}  // namespace xtimer
