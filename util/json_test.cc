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
  EXPECT_EQ(JsonQuote("\x7f\xff"), "\"\\u007f\\u00ff\"");
}

}  // namespace
}  // namespace xtimer
