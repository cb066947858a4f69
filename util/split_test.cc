// util/split.h: parts trimmed, empty ones dropped, any separator.
#include "util/split.h"

#include "gtest/gtest.h"

namespace xtimer {
namespace {

using V = std::vector<std::string>;

TEST(SplitListTest, TrimsAndDropsEmptyParts) {
  EXPECT_EQ(SplitList("a, b,,c", ','), (V{"a", "b", "c"}));
  EXPECT_EQ(SplitList(" host1:18888 \thost2 ", ' '), (V{"host1:18888", "host2"}));
  EXPECT_EQ(SplitList("", ','), V{});
  EXPECT_EQ(SplitList(",,", ','), V{});
  EXPECT_EQ(SplitList("-j,--jobs", ','), (V{"-j", "--jobs"}));
  EXPECT_EQ(SplitList("solo", ','), V{"solo"});
}

}  // namespace
}  // namespace xtimer
