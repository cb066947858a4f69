#include "proto/wire_enums.h"

#include <string>

#include "format/record.h"
#include "gtest/gtest.h"

namespace xtimer {
namespace proto {
namespace {

// Every op the format defines has the same number and name on the wire, and the wire defines
// no other: the JSON answer spells ops as the dumps and the metrics' `op` label do.
TEST(WireEnumsTest, OpCodesAreTheFormatsOperations) {
  int defined = 0;
  for (int v = 0; v < 65536; ++v) {
    const auto op = static_cast<format::Operation>(v);
    const std::string name = format::OperationName(op);
    const bool in_format = v == 0 || name != format::OperationName(format::Operation::kUnknown);
    ASSERT_EQ(OpCode::Value_IsValid(v), in_format) << v << " " << name;
    if (!in_format) continue;
    ++defined;
    EXPECT_EQ(OpCode::Value_Name(static_cast<OpCode::Value>(v)), name);
    EXPECT_EQ(OpCodeOf(static_cast<uint16_t>(v)), v);
    EXPECT_EQ(OperationOf(static_cast<OpCode::Value>(v)), v);
  }
  EXPECT_EQ(defined, OpCode::Value_descriptor()->value_count());
  EXPECT_EQ(OpCodeOf(1000), OpCode::Unknown);
  EXPECT_EQ(OperationOf(static_cast<OpCode::Value>(1000)), 0);
}

TEST(WireEnumsTest, DTypeCodesAreTheFormatsDTypes) {
  for (int v = 0; v < 256; ++v) {
    const bool in_format = v <= format::kDTypeMax;
    ASSERT_EQ(DTypeCode::Value_IsValid(v), in_format) << v;
    if (!in_format) {
      EXPECT_EQ(DTypeCodeOf(static_cast<uint8_t>(v)), DTypeCode::unknown);
      continue;
    }
    EXPECT_EQ(DTypeCode::Value_Name(static_cast<DTypeCode::Value>(v)),
              format::DTypeName(static_cast<format::DType>(v)));
    EXPECT_EQ(DTypeCodeOf(static_cast<uint8_t>(v)), v);
    EXPECT_EQ(DTypeOf(static_cast<DTypeCode::Value>(v)), v);
  }
  EXPECT_EQ(DTypeOf(static_cast<DTypeCode::Value>(99)), 0);
}

TEST(WireEnumsTest, ExitCauses) {
  // The wire's value names are format's spelling: each one parses.
  for (format::ExitKind kind : format::kExitKinds) {
    ExitCauseCode::Value code;
    EXPECT_TRUE(ExitCauseCode::Value_Parse(format::ExitKindName(kind), &code))
        << format::ExitKindName(kind);
    EXPECT_EQ(ExitKindOf(code), kind) << format::ExitKindName(kind);  // and back
  }
  EXPECT_EQ(ExitKindOf(ExitCauseCode::EXIT_CAUSE_UNSPECIFIED), std::nullopt);
  EXPECT_EQ(ExitKindOf(static_cast<ExitCauseCode::Value>(99)), std::nullopt);
  EXPECT_EQ(ExitCauseCodeOf(format::ExitKind::kExited), ExitCauseCode::exit);
  EXPECT_EQ(ExitCauseCodeOf(format::ExitKind::kSignal), ExitCauseCode::signal);
  EXPECT_EQ(ExitCauseCodeOf(format::ExitKind::kNone), ExitCauseCode::connection_lost);
}

}  // namespace
}  // namespace proto
}  // namespace xtimer
