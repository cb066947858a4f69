#include "util/json.h"

#include "gtest/gtest.h"

namespace xtimer {
namespace {

TEST(JsonQuote, EscapesWhatJsonRequires) {
  EXPECT_EQ(JsonQuote(""), "\"\"");
  EXPECT_EQ(JsonQuote("plain text"), "\"plain text\"");
  EXPECT_EQ(JsonQuote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(JsonQuote("tab\tnl\n"), "\"tab\\u0009nl\\u000a\"");
  EXPECT_EQ(JsonQuote(std::string("nul\0x", 5)), "\"nul\\u0000x\"");
  EXPECT_EQ(JsonQuote("\x7f"), "\"\\u007f\"");
}

TEST(JsonQuote, WritesUtf8AsItsCodePoints) {
  EXPECT_EQ(JsonQuote("caf\xc3\xa9"), "\"caf\\u00e9\"");         // U+00E9, 2 bytes
  EXPECT_EQ(JsonQuote("\xe6\x97\xa5"), "\"\\u65e5\"");           // U+65E5, 3 bytes
  EXPECT_EQ(JsonQuote("\xf0\x9f\x98\x80"), "\"\\ud83d\\ude00\"");  // U+1F600: a surrogate pair
}

TEST(JsonQuote, ReplacesBytesThatAreNotUtf8) {
  EXPECT_EQ(JsonQuote("\xff"), "\"\\ufffd\"");
  EXPECT_EQ(JsonQuote("a\xc3"), "\"a\\ufffd\"");              // cut short
  EXPECT_EQ(JsonQuote("\xc0\xaf"), "\"\\ufffd\\ufffd\"");        // overlong '/'
  EXPECT_EQ(JsonQuote("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");  // a surrogate
  EXPECT_EQ(JsonQuote("\xf4\x90\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");  // > U+10FFFF
}

}  // namespace
}  // namespace xtimer
