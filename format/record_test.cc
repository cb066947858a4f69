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

}  // namespace
}  // namespace format
}  // namespace xtimer
