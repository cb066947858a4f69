#include "util/label.h"

#include <string>

#include "gtest/gtest.h"

namespace xtimer {
namespace {

TEST(LabelTest, JobIdsKeepOnlyPathAndLabelSafeBytes) {
  EXPECT_EQ(SanitizeJobId("a-Z_0.9"), "a-Z_0.9");
  EXPECT_EQ(SanitizeJobId("run 1/../x"), "run_1_.._x");
  EXPECT_EQ(SanitizeJobId("caf\xc3\xa9\n\"{}"), "caf______");
  EXPECT_EQ(SanitizeJobId(std::string("a\0b", 3)), "a_b");
  EXPECT_EQ(SanitizeJobId("train@u1000"), "train_u1000") << "a scope is the daemon's to add";
  EXPECT_EQ(SanitizeJobId(""), "");
  EXPECT_EQ(SanitizeJobId("."), "");
  EXPECT_EQ(SanitizeJobId(".."), "");
  EXPECT_EQ(SanitizeJobId("..."), "...");
  const std::string longest(kMaxJobIdLength, 'j');
  EXPECT_EQ(SanitizeJobId(longest + "tail"), longest);
}

TEST(LabelTest, TextKeepsPrintableAscii) {
  EXPECT_EQ(SanitizeLabelText("node-1.example.com"), "node-1.example.com");
  EXPECT_EQ(SanitizeLabelText("void k<float, 4>(float*)"), "void k<float, 4>(float*)");
  EXPECT_EQ(SanitizeLabelText("a\nb\x7f" "c\xc3\xa9"), "a_b_c__");
  EXPECT_EQ(SanitizeLabelText(std::string("a\0b", 3)), "a_b");
  EXPECT_EQ(SanitizeLabelText(""), "");
}

TEST(LabelTest, EachRuleIsStable) {
  for (const std::string raw : {"a b/c", "x\x01y", "..", "k<T>(int)", "caf\xc3\xa9"}) {
    EXPECT_EQ(SanitizeJobId(SanitizeJobId(raw)), SanitizeJobId(raw)) << raw;
    EXPECT_EQ(SanitizeLabelText(SanitizeLabelText(raw)), SanitizeLabelText(raw)) << raw;
  }
}

}  // namespace
}  // namespace xtimer
