#include "daemon/op_stats.h"

#include <gtest/gtest.h>

#include <cstring>

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

TEST(OpStatsTest, BusFactorsFollowNcclTests) {
  EXPECT_DOUBLE_EQ(BusFactor(static_cast<uint16_t>(Operation::kAllReduce), 8), 2.0 * 7 / 8);
  for (Operation op : {Operation::kAllGather, Operation::kReduceScatter, Operation::kAlltoAll,
                       Operation::kGather, Operation::kScatter}) {
    EXPECT_DOUBLE_EQ(BusFactor(static_cast<uint16_t>(op), 4), 3.0 / 4) << static_cast<int>(op);
  }
  for (Operation op : {Operation::kBroadcast, Operation::kReduce, Operation::kSend,
                       Operation::kRecv}) {
    EXPECT_DOUBLE_EQ(BusFactor(static_cast<uint16_t>(op), 4), 1.0) << static_cast<int>(op);
  }
  EXPECT_DOUBLE_EQ(BusFactor(static_cast<uint16_t>(Operation::kAllReduce), 1), 0);
  EXPECT_DOUBLE_EQ(BusFactor(static_cast<uint16_t>(Operation::kAllReduce), 0), 0);
  EXPECT_DOUBLE_EQ(BusFactor(static_cast<uint16_t>(Operation::kGemmEx), 8), 0);
}

TEST(OpStatsTest, AlgoBytesUseTheFullBufferWhereNcclTestsDo) {
  format::OpRecord ar = Op(Operation::kAllReduce, DType::kBF16);
  ar.count = 1000;
  ar.comm_size = 8;
  ar.bytes = 2000;
  EXPECT_DOUBLE_EQ(AlgoBytesOf(ar), 2000);
  EXPECT_DOUBLE_EQ(BusBytesOf(ar), 2000 * 2.0 * 7 / 8);

  format::OpRecord ag = Op(Operation::kAllGather, DType::kF32);
  ag.count = 1000;  // per rank
  ag.comm_size = 4;
  ag.bytes = 4000;  // the send buffer
  EXPECT_DOUBLE_EQ(AlgoBytesOf(ag), 4 * 4000);
  EXPECT_DOUBLE_EQ(BusBytesOf(ag), 4 * 4000 * 3.0 / 4);

  format::OpRecord rs = Op(Operation::kReduceScatter, DType::kF16);
  rs.count = 10;
  rs.comm_size = 2;
  EXPECT_DOUBLE_EQ(AlgoBytesOf(rs), 10 * 2 * 2);

  // Unknown dtype: fall back to the recorded bytes.
  format::OpRecord unk = Op(Operation::kAlltoAll, DType::kUnknown);
  unk.count = 99;
  unk.bytes = 300;
  unk.comm_size = 3;
  EXPECT_DOUBLE_EQ(AlgoBytesOf(unk), 900);

  format::OpRecord send = Op(Operation::kSend, DType::kU8);
  send.count = 64;
  send.comm_size = 2;
  EXPECT_DOUBLE_EQ(BusBytesOf(send), 64);

  EXPECT_DOUBLE_EQ(AlgoBytesOf(Op(Operation::kMemcpyHtoD, DType::kU8)), 0);
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

TEST(OpStatsTest, DTypeSizes) {
  EXPECT_EQ(DTypeSize(static_cast<uint8_t>(DType::kBF16)), 2);
  EXPECT_EQ(DTypeSize(static_cast<uint8_t>(DType::kF64)), 8);
  EXPECT_EQ(DTypeSize(static_cast<uint8_t>(DType::kF8E4M3)), 1);
  EXPECT_EQ(DTypeSize(static_cast<uint8_t>(DType::kTF32)), 4);
  EXPECT_EQ(DTypeSize(0), 0);
  EXPECT_EQ(DTypeSize(200), 0);
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
