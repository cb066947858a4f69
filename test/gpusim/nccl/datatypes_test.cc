#include "test/gpusim/nccl/datatypes.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace xtsim {
namespace nccl {
namespace {

template <typename T>
std::vector<T> Reduce(ncclDataType_t type, ncclRedOp_t op, std::vector<std::vector<T>> inputs) {
  std::vector<const void*> srcs;
  for (const auto& in : inputs) srcs.push_back(in.data());
  std::vector<T> out(inputs[0].size());
  KernelsFor(type)->reduce(out.data(), srcs.data(), static_cast<int>(srcs.size()), out.size(), op);
  return out;
}

TEST(DatatypesTest, SizesAndNames) {
  EXPECT_EQ(KernelsFor(ncclInt8)->size, 1u);
  EXPECT_EQ(KernelsFor(ncclFloat16)->size, 2u);
  EXPECT_EQ(KernelsFor(ncclBfloat16)->size, 2u);
  EXPECT_EQ(KernelsFor(ncclFloat8e5m2)->size, 1u);
  EXPECT_EQ(KernelsFor(ncclUint64)->size, 8u);
  EXPECT_STREQ(KernelsFor(ncclFloat32)->name, "float32");
  EXPECT_EQ(KernelsFor(ncclNumTypes), nullptr);
  EXPECT_EQ(KernelsFor(static_cast<ncclDataType_t>(-1)), nullptr);
  EXPECT_TRUE(KernelsFor(ncclBfloat16)->is_float);
  EXPECT_FALSE(KernelsFor(ncclUint32)->is_float);
}

TEST(DatatypesTest, IntegerOperators) {
  EXPECT_EQ(Reduce<int32_t>(ncclInt32, ncclSum, {{1, -5}, {2, 7}, {3, 1}}),
            (std::vector<int32_t>{6, 3}));
  EXPECT_EQ(Reduce<int32_t>(ncclInt32, ncclProd, {{2, -5}, {3, 7}}),
            (std::vector<int32_t>{6, -35}));
  EXPECT_EQ(Reduce<int32_t>(ncclInt32, ncclMax, {{2, -5}, {3, -7}}), (std::vector<int32_t>{3, -5}));
  EXPECT_EQ(Reduce<uint8_t>(ncclUint8, ncclMin, {{2, 200}, {3, 100}}),
            (std::vector<uint8_t>{2, 100}));
}

TEST(DatatypesTest, IntegerOverflowWraps) {
  EXPECT_EQ(Reduce<int8_t>(ncclInt8, ncclSum, {{127}, {1}}), (std::vector<int8_t>{-128}));
  int64_t big = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(Reduce<int64_t>(ncclInt64, ncclSum, {{big}, {1}}),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::min()}));
  EXPECT_EQ(Reduce<uint32_t>(ncclUint32, ncclProd, {{0x10000u}, {0x10000u}}),
            (std::vector<uint32_t>{0u}));
}

TEST(DatatypesTest, HalfRoundsAfterEveryStep) {
  // 2048 + 1 is not representable in half: each step rounds back to 2048 (ties to even).
  std::vector<__half> a = {__float2half(2048)}, b = {__float2half(1)}, c = {__float2half(1)};
  std::vector<__half> out = Reduce<__half>(ncclFloat16, ncclSum, {a, b, c});
  EXPECT_EQ(__half2float(out[0]), 2048.0f);
}

TEST(DatatypesTest, LowPrecisionFloats) {
  std::vector<__nv_bfloat16> x = {__float2bfloat16(1.5f)}, y = {__float2bfloat16(2.0f)};
  EXPECT_EQ(__bfloat162float(Reduce<__nv_bfloat16>(ncclBfloat16, ncclProd, {x, y})[0]), 3.0f);
  // e4m3 saturates at 448; e5m2 overflows to infinity.
  std::vector<uint8_t> e4 = {__nv_cvt_float_to_fp8(400, __NV_SATFINITE, __NV_E4M3)};
  uint8_t e4_sum = Reduce<uint8_t>(ncclFloat8e4m3, ncclSum, {e4, e4})[0];
  EXPECT_EQ(__half2float(__half(__nv_cvt_fp8_to_halfraw(e4_sum, __NV_E4M3))), 448.0f);
  std::vector<uint8_t> e5 = {__nv_cvt_float_to_fp8(40000, __NV_SATFINITE, __NV_E5M2)};
  uint8_t e5_sum = Reduce<uint8_t>(ncclFloat8e5m2, ncclSum, {e5, e5})[0];
  EXPECT_TRUE(std::isinf(__half2float(__half(__nv_cvt_fp8_to_halfraw(e5_sum, __NV_E5M2)))));
}

TEST(DatatypesTest, ScaleDivideReciprocal) {
  const TypeKernels& f = *KernelsFor(ncclFloat32);
  float in[3] = {1, 2, 3}, out[3], scalar = 0.5f;
  f.scale(out, in, 3, &scalar);
  EXPECT_EQ(out[2], 1.5f);
  float r;
  f.reciprocal(&r, 4);
  EXPECT_EQ(r, 0.25f);
  const TypeKernels& i = *KernelsFor(ncclInt32);
  int32_t v[2] = {7, -7};
  i.divide(v, 2, 2);
  EXPECT_EQ(v[0], 3);
  EXPECT_EQ(v[1], -3);
  uint8_t u[1] = {250};
  KernelsFor(ncclUint8)->divide(u, 1, 300);  // nranks larger than the type
  EXPECT_EQ(u[0], 0);
}

TEST(DatatypesTest, RedOpNames) {
  EXPECT_STREQ(RedOpName(ncclAvg), "ncclAvg");
  EXPECT_STREQ(RedOpName(static_cast<ncclRedOp_t>(ncclNumOps + 3)), "PreMulSum");
}

}  // namespace
}  // namespace nccl
}  // namespace xtsim
