#include "util/xml_escape.h"

#include <gtest/gtest.h>

namespace xtimer {
namespace {

TEST(XmlEscapeTest, EscapesMarkupAndQuotes) {
  EXPECT_EQ(XmlEscape("<script>alert('x' & \"y\")</script>"),
            "&lt;script&gt;alert(&#39;x&#39; &amp; &quot;y&quot;)&lt;/script&gt;");
}

TEST(XmlEscapeTest, ControlBytesAndInvalidUtf8BecomeQuestionMarks) {
  EXPECT_EQ(XmlEscape(std::string("a\x01" "b\tc\n")), "a?b\tc\n");
  EXPECT_EQ(XmlEscape("caf\xc3\xa9"), "caf\xc3\xa9");  // valid UTF-8 kept
  EXPECT_EQ(XmlEscape("caf\xe9"), "caf?");             // Latin-1 byte: not UTF-8
  EXPECT_FALSE(ValidUtf8("\xc3"));
  EXPECT_TRUE(ValidUtf8(""));
}

}  // namespace
}  // namespace xtimer
