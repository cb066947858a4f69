#include "util/process_name.h"

#include <gtest/gtest.h>

namespace xtimer {
namespace {

TEST(RanklessNameTest, PidAndDeviceWhenKnown) {
  EXPECT_EQ(RanklessName(4242, -1), "pid-4242");
  EXPECT_EQ(RanklessName(4242, 0), "pid-4242-dev0");
  EXPECT_EQ(RanklessName(7, 3), "pid-7-dev3");
}

TEST(RanklessNameTest, ProcessNamePutsTheHostFirst) {
  EXPECT_EQ(RanklessProcessName("node-a", 4242, -1), "node-a:pid-4242");
  EXPECT_EQ(RanklessProcessName("node-a", 4242, 1), "node-a:pid-4242-dev1");
  EXPECT_EQ(RanklessProcessName("", 9, -1), "pid-9");
}

}  // namespace
}  // namespace xtimer
