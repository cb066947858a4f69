#include "format/record.h"

#include <string>

#include "gtest/gtest.h"

namespace xtimer {
namespace format {
namespace {

TEST(RecordNames, OperationNamesRoundTrip) {
  int named = 0;
  for (int v = 1; v < 256; ++v) {
    const Operation op = static_cast<Operation>(v);
    if (KindOfOperation(static_cast<uint16_t>(v)) == 0) continue;
    ++named;
    EXPECT_EQ(OperationFromName(OperationName(op)), op) << OperationName(op);
  }
  EXPECT_GT(named, 20);
  EXPECT_EQ(OperationFromName("allreduce"), Operation::kUnknown);  // case-sensitive
  EXPECT_EQ(OperationFromName(""), Operation::kUnknown);
}

TEST(RecordNames, DTypeNamesRoundTrip) {
  for (uint8_t d = 1; d <= kDTypeMax; ++d) {
    EXPECT_EQ(DTypeFromName(DTypeName(static_cast<DType>(d))), static_cast<DType>(d));
  }
  EXPECT_EQ(DTypeFromName("unknown"), DType::kUnknown);
  EXPECT_EQ(DTypeFromName("float32"), DType::kUnknown);
}

TEST(NamePartTest, SplitsANameIntoChunksTheLastMarked) {
  const std::string name(kNameChunk + 5, 'k');
  ASSERT_EQ(NamePartCount(name.size()), 2u);
  EXPECT_EQ(NamePartCount(0), 1u);
  EXPECT_EQ(NamePartCount(kNameChunk), 1u);
  const RecordSlot first = NamePart(9, name, 0), last = NamePart(9, name, 1);
  EXPECT_EQ(Validate(first), nullptr);
  EXPECT_EQ(first.name.length, kNameChunk);
  EXPECT_EQ(first.name.flags, 0);
  EXPECT_EQ(last.name.part, 1);
  EXPECT_EQ(last.name.length, 5);
  EXPECT_EQ(last.name.flags, kNameLast);
  EXPECT_EQ(last.name.name_id, 9u);
  EXPECT_EQ(NamePart(3, "", 0).name.flags, kNameLast);  // an empty name is one empty last part
}

}  // namespace
}  // namespace format
}  // namespace xtimer
