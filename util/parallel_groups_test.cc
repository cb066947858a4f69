#include "util/parallel_groups.h"

#include "gtest/gtest.h"

namespace xtimer {
namespace {

// The order of the text does not matter: tp2-pp2-dp2 and pp2-dp2-tp2 are Megatron's
// tp-cp-ep-dp-pp, rank = tp + 2 dp + 4 pp (the demo's layout, demo/train_step.cu).
TEST(ParallelGroups, RanksFollowMegatronsOrderWhateverTheTextsOrder) {
  for (const char* text : {"tp2-pp2-dp2", "pp2-dp2-tp2", "dp2-tp2-pp2-cp1"}) {
    ParallelGroups g;
    std::string error;
    ASSERT_TRUE(ParseParallelGroups(text, &g, &error)) << error;
    EXPECT_EQ(g.world(), 8);
    EXPECT_EQ(ParallelLabel(g, 2), "pp0 dp1 tp0") << text;
    EXPECT_EQ(ParallelLabel(g, 5), "pp1 dp0 tp1") << text;
    int c[kParallelDims];
    ParallelCoordinates(g, 6, c);
    EXPECT_EQ(c[0], 0);  // tp
    EXPECT_EQ(c[3], 1);  // dp
    EXPECT_EQ(c[4], 1);  // pp
  }
}

TEST(ParallelGroups, BadTextSaysWhichPart) {
  ParallelGroups g;
  g.tp = 7;
  std::string error;
  EXPECT_FALSE(ParseParallelGroups("tp2-xx4", &g, &error));
  EXPECT_NE(error.find("unknown group 'xx4'"), std::string::npos) << error;
  EXPECT_FALSE(ParseParallelGroups("tp2-tp4", &g, &error));
  EXPECT_NE(error.find("twice"), std::string::npos) << error;
  EXPECT_FALSE(ParseParallelGroups("tp0", &g, &error));
  EXPECT_NE(error.find("bad size '0'"), std::string::npos) << error;
  EXPECT_EQ(g.tp, 7);
}

}  // namespace
}  // namespace xtimer
