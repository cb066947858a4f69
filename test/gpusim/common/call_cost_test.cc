// XTIMER_SIM_CALL_COSTS: h200 spends at least the table's time per call (a lower bound: a busy
// wait never ends early, so this holds on a loaded machine), h200-serialized one call at a time;
// a malformed value stops the process.
#include "test/gpusim/common/call_cost.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "gtest/gtest.h"
#include "test/gpusim/common/sim_env.h"

namespace xtsim {
namespace {

// Runs first: the variable is read once per process.
TEST(CallCostTest, AMalformedValueStopsTheProcessNamingTheVariable) {
  const pid_t pid = fork();
  if (pid == 0) {
    setenv("XTIMER_SIM_CALL_COSTS", "a100", 1);  // first test: not read yet in this process
    ChargeCall(CallCost::kLaunch);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
}

TEST(CallCostTest, H200ChargesAtLeastTheTable) {
  setenv("XTIMER_SIM_CALL_COSTS", "h200", 1);
  const int64_t start = NowNs();
  for (int i = 0; i < 100; ++i) ChargeCall(CallCost::kLaunch);
  for (int i = 0; i < 100; ++i) ChargeCall(CallCost::kEventRecordTimed);
  EXPECT_GE(NowNs() - start, 100 * (2500 + 1932));
}

// h200-serialized: two threads' calls never overlap, so together they take at least the sum of
// their charges (a lower bound again: on two idle cores plain h200 would take about half).
TEST(CallCostTest, H200SerializedRunsOneCallAtATime) {
  const pid_t pid = fork();
  if (pid == 0) {
    setenv("XTIMER_SIM_CALL_COSTS", "h200-serialized", 1);  // a fresh process reads it anew
    const int64_t start = NowNs();
    auto charge = [] {
      for (int i = 0; i < 200; ++i) ChargeCall(CallCost::kLaunch);
    };
    std::thread a(charge), b(charge);
    a.join();
    b.join();
    _exit(NowNs() - start >= 400 * 2500 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace xtsim
