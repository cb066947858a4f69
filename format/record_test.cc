#include "format/record.h"

#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "format/record_kinds.h"

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

TEST(NamePartTest, NvtxStringsAreFramedAsNamesWithTheirOwnType) {
  const RecordSlot s = NamePart(4, "step", 0, RecordType::kNvtxString);
  EXPECT_EQ(s.header.type, static_cast<uint8_t>(RecordType::kNvtxString));
  EXPECT_EQ(s.name.name_id, 4u);
  EXPECT_EQ(s.name.flags, kNameLast);
  EXPECT_EQ(Validate(s), nullptr);
  EXPECT_STREQ(RecordKinds::Builtin().Find(s.header.type)->name, "nvtx_string");
  EXPECT_STREQ(Validate(NamePart(0, "x", 0, RecordType::kNvtxString)), "name id 0");
}

RecordSlot NvtxRange(int64_t start, int64_t end, int32_t depth) {
  RecordSlot s{};
  s.nvtx.version = kRecordVersion;
  s.nvtx.type = static_cast<uint8_t>(RecordType::kNvtx);
  s.nvtx.event = static_cast<uint8_t>(NvtxEvent::kRange);
  s.nvtx.start_ns = start;
  s.nvtx.end_ns = end;
  s.nvtx.depth = depth;
  return s;
}

TEST(ValidateNvtx, ChecksEventDurationAndDepth) {
  const int64_t day = int64_t{86400} * 1000000000;
  EXPECT_EQ(Validate(NvtxRange(100, 100, 0)), nullptr);
  EXPECT_EQ(Validate(NvtxRange(100, 100 + day, kMaxNvtxDepth - 1)), nullptr);
  EXPECT_STREQ(Validate(NvtxRange(100, 101 + day, 0)), "NVTX range duration out of range");
  EXPECT_STREQ(Validate(NvtxRange(100, 99, 0)), "NVTX range duration out of range");
  // Times far apart (found by //daemon/export:record_fuzzer: the difference overflowed int64),
  // and an end before its start whose unsigned difference wraps to 1 ns.
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_STREQ(Validate(NvtxRange(kMin + 1, kMax, 0)), "NVTX range duration out of range");
  EXPECT_STREQ(Validate(NvtxRange(-7089902092363209628, 7234017283807667300, 0)),
               "NVTX range duration out of range");
  EXPECT_STREQ(Validate(NvtxRange(kMax, kMin, 0)), "NVTX range duration out of range");
  // Times are held to [0, kMaxTimeNs) as an op's are: a day's range at the edge passes.
  EXPECT_EQ(Validate(NvtxRange(kMaxTimeNs - 1 - day, kMaxTimeNs - 1, 0)), nullptr);
  EXPECT_STREQ(Validate(NvtxRange(kMax - day, kMax, 0)), "NVTX time out of range");
  EXPECT_STREQ(Validate(NvtxRange(-5, 10, 0)), "NVTX time out of range");
  EXPECT_STREQ(Validate(NvtxRange(100, 200, kMaxNvtxDepth)), "NVTX depth out of range");
  EXPECT_STREQ(Validate(NvtxRange(100, 200, -1)), "NVTX depth out of range");
  RecordSlot s = NvtxRange(100, 200, 0);
  s.nvtx.event = kNvtxEventMax + 1;
  EXPECT_STREQ(Validate(s), "unknown NVTX event");
  s.nvtx.event = 0;
  EXPECT_STREQ(Validate(s), "unknown NVTX event");
  // A start carries no end, an end no start: neither is a duration.
  s.nvtx.event = static_cast<uint8_t>(NvtxEvent::kStart);
  s.nvtx.start_ns = 100;
  s.nvtx.end_ns = 0;
  EXPECT_EQ(Validate(s), nullptr);
  s.nvtx.start_ns = kMaxTimeNs;  // a start out of range, with no duration to check
  EXPECT_STREQ(Validate(s), "NVTX time out of range");
  EXPECT_STREQ(RecordKinds::Builtin().Find(s.header.type)->name, "nvtx");
}

RecordSlot ValidAllReduce() {
  RecordSlot s{};
  s.op.version = kRecordVersion;
  s.op.type = static_cast<uint8_t>(RecordType::kOp);
  s.op.kind = static_cast<uint8_t>(OpKind::kCollective);
  s.op.op = static_cast<uint16_t>(Operation::kAllReduce);
  s.op.dtype = static_cast<uint8_t>(DType::kBF16);
  s.op.comm_size = 8;
  s.op.duration_ns = 1000;
  return s;
}

