#include "daemon/model/op_stats.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "opmath/nccl_tests_reference.h"
#include "opmath/op_math.h"

namespace xtimer {
namespace daemon {
namespace {

using format::DType;
using format::Operation;

format::OpRecord Op(Operation op, DType dtype) {
  format::OpRecord r;
  memset(&r, 0, sizeof(r));
  r.version = format::kRecordVersion;
  r.type = static_cast<uint8_t>(format::RecordType::kOp);
  r.op = static_cast<uint16_t>(op);
  r.kind = format::KindOfOperation(r.op);
  r.dtype = static_cast<uint8_t>(dtype);
  r.batch = 1;
  return r;
}

// Records as the hook writes them (bytes: the send buffer, opmath::SendBytes) for every
// collective, dtype and communicator size: the daemon's numbers are nccl-tests'.
TEST(OpStatsTest, EveryCollectiveAndDtypeAgreesWithNcclTests) {
  constexpr uint64_t kCount = 4099;
  for (const auto& c : opmath::testing::NcclTestsCases()) {
    for (const auto& d : opmath::testing::DTypeCases()) {
      for (int n : {1, 2, 8, 1000}) {
        SCOPED_TRACE(std::string(c.name) + " " + format::DTypeName(d.dtype) + " n=" +
                     std::to_string(n));
        format::OpRecord r = Op(c.op, d.dtype);
        r.count = kCount;
        r.comm_size = n;
        r.bytes = opmath::SendBytes(r.op, kCount, opmath::ElementSize(d.dtype), n);
        EXPECT_DOUBLE_EQ(AlgoBytesOf(r), opmath::testing::ReferenceAlgoBytes(c, kCount, d.size, n));
        EXPECT_DOUBLE_EQ(BusBytesOf(r), opmath::testing::ReferenceBusBytes(c, kCount, d.size, n));
      }
    }
  }
  EXPECT_DOUBLE_EQ(AlgoBytesOf(Op(Operation::kMemcpyHtoD, DType::kU8)), 0);
  EXPECT_DOUBLE_EQ(BusBytesOf(Op(Operation::kGemmEx, DType::kF32)), 0);
}

TEST(OpStatsTest, FlopIsTwoMnkBatch) {
  format::OpRecord mm = Op(Operation::kGemmStridedBatchedEx, DType::kBF16);
  mm.m = 128;
  mm.n = 256;
  mm.k = 64;
  mm.batch = 3;
  EXPECT_DOUBLE_EQ(FlopOf(mm), 2.0 * 128 * 256 * 64 * 3);
  mm.batch = 0;
  EXPECT_DOUBLE_EQ(FlopOf(mm), 2.0 * 128 * 256 * 64);
  // Hostile dimensions do not overflow.
  mm.m = mm.n = mm.k = INT64_MAX;
  EXPECT_GT(FlopOf(mm), 1e56);
  EXPECT_DOUBLE_EQ(FlopOf(Op(Operation::kAllReduce, DType::kF32)), 0);
}

TEST(OpStatsTest, SizeClasses) {
  format::OpRecord ar = Op(Operation::kAllReduce, DType::kF32);
  const struct {
    uint64_t bytes;
    const char* name;
  } cases[] = {{0, "lt64KiB"},
               {65535, "lt64KiB"},
               {65536, "64KiB_1MiB"},
               {(1 << 20) - 1, "64KiB_1MiB"},
               {1 << 20, "1MiB_16MiB"},
               {16 << 20, "16MiB_256MiB"},
               {uint64_t{256} << 20, "ge256MiB"},
               {~uint64_t{0}, "ge256MiB"}};
  for (const auto& c : cases) {
    ar.bytes = c.bytes;
    EXPECT_STREQ(SizeClassName(ar.kind, SizeClassOf(ar)), c.name) << c.bytes;
  }
  format::OpRecord mm = Op(Operation::kGemmEx, DType::kBF16);
  mm.m = mm.n = mm.k = 512;  // 0.27 GFLOP
  EXPECT_STREQ(SizeClassName(mm.kind, SizeClassOf(mm)), "lt1GFLOP");
  mm.m = mm.n = mm.k = 4096;  // 137 GFLOP
  EXPECT_STREQ(SizeClassName(mm.kind, SizeClassOf(mm)), "16GFLOP_256GFLOP");
  mm.m = mm.n = mm.k = 16384;  // 8.8 TFLOP
  EXPECT_STREQ(SizeClassName(mm.kind, SizeClassOf(mm)), "ge4TFLOP");
  format::OpRecord k = Op(Operation::kKernelLaunch, DType::kUnknown);
  EXPECT_EQ(SizeClassOf(k), kSizeClassAll);
  EXPECT_STREQ(SizeClassName(k.kind, SizeClassOf(k)), "all");
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
