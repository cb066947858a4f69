#include "test/gpusim/cublas/gemm_model.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

namespace xtsim {
namespace blas {
namespace {

Rates DefaultRates() {
  for (const char* v :
       {"XTIMER_SIM_TFLOPS_FP64", "XTIMER_SIM_TFLOPS_FP32", "XTIMER_SIM_TFLOPS_TF32",
        "XTIMER_SIM_TFLOPS_FP16", "XTIMER_SIM_TFLOPS_BF16", "XTIMER_SIM_TFLOPS_FP8",
        "XTIMER_SIM_TFLOPS_INT8", "NVIDIA_TF32_OVERRIDE"}) {
    unsetenv(v);
  }
  return Rates::FromEnv();
}

TEST(RatesTest, DefaultsAndOverrides) {
  Rates r = DefaultRates();
  EXPECT_EQ(r.For(Dtype::kFp64), 60);
  EXPECT_EQ(r.For(Dtype::kFp32), 60);
  EXPECT_EQ(r.For(Dtype::kTf32), 400);
  EXPECT_EQ(r.For(Dtype::kFp16), 800);
  EXPECT_EQ(r.For(Dtype::kBf16), 800);
  EXPECT_EQ(r.For(Dtype::kFp8), 1600);
  EXPECT_EQ(r.For(Dtype::kInt8), 1600);
  EXPECT_FALSE(r.tf32_disabled);

  setenv("XTIMER_SIM_TFLOPS_BF16", "123.5", 1);
  setenv("NVIDIA_TF32_OVERRIDE", "0", 1);
  Rates o = Rates::FromEnv();
  EXPECT_EQ(o.For(Dtype::kBf16), 123.5);
  EXPECT_TRUE(o.tf32_disabled);
  DefaultRates();
}

TEST(RatesDeathTest, RejectsNonPositiveRate) {
  setenv("XTIMER_SIM_TFLOPS_FP8", "0", 1);
  EXPECT_EXIT(Rates::FromEnv(), ::testing::ExitedWithCode(2), "XTIMER_SIM_TFLOPS_FP8");
  setenv("XTIMER_SIM_TFLOPS_FP8", "fast", 1);
  EXPECT_EXIT(Rates::FromEnv(), ::testing::ExitedWithCode(2), "XTIMER_SIM_TFLOPS_FP8");
  unsetenv("XTIMER_SIM_TFLOPS_FP8");
}

struct TypeCase {
  Api api;
  GemmTypes types;
  cublasStatus_t status;
  Dtype dtype;  // when supported
  int flop_factor;
};

class ClassifyTest : public ::testing::TestWithParam<TypeCase> {};

TEST_P(ClassifyTest, MatchesDocumentedTables) {
  const TypeCase& c = GetParam();
  GemmKind kind{Dtype::kFp64, 0};
  EXPECT_EQ(ClassifyTypes(c.api, c.types, DefaultRates(), &kind), c.status);
  if (c.status == CUBLAS_STATUS_SUCCESS) {
    EXPECT_EQ(kind.dtype, c.dtype) << DtypeName(kind.dtype);
    EXPECT_EQ(kind.flop_factor, c.flop_factor);
  }
}

constexpr auto kOk = CUBLAS_STATUS_SUCCESS;
constexpr auto kNo = CUBLAS_STATUS_NOT_SUPPORTED;
constexpr auto kBad = CUBLAS_STATUS_INVALID_VALUE;

// cublasGemmEx: no scale type, one type for C and D.
TypeCase Ex(cublasComputeType_t compute, cudaDataType_t a, cudaDataType_t b, cudaDataType_t c,
            cublasStatus_t status, Dtype dtype = Dtype::kFp64, int flop_factor = 1) {
  return {Api::kGemmEx, {compute, CUDA_R_32F, a, b, c, c}, status, dtype, flop_factor};
}

TypeCase Lt(cublasComputeType_t compute, cudaDataType_t scale, cudaDataType_t a, cudaDataType_t b,
            cudaDataType_t c, cudaDataType_t d, cublasStatus_t status, Dtype dtype = Dtype::kFp64) {
  return {Api::kLt, {compute, scale, a, b, c, d}, status, dtype, 1};
}

constexpr auto c16F = CUBLAS_COMPUTE_16F;
constexpr auto c32F = CUBLAS_COMPUTE_32F;
constexpr auto c32I = CUBLAS_COMPUTE_32I;
constexpr auto c64F = CUBLAS_COMPUTE_64F;
constexpr auto cTF32 = CUBLAS_COMPUTE_32F_FAST_TF32;
constexpr auto cBF16 = CUBLAS_COMPUTE_32F_FAST_16BF;
constexpr auto F16 = CUDA_R_16F;
constexpr auto BF16 = CUDA_R_16BF;
constexpr auto F32 = CUDA_R_32F;
constexpr auto F64 = CUDA_R_64F;
constexpr auto I8 = CUDA_R_8I;
constexpr auto I32 = CUDA_R_32I;
constexpr auto E4M3 = CUDA_R_8F_E4M3;
constexpr auto E5M2 = CUDA_R_8F_E5M2;
constexpr auto C32F = CUDA_C_32F;
const auto kLegacyCompute = static_cast<cublasComputeType_t>(CUDA_R_32F);  // a cudaDataType
const auto kNoSuchType = static_cast<cudaDataType_t>(99);

// clang-format off
INSTANTIATE_TEST_SUITE_P(
    Tables, ClassifyTest,
    ::testing::Values(
        Ex(c32F,  BF16, BF16, BF16, kOk, Dtype::kBf16),
        Ex(c32F,  F16,  F16,  F32,  kOk, Dtype::kFp16),
        Ex(c16F,  F16,  F16,  F16,  kOk, Dtype::kFp16),
        Ex(c32F,  F32,  F32,  F32,  kOk, Dtype::kFp32),
        Ex(cTF32, F32,  F32,  F32,  kOk, Dtype::kTf32),
        Ex(cBF16, F32,  F32,  F32,  kOk, Dtype::kBf16),
        Ex(c32I,  I8,   I8,   I32,  kOk, Dtype::kInt8),
        Ex(c32F,  I8,   I8,   F32,  kOk, Dtype::kInt8),
        Ex(c64F,  F64,  F64,  F64,  kOk, Dtype::kFp64),
        Ex(c32F,  C32F, C32F, C32F, kOk, Dtype::kFp32, 4),
        // Valid enums, unsupported combinations.
        Ex(c16F,  BF16, BF16, BF16, kNo),
        Ex(cTF32, F16,  F16,  F16,  kNo),
        Ex(c32F,  F16,  BF16, F32,  kNo),
        Ex(c32F,  E4M3, E4M3, BF16, kNo),  // FP8 exists in cuBLASLt only
        Ex(c32I,  I8,   I8,   I8,   kNo),  // so does INT8 output
        // Values outside their enums.
        Ex(kLegacyCompute, F32, F32, F32, kBad),
        Ex(c32F, kNoSuchType, F32, F32, kBad),
        // cuBLASLt: the scale type and D matter; FP8 and INT8 output exist.
        Lt(c32F, F32, BF16, BF16, BF16, BF16, kOk, Dtype::kBf16),
        Lt(c32F, F16, BF16, BF16, BF16, BF16, kNo),
        Lt(c32F, F32, E4M3, E4M3, BF16, BF16, kOk, Dtype::kFp8),
        Lt(c32F, F32, E4M3, E5M2, F16,  E5M2, kOk, Dtype::kFp8),
        Lt(c32F, F32, E5M2, E4M3, F16,  E4M3, kOk, Dtype::kFp8),
        Lt(c32F, F32, E4M3, E4M3, F32,  F32,  kOk, Dtype::kFp8),
        Lt(c32F, F32, E5M2, E5M2, BF16, BF16, kNo),
        Lt(c32F, F32, E4M3, E4M3, F32,  E4M3, kNo),
        Lt(c32F, F32, E4M3, E4M3, BF16, F16,  kNo),
        Lt(c32I, F32, I8,   I8,   I8,   I8,   kOk, Dtype::kInt8),
        Lt(c32I, I32, I8,   I8,   I32,  I32,  kOk, Dtype::kInt8),
        Lt(c32F, F32, BF16, BF16, BF16, static_cast<cudaDataType_t>(-3), kBad)));
// clang-format on

TEST(ClassifyTest, Tf32OverrideFallsBackToFp32) {
  setenv("NVIDIA_TF32_OVERRIDE", "0", 1);
  Rates rates = Rates::FromEnv();
  unsetenv("NVIDIA_TF32_OVERRIDE");
  GemmKind kind;
  ASSERT_EQ(ClassifyTypes(Api::kGemmEx,
                          {CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
                           CUDA_R_32F, CUDA_R_32F},
                          rates, &kind),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(kind.dtype, Dtype::kFp32);
}

TEST(MathModeTest, ChangesOnlyPlainFp32Compute) {
  EXPECT_EQ(ApplyMathMode(CUBLAS_COMPUTE_32F, CUBLAS_TF32_TENSOR_OP_MATH),
            CUBLAS_COMPUTE_32F_FAST_TF32);
  EXPECT_EQ(
      ApplyMathMode(CUBLAS_COMPUTE_32F,
                    static_cast<cublasMath_t>(CUBLAS_TF32_TENSOR_OP_MATH |
                                              CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)),
      CUBLAS_COMPUTE_32F_FAST_TF32);
  EXPECT_EQ(ApplyMathMode(CUBLAS_COMPUTE_32F, CUBLAS_TENSOR_OP_MATH), CUBLAS_COMPUTE_32F_FAST_16F);
  EXPECT_EQ(ApplyMathMode(CUBLAS_COMPUTE_32F, CUBLAS_DEFAULT_MATH), CUBLAS_COMPUTE_32F);
  EXPECT_EQ(ApplyMathMode(CUBLAS_COMPUTE_32F, CUBLAS_PEDANTIC_MATH), CUBLAS_COMPUTE_32F);
  EXPECT_EQ(ApplyMathMode(CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_TF32_TENSOR_OP_MATH),
            CUBLAS_COMPUTE_32F_PEDANTIC);
  EXPECT_EQ(ApplyMathMode(CUBLAS_COMPUTE_64F, CUBLAS_TF32_TENSOR_OP_MATH), CUBLAS_COMPUTE_64F);
}

TEST(DurationTest, TwoMnkOverRate) {
  Rates rates = DefaultRates();
  GemmKind bf16{Dtype::kBf16, 1};
  // 2·4096·4096·4096 flop at 800 TFLOPS = 171798.69 ns.
  EXPECT_EQ(GemmDurationNs({CUBLAS_OP_T, CUBLAS_OP_N, 4096, 4096, 4096, 1}, bf16, rates), 171799);
  EXPECT_EQ(GemmDurationNs({CUBLAS_OP_T, CUBLAS_OP_N, 4096, 4096, 4096, 3}, bf16, rates), 515396);
  GemmKind complex{Dtype::kFp32, 4};
  // 2·1000·1000·1000·4 flop at 60 TFLOPS = 133333.3 ns.
  EXPECT_EQ(GemmDurationNs({CUBLAS_OP_N, CUBLAS_OP_N, 1000, 1000, 1000, 1}, complex, rates),
            133333);
  EXPECT_EQ(GemmDurationNs({CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, 1}, bf16, rates), 1);
  EXPECT_EQ(GemmDurationNs({CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 0, 1}, bf16, rates), 0);
  EXPECT_EQ(GemmDurationNs({CUBLAS_OP_N, CUBLAS_OP_N, 0, 64, 64, 1}, bf16, rates), 0);
}

TEST(NameTest, KernelLikeNames) {
  char name[64];
  GemmOpName("gpusim_gemm", {CUBLAS_OP_T, CUBLAS_OP_N, 1, 1, 1, 1}, {Dtype::kBf16, 1}, name,
             sizeof(name));
  EXPECT_STREQ(name, "gpusim_gemm_bf16_tn");
  GemmOpName("gpusim_ltmatmul", {CUBLAS_OP_N, CUBLAS_OP_C, 1, 1, 0, 1}, {Dtype::kFp8, 1}, name,
             sizeof(name));
  EXPECT_STREQ(name, "gpusim_ltmatmul_fp8_nc_k0");
}

}  // namespace
}  // namespace blas
}  // namespace xtsim
