#include "hook/budget.h"

#include <memory>

#include "gtest/gtest.h"
#include "hook/budget_decide.h"
#include "hook/config.h"
#include "hook/recorder.h"
#include "hook/state.h"
#include "hook/testing/fake_cuda.h"

namespace xtimer {
namespace hook {
namespace budget {
namespace {

constexpr int64_t kMs = 1000000;

TEST(NextPeriodTest, FullBudgetTimesEveryOp) {
  EXPECT_EQ(NextPeriod(1000, 1000, 1000 * 4300, 0, 50 * kMs, kFullBudgetPpm), 1u);
}

TEST(NextPeriodTest, SpendsAtMostTheBudget) {
  // 5,000 ops in 50 ms, each timed one costing 4.3 us: 1% of 50 ms buys 116 timed ops, so
  // 1 in 43 -> 1 in 64 (a power of two, rounded up: never over the budget).
  EXPECT_EQ(NextPeriod(5000, 5000, 5000 * 4300, 0, 50 * kMs, 10000), 64u);
  // The same window measured while timing 1 in 64 (78 timed ops) decides the same.
  EXPECT_EQ(NextPeriod(5000, 78, 78 * 4300, 0, 50 * kMs, 10000), 64u);
  // Cheap enough: every op.
  EXPECT_EQ(NextPeriod(100, 100, 100 * 4300, 0, 50 * kMs, 10000), 1u);
}

TEST(NextPeriodTest, OpsThatMustBeTimedComeOutOfTheBudgetFirst) {
  // 0.4 ms of the 0.5 ms allowed already went to collectives: 23 timed ops remain.
  EXPECT_EQ(NextPeriod(5000, 78, 78 * 4300, 400000, 50 * kMs, 10000), 256u);
  EXPECT_EQ(NextPeriod(5000, 78, 78 * 4300, 600000, 50 * kMs, 10000), kMaxPeriod);
}

TEST(NextPeriodTest, NothingLearnedKeepsTiming) {
  EXPECT_EQ(NextPeriod(5000, 0, 0, 0, 50 * kMs, 10000), 0u);
}

class DecideTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::InstallFakeCuda();
    hook_ = std::make_unique<testing::HookState>();
    hook_->state()->config.budget_ppm = 10000;  // the default 1%
  }
  OpDesc Gemm(int m) {
    OpDesc d;
    d.kind = format::OpKind::kMatmul;
    d.op = format::Operation::kGemmEx;
    d.m = m;
    return d;
  }
  // Decides on `n` calls of `d`; returns how many were timed.
  int TimedOf(const OpDesc& d, int n) {
    int timed = 0;
    for (int i = 0; i < n; ++i) timed += Decide(d);
    return timed;
  }
  std::unique_ptr<testing::HookState> hook_;
};

TEST_F(DecideTest, CountsEveryOpAndTimesAllBeforeTheFirstWindowEnds) {
  EXPECT_EQ(TimedOf(Gemm(8), 100), 100);
  EXPECT_EQ(hook_->state()->op_calls[static_cast<int>(format::OpKind::kMatmul)].load(), 100u);
  EXPECT_EQ(hook_->untimed(format::UntimedCause::kBudget), 0u);
}

TEST_F(DecideTest, AnExpensiveWindowLowersTheRateAndEverySignatureStaysVisible) {
  // One window in which each of 1,000 timed ops cost 100 us: far over 1% of 50 ms.
  int64_t now = MonotonicNs();
  for (int i = 0; i < 1000; ++i) {
    Decide(Gemm(1));
    AddOwnTime(100000, true, now);
  }
  AddOwnTime(0, true, now + kWindowNs);  // the window ends: a period is chosen
  AddOwnTime(0, true, now + 2 * kWindowNs);  // a window with nothing timed keeps the period
  const int timed = TimedOf(Gemm(1), 4096);
  EXPECT_LT(timed, 64);
  EXPECT_GE(timed, 1);
  EXPECT_EQ(hook_->untimed(format::UntimedCause::kBudget), static_cast<uint64_t>(4096 - timed));
  // A signature not seen before in this epoch is timed once, then sampled like the rest.
  EXPECT_TRUE(Decide(Gemm(77)));
  hook_->state()->budget_epoch.fetch_add(1);
  EXPECT_TRUE(Decide(Gemm(1))) << "a new epoch: every signature is timed again";
}

// Ops timed after a thread's first window, in which 100 ops were timed at 4 us each (0.8% of its
// 50 ms, under the 1% budget) and `fixed_ns` went to NVTX or Python tracing callbacks
// (AddFixedOwnTime): the period the window chose, applied to 4,096 ops.
int TimedAfterAWindowWith(uint64_t fixed_ns, OpDesc d) {
  const int64_t now = MonotonicNs();
  AddOwnTime(0, true, now);  // the thread's first window starts
  for (int i = 0; i < 100; ++i) {
    Decide(d);
    AddOwnTime(4000, true, now);
  }
  AddFixedOwnTime(fixed_ns);
  AddOwnTime(0, true, now + kWindowNs);  // the window ends: a period is chosen
  int timed = 0;
  for (int i = 0; i < 4096; ++i) timed += Decide(d);
  return timed;
}

TEST_F(DecideTest, NvtxAndPythonTimeComesOutOfTheBudgetAndIsTheHooksOwnTime) {
  EXPECT_EQ(TimedAfterAWindowWith(0, Gemm(5)), 4096) << "under the budget: every op";
  EXPECT_EQ(hook_->state()->own_ns.load(), 0u) << "AddOwnTime alone is OwnTimer's half";
  ResetThreadForTesting();
  // 0.4 ms of NVTX callbacks in the same window: timing every op no longer fits in 1% of 50 ms
  // (0.1 ms left: 25 timed ops of 100, so 1 in 8).
  const int timed = TimedAfterAWindowWith(400000, Gemm(6));
  EXPECT_EQ(timed, 4096 / 8);
  EXPECT_EQ(hook_->state()->own_ns.load(), 400000u);
}

TEST_F(DecideTest, AThreadWithoutOpsOnlyAddsUpItsFixedTime) {
  for (int i = 0; i < 1000; ++i) AddFixedOwnTime(150);
  ChargeSince(RealtimeNs() - 1000000);  // a callback that began 1 ms ago
  EXPECT_GE(hook_->state()->own_ns.load(), 150000u + 1000000u);
  EXPECT_EQ(t_budget.period, 0u) << "no window: nothing to decide";
  EXPECT_EQ(t_budget.window_start_ns, 0);
  EXPECT_EQ(TimedOf(Gemm(7), 100), 100) << "its first ops are timed as any thread's";
}

// A thread publishes its own time to State::own_ns in batches of kOwnFlushNs, so that threads do
// not contend on one cache line for every NVTX callback: what it holds stays below the batch.
TEST_F(DecideTest, OwnTimeIsPublishedInBatches) {
  ResetThreadForTesting();
  State* s = hook_->state();
  const uint64_t before = s->own_ns.load();
  AddFixedOwnTime(kOwnFlushNs / 2);
  EXPECT_EQ(s->own_ns.load(), before) << "held by the thread";
  AddFixedOwnTime(kOwnFlushNs / 2);
  EXPECT_EQ(s->own_ns.load(), before + kOwnFlushNs) << "the batch is full: published";
  for (int i = 0; i < 1000; ++i) AddFixedOwnTime(150);
  const uint64_t published = s->own_ns.load() - before;
  EXPECT_LE(published, kOwnFlushNs + 150000);
  EXPECT_GT(published + kOwnFlushNs, kOwnFlushNs + 150000) << "less than a batch held back";
  EXPECT_EQ(t_budget.other_ns, kOwnFlushNs + 150000) << "the budget sees it all at once";
}

TEST_F(DecideTest, SampleRateStillAppliesAndIsNotCountedAsBudget) {
  hook_->state()->config.sample_rate = 4;
  EXPECT_EQ(TimedOf(Gemm(3), 12), 3);
  EXPECT_EQ(hook_->untimed(format::UntimedCause::kBudget), 0u);
}

}  // namespace
}  // namespace budget
}  // namespace hook
}  // namespace xtimer
