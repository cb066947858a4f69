#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "gtest/gtest.h"

namespace xtimer {
namespace analysis {
namespace {

TEST(Groups, ParsesAnyOrder) {
  Groups g;
  std::string error;
  ASSERT_TRUE(ParseGroups("tp2-pp2-dp2", &g, &error)) << error;
  EXPECT_EQ(g.tp, 2);
  EXPECT_EQ(g.dp, 2);
  EXPECT_EQ(g.pp, 2);
  EXPECT_EQ(g.cp, 1);
  EXPECT_EQ(g.ep, 1);
  EXPECT_EQ(g.world(), 8);
  ASSERT_TRUE(ParseGroups("dp128-tp8", &g, &error)) << error;
  EXPECT_EQ(g.world(), 1024);
  EXPECT_EQ(g.pp, 1);
}

TEST(Groups, RejectsBadTextWithAReason) {
  for (const char* bad : {"", "tp", "xx2", "tp0", "tp2-tp2", "tp2-", "tp2x", "-tp2", "tp-2",
                          "tp9999999", "tp4096-dp4096-pp4096"}) {
    Groups g;
    g.tp = 7;
    std::string error;
    EXPECT_FALSE(ParseGroups(bad, &g, &error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
    EXPECT_EQ(g.tp, 7) << "unchanged on error: " << bad;
  }
  Groups g;
  std::string error;
  ParseGroups("tp2-tp4", &g, &error);
  EXPECT_NE(error.find("twice"), std::string::npos) << error;
}

TEST(Groups, MegatronOrderTpInnermost) {
  Groups g;
  std::string error;
  ASSERT_TRUE(ParseGroups("pp2-dp2-tp2", &g, &error));
  // rank = tp + 2 * dp + 4 * pp
  EXPECT_EQ(GroupKindOf(g, {0, 1}), "tp");
  EXPECT_EQ(GroupKindOf(g, {6, 7}), "tp");
  EXPECT_EQ(GroupKindOf(g, {1, 3}), "dp");
  EXPECT_EQ(GroupKindOf(g, {4, 6}), "dp");
  EXPECT_EQ(GroupKindOf(g, {2, 6}), "pp");
  EXPECT_EQ(GroupKindOf(g, {0, 3}), "");
  EXPECT_EQ(GroupKindOf(g, {1, 2}), "");
  EXPECT_EQ(GroupKindOf(g, {0, 1, 2, 3}), "");
  EXPECT_EQ(GroupKindOf(g, {0}), "");
  EXPECT_EQ(GroupKindOf(g, {0, 8}), "");
  EXPECT_EQ(GroupKindOf(g, {0, -1}), "");
  EXPECT_EQ(GroupKindOf(g, {1, 1}), "");
  EXPECT_EQ(PipelineStage(g, 3), 0);
  EXPECT_EQ(PipelineStage(g, 5), 1);
  EXPECT_EQ(PipelineStage(g, -1), 0);
  ASSERT_TRUE(ParseGroups("tp2-cp2-ep2-dp2-pp2", &g, &error));
  EXPECT_EQ(GroupKindOf(g, {0, 2}), "cp");
  EXPECT_EQ(GroupKindOf(g, {0, 4}), "ep");
  EXPECT_EQ(GroupKindOf(g, {0, 8}), "dp");
  EXPECT_EQ(GroupKindOf(g, {0, 16}), "pp");
  EXPECT_EQ(PipelineStage(g, 17), 1);
}

}  // namespace
}  // namespace analysis
}  // namespace xtimer
