#include "test/gpusim/common/sim_env.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <thread>

namespace xtsim {
namespace {

TEST(SimEnvTest, ParsesRankSpecLists) {
  setenv("XTIMER_TEST_SPECS", "3:100,5:2.5:7", 1);
  std::vector<RankSpec> specs = ParseRankSpecs("XTIMER_TEST_SPECS", 1, 2);
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].rank, 3);
  EXPECT_EQ(specs[0].a, 100);
  EXPECT_TRUE(std::isnan(specs[0].b));
  EXPECT_EQ(specs[1].rank, 5);
  EXPECT_EQ(specs[1].a, 2.5);
  EXPECT_EQ(specs[1].b, 7);
  EXPECT_EQ(FindRankSpec(specs, 5), &specs[1]);
  EXPECT_EQ(FindRankSpec(specs, 4), nullptr);
  unsetenv("XTIMER_TEST_SPECS");
  EXPECT_TRUE(ParseRankSpecs("XTIMER_TEST_SPECS", 1, 2).empty());
}

TEST(SimEnvTest, NumbersWithDefaults) {
  unsetenv("XTIMER_TEST_NUM");
  EXPECT_EQ(EnvDouble("XTIMER_TEST_NUM", 1.5), 1.5);
  setenv("XTIMER_TEST_NUM", "42", 1);
  EXPECT_EQ(EnvDouble("XTIMER_TEST_NUM", 1.5), 42);
  EXPECT_EQ(EnvInt("XTIMER_TEST_NUM", 0), 42);
}

// XTIMER_SIM_DEVICE_NICE is the niceness of the thread that takes it, not of the process (a
// child process each: the value is read once).
TEST(SimEnvDeathTest, DevicePriorityIsTheCallingThreadsNiceness) {
  EXPECT_EXIT(
      {
        setenv("XTIMER_SIM_DEVICE_NICE", "7", 1);
        int device = -100;
        std::thread([&device] {
          TakeDevicePriority();
          device = getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)));
        }).join();
        exit(device == 7 && getpriority(PRIO_PROCESS, 0) != 7 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(
      {
        setenv("XTIMER_SIM_DEVICE_NICE", "40", 1);
        TakeDevicePriority();
      },
      ::testing::ExitedWithCode(2), "XTIMER_SIM_DEVICE_NICE=40: not a niceness");
}

// Malformed knobs stop the process with a message naming the variable.
TEST(SimEnvDeathTest, MalformedValuesAreFatal) {
  setenv("XTIMER_TEST_BAD", "3:x", 1);
  EXPECT_EXIT(ParseRankSpecs("XTIMER_TEST_BAD", 1, 1), ::testing::ExitedWithCode(2),
              "XTIMER_TEST_BAD: 'x' in entry '3:x' is not a number");
  setenv("XTIMER_TEST_BAD", "3", 1);
  EXPECT_EXIT(ParseRankSpecs("XTIMER_TEST_BAD", 1, 1), ::testing::ExitedWithCode(2),
              "must be RANK followed by 1 to 1");
  setenv("XTIMER_TEST_BAD", "-1:2", 1);
  EXPECT_EXIT(ParseRankSpecs("XTIMER_TEST_BAD", 1, 1), ::testing::ExitedWithCode(2),
              "is not a rank");
  setenv("XTIMER_TEST_BAD", "1e400", 1);
  EXPECT_EXIT(EnvDouble("XTIMER_TEST_BAD", 0), ::testing::ExitedWithCode(2),
              "XTIMER_TEST_BAD=1e400 is not a number");
  setenv("XTIMER_TEST_BAD", "12abc", 1);
  EXPECT_EXIT(EnvInt("XTIMER_TEST_BAD", 0), ::testing::ExitedWithCode(2), "is not an integer");
}

}  // namespace
}  // namespace xtsim
