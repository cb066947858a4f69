#include "stacktrace/json_reader.h"

#include <string>

#include "gtest/gtest.h"

namespace xtimer {
namespace stacktrace {
namespace {

TEST(JsonReaderTest, ParsesValues) {
  JsonValue v;
  std::string error;
  ASSERT_TRUE(ParseJson(R"( {"a": [1, -2.5, true, null, "x\"\u00e9\ud83d\ude00"], "b": {}} )", &v,
                        &error))
      << error;
  ASSERT_EQ(v.type, JsonValue::kObject);
  const JsonValue* a = v.Find("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->items.size(), 5u);
  EXPECT_TRUE(a->items[0].is_integer);
  EXPECT_EQ(a->items[0].integer, 1);
  EXPECT_FALSE(a->items[1].is_integer);
  EXPECT_DOUBLE_EQ(a->items[1].number, -2.5);
  EXPECT_TRUE(a->items[2].boolean);
  EXPECT_EQ(a->items[3].type, JsonValue::kNull);
  EXPECT_EQ(a->items[4].str, "x\"\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(v.Find("b")->type, JsonValue::kObject);
  EXPECT_EQ(v.Find("c"), nullptr);
}

TEST(JsonReaderTest, KeepsLargeIntegersExact) {
  JsonValue v;
  std::string error;
  ASSERT_TRUE(ParseJson("1764000000000000001", &v, &error));
  EXPECT_EQ(v.integer, 1764000000000000001LL);
  ASSERT_TRUE(ParseJson("99999999999999999999", &v, &error));
  EXPECT_FALSE(v.is_integer);  // beyond int64_t
}

TEST(JsonReaderTest, ErrorsNameTheOffset) {
  JsonValue v;
  std::string error;
  EXPECT_FALSE(ParseJson(R"({"a": [1, 2)", &v, &error));
  EXPECT_NE(error.find("truncated"), std::string::npos) << error;
  EXPECT_FALSE(ParseJson(R"({"a" 1})", &v, &error));
  EXPECT_NE(error.find("byte 5: expected ':'"), std::string::npos) << error;
  EXPECT_FALSE(ParseJson("[1] x", &v, &error));
  EXPECT_NE(error.find("end of input"), std::string::npos) << error;
  EXPECT_FALSE(ParseJson("\"a\nb\"", &v, &error));
  EXPECT_FALSE(ParseJson("-", &v, &error));
  EXPECT_FALSE(ParseJson("\"\\u12\"", &v, &error));
  EXPECT_FALSE(ParseJson("", &v, &error));
}

TEST(JsonReaderTest, LimitsNesting) {
  JsonValue v;
  std::string error;
  EXPECT_TRUE(ParseJson(std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']'), &v,
                        &error))
      << error;
  EXPECT_FALSE(ParseJson(std::string(100000, '['), &v, &error));  // no stack overflow
  EXPECT_NE(error.find("nesting"), std::string::npos) << error;
}

}  // namespace
}  // namespace stacktrace
}  // namespace xtimer