// Validation checks each field with one unsigned comparison: pin both sides of every bound.
TEST(ValidateOp, AcceptsEachBoundAndRefusesOnePast) {
  struct Case {
    const char* what;
    std::function<void(OpRecord&)> set;
    bool valid;
  };
  const Case cases[] = {
      {"valid", [](OpRecord&) {}, true},
      {"unknown op", [](OpRecord& r) { r.op = kOperationSlots; }, false},
      {"unknown op 0xffff", [](OpRecord& r) { r.op = 0xffff; }, false},
      {"kind mismatch", [](OpRecord& r) { r.kind = static_cast<uint8_t>(OpKind::kP2P); }, false},
      {"dtype max", [](OpRecord& r) { r.dtype = kDTypeMax; }, true},
      {"dtype past max", [](OpRecord& r) { r.dtype = kDTypeMax + 1; }, false},
      {"duration 0", [](OpRecord& r) { r.duration_ns = 0; }, true},
      {"duration a day", [](OpRecord& r) { r.duration_ns = int64_t{86400} * 1000000000; }, true},
      {"duration past", [](OpRecord& r) { r.duration_ns = int64_t{86400} * 1000000000 + 1; }, false},
      {"duration -1", [](OpRecord& r) { r.duration_ns = -1; }, false},
      {"duration min", [](OpRecord& r) { r.duration_ns = INT64_MIN; }, false},
      {"m negative", [](OpRecord& r) { r.m = -1; }, false},
      {"batch min", [](OpRecord& r) { r.batch = INT64_MIN; }, false},
      {"comm size 0", [](OpRecord& r) { r.comm_size = 0; }, true},
      {"comm size max", [](OpRecord& r) { r.comm_size = kMaxCommSize; }, true},
      {"comm size past", [](OpRecord& r) { r.comm_size = kMaxCommSize + 1; }, false},
      {"comm size -1", [](OpRecord& r) { r.comm_size = -1; }, false},
      {"device max", [](OpRecord& r) { r.device = kMaxDevice; }, true},
      {"device past", [](OpRecord& r) { r.device = kMaxDevice + 1; }, false},
      {"device -1", [](OpRecord& r) { r.device = -1; }, false},
      {"device int max", [](OpRecord& r) { r.device = INT32_MAX; }, false},
      {"device int min", [](OpRecord& r) { r.device = INT32_MIN; }, false},
      // Times: [0, kMaxTimeNs), so the daemon's sums and differences of them cannot overflow
      // (a GPU start near INT64_MAX overflowed LiveOps' end under UBSan before).
      {"start 0", [](OpRecord& r) { r.gpu_start_ns = 0; }, true},
      {"start max", [](OpRecord& r) { r.gpu_start_ns = kMaxTimeNs - 1; }, true},
      {"start past", [](OpRecord& r) { r.gpu_start_ns = kMaxTimeNs; }, false},
      {"start -1", [](OpRecord& r) { r.gpu_start_ns = -1; }, false},
      {"start int max", [](OpRecord& r) { r.gpu_start_ns = INT64_MAX; }, false},
      {"launch max", [](OpRecord& r) { r.cpu_launch_ns = kMaxTimeNs - 1; }, true},
      {"launch past", [](OpRecord& r) { r.cpu_launch_ns = kMaxTimeNs; }, false},
      {"launch int min", [](OpRecord& r) { r.cpu_launch_ns = INT64_MIN; }, false},
  };
  for (const Case& c : cases) {
    RecordSlot s = ValidAllReduce();
    c.set(s.op);
    EXPECT_EQ(Validate(s) == nullptr, c.valid) << c.what;
  }
}

TEST(ValidateOp, OnlyAHostSyncMayHaveAnUnknownDevice) {
  RecordSlot s = ValidAllReduce();
  s.op.kind = static_cast<uint8_t>(OpKind::kHostSync);
  s.op.op = static_cast<uint16_t>(Operation::kDeviceSynchronize);
  s.op.comm_size = 0;
  for (int32_t device : {-1, 0, kMaxDevice}) {
    s.op.device = device;
    EXPECT_EQ(Validate(s), nullptr) << device;
  }
  for (int32_t device : {-2, kMaxDevice + 1, INT32_MAX, INT32_MIN}) {
    s.op.device = device;
    EXPECT_NE(Validate(s), nullptr) << device;
  }
}

}  // namespace
}  // namespace format
}  // namespace xtimer
