#include "opmath/op_math.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "opmath/nccl_tests_reference.h"

namespace xtimer {
namespace opmath {
namespace {

using format::DType;
using format::Operation;
using testing::DTypeCases;
using testing::NcclTestsCases;

constexpr int kRankCounts[] = {1, 2, 3, 8, 1024};
constexpr uint64_t kCount = 1000003;  // odd and prime: divisions must be exact

TEST(OpMathTest, EveryCollectiveAndDtypeAgreesWithNcclTests) {
  for (const auto& c : NcclTestsCases()) {
    const auto op = static_cast<uint16_t>(c.op);
    EXPECT_TRUE(IsCommunication(op)) << c.name;
    for (const auto& d : DTypeCases()) {
      for (int n : kRankCounts) {
        SCOPED_TRACE(std::string(c.name) + " " + format::DTypeName(d.dtype) + " n=" +
                     std::to_string(n));
        const uint64_t send = SendBytes(op, kCount, ElementSize(d.dtype), n);
        EXPECT_EQ(send, testing::ReferenceSendBytes(c, kCount, d.size, n));
        EXPECT_DOUBLE_EQ(AlgoBytes(op, send, n),
                         testing::ReferenceAlgoBytes(c, kCount, d.size, n));
        EXPECT_DOUBLE_EQ(BusFactor(op, n), c.factor(n));
        EXPECT_DOUBLE_EQ(BusBytes(op, send, n), testing::ReferenceBusBytes(c, kCount, d.size, n));
        const CommBytes both = CommBytesOf(op, send, n);
        EXPECT_DOUBLE_EQ(both.algo, testing::ReferenceAlgoBytes(c, kCount, d.size, n));
        EXPECT_DOUBLE_EQ(both.bus, testing::ReferenceBusBytes(c, kCount, d.size, n));
      }
    }
  }
}

TEST(OpMathTest, ElementSizes) {
  for (const auto& d : DTypeCases()) EXPECT_EQ(ElementSize(d.dtype), d.size);
  EXPECT_EQ(ElementSize(DType::kUnknown), 0);
  EXPECT_EQ(ElementSize(static_cast<DType>(format::kDTypeMax + 1)), 0);
  EXPECT_EQ(ElementSize(static_cast<DType>(255)), 0);
}

TEST(OpMathTest, NotCommunication) {
  for (Operation op : {Operation::kUnknown, Operation::kGemmEx, Operation::kMemcpyHtoD,
                       Operation::kKernelLaunch, Operation::kStreamSynchronize}) {
    const auto o = static_cast<uint16_t>(op);
    EXPECT_FALSE(IsCommunication(o));
    EXPECT_EQ(SendBytes(o, 100, 4, 8), 0u);
    EXPECT_EQ(AlgoBytes(o, 100, 8), 0);
    EXPECT_EQ(BusFactor(o, 8), 0);
    EXPECT_EQ(BusBytes(o, 100, 8), 0);
  }
  EXPECT_FALSE(IsCommunication(0xffff));
}

TEST(OpMathTest, UnknownRankCountIsOneRank) {
  const auto rs = static_cast<uint16_t>(Operation::kReduceScatter);
  for (int n : {0, -5}) {
    EXPECT_EQ(SendBytes(rs, 10, 2, n), 20u);
    EXPECT_EQ(AlgoBytes(rs, 20, n), 20);
    EXPECT_EQ(BusFactor(rs, n), 0);
    EXPECT_EQ(BusFactor(static_cast<uint16_t>(Operation::kBroadcast), n), 1);
  }
}

TEST(OpMathTest, HostileValuesSaturateOrStayFinite) {
  const auto a2a = static_cast<uint16_t>(Operation::kAlltoAll);
  EXPECT_EQ(SendBytes(a2a, UINT64_MAX / 2, 8, 1024), UINT64_MAX);
  EXPECT_EQ(SendBytes(a2a, 100, 0, 8), 0u);
  EXPECT_GT(BusBytes(a2a, UINT64_MAX, 1 << 30), 1e18);
  EXPECT_DOUBLE_EQ(MatmulFlop(128, 256, 64, 3), 2.0 * 128 * 256 * 64 * 3);
  EXPECT_DOUBLE_EQ(MatmulFlop(128, 256, 64, 0), 2.0 * 128 * 256 * 64);
  EXPECT_DOUBLE_EQ(MatmulFlop(128, 256, 64, -7), 2.0 * 128 * 256 * 64);
  EXPECT_GT(MatmulFlop(INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX), 1e75);
}

}  // namespace
}  // namespace opmath
}  // namespace xtimer
