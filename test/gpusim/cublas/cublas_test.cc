// Unit tests of the simulated cuBLAS against a recording fake of the runtime's private table.
#include <cublas_v2.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "test/gpusim/cublas/fake_runtime.h"
#include "test/gpusim/sim_api.h"

namespace {

using xtsim::testing::BusyOp;
using xtsim::testing::FakeRuntime;

class CublasTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : {"XTIMER_SIM_TFLOPS_FP32", "XTIMER_SIM_TFLOPS_TF32",
                          "XTIMER_SIM_TFLOPS_BF16", "NVIDIA_TF32_OVERRIDE"}) {
      unsetenv(v);
    }
    ASSERT_EQ(cublasCreate(&handle_), CUBLAS_STATUS_SUCCESS);
    stream_ = FakeRuntime::Get().NewStream();
    ASSERT_EQ(cublasSetStream(handle_, stream_), CUBLAS_STATUS_SUCCESS);
    FakeRuntime::Get().TakeOps();
  }
  void TearDown() override {
    if (handle_ != nullptr) {
      EXPECT_EQ(cublasDestroy(handle_), CUBLAS_STATUS_SUCCESS);
    }
    FakeRuntime::Get().DestroyStream(stream_);
  }

  cublasStatus_t Sgemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, int lda,
                       int ldb, int ldc) {
    return cublasSgemm(handle_, ta, tb, m, n, k, &one_, a_, lda, b_, ldb, &zero_, c_, ldc);
  }

  cublasHandle_t handle_ = nullptr;
  cudaStream_t stream_ = nullptr;
  const float one_ = 1, zero_ = 0;
  // Never dereferenced by the simulator.
  const float* a_ = reinterpret_cast<const float*>(0x10000);
  const float* b_ = reinterpret_cast<const float*>(0x20000);
  float* c_ = reinterpret_cast<float*>(0x30000);
};

TEST_F(CublasTest, VersionPropertiesAndStatusNames) {
  int version = 0;
  EXPECT_EQ(cublasGetVersion(handle_, &version), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(version, CUBLAS_VERSION);
  EXPECT_EQ(cublasGetVersion(nullptr, &version), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasGetVersion(handle_, nullptr), CUBLAS_STATUS_INVALID_VALUE);
  int major = 0, minor = -1, patch = -1;
  EXPECT_EQ(cublasGetProperty(MAJOR_VERSION, &major), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasGetProperty(MINOR_VERSION, &minor), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasGetProperty(PATCH_LEVEL, &patch), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(major * 10000 + minor * 100 + patch, CUBLAS_VERSION);
  EXPECT_EQ(cublasGetProperty(static_cast<libraryPropertyType>(7), &major),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasGetCudartVersion(), static_cast<size_t>(CUDART_VERSION));
  EXPECT_STREQ(cublasGetStatusName(CUBLAS_STATUS_NOT_SUPPORTED), "CUBLAS_STATUS_NOT_SUPPORTED");
  EXPECT_STREQ(cublasGetStatusName(static_cast<cublasStatus_t>(1234)), "CUBLAS_STATUS_UNKNOWN");
  EXPECT_STRNE(cublasGetStatusString(CUBLAS_STATUS_INVALID_VALUE), "");
}

TEST_F(CublasTest, HandleLifetime) {
  EXPECT_EQ(cublasCreate(nullptr), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasDestroy(nullptr), CUBLAS_STATUS_NOT_INITIALIZED);
  cublasHandle_t h = nullptr;
  ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasDestroy(h), CUBLAS_STATUS_SUCCESS);
  // Use after destroy is detected without touching the freed object.
  EXPECT_EQ(cublasDestroy(h), CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(cublasSetStream(h, stream_), CUBLAS_STATUS_NOT_INITIALIZED);
  float x = 0;
  EXPECT_EQ(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &x, &x, 4, &x, 4, &x, &x, 4),
            CUBLAS_STATUS_NOT_INITIALIZED);
  // A pointer that never was a handle.
  int junk[64] = {};
  EXPECT_EQ(cublasSetMathMode(reinterpret_cast<cublasHandle_t>(junk), CUBLAS_DEFAULT_MATH),
            CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_TRUE(FakeRuntime::Get().TakeOps().empty());
}

TEST_F(CublasTest, NoDeviceMeansNotInitialized) {
  FakeRuntime::Get().set_no_device(true);
  cublasHandle_t h = nullptr;
  EXPECT_EQ(cublasCreate(&h), CUBLAS_STATUS_NOT_INITIALIZED);
  FakeRuntime::Get().set_no_device(false);
}

TEST_F(CublasTest, Modes) {
  cudaStream_t s = nullptr;
  EXPECT_EQ(cublasGetStream(handle_, &s), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(s, stream_);
  EXPECT_EQ(cublasGetStream(handle_, nullptr), CUBLAS_STATUS_INVALID_VALUE);

  cublasPointerMode_t pm;
  EXPECT_EQ(cublasGetPointerMode(handle_, &pm), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(pm, CUBLAS_POINTER_MODE_HOST);
  EXPECT_EQ(cublasSetPointerMode(handle_, CUBLAS_POINTER_MODE_DEVICE), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasGetPointerMode(handle_, &pm), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(pm, CUBLAS_POINTER_MODE_DEVICE);
  EXPECT_EQ(cublasSetPointerMode(handle_, static_cast<cublasPointerMode_t>(2)),
            CUBLAS_STATUS_INVALID_VALUE);

  cublasMath_t mm;
  EXPECT_EQ(cublasGetMathMode(handle_, &mm), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(mm, CUBLAS_DEFAULT_MATH);
  auto flagged = static_cast<cublasMath_t>(CUBLAS_TF32_TENSOR_OP_MATH |
                                           CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
  EXPECT_EQ(cublasSetMathMode(handle_, flagged), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasGetMathMode(handle_, &mm), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(mm, flagged);
  EXPECT_EQ(cublasSetMathMode(handle_, static_cast<cublasMath_t>(5)), CUBLAS_STATUS_INVALID_VALUE);

  cublasAtomicsMode_t am;
  EXPECT_EQ(cublasSetAtomicsMode(handle_, CUBLAS_ATOMICS_ALLOWED), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasGetAtomicsMode(handle_, &am), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(am, CUBLAS_ATOMICS_ALLOWED);
  EXPECT_EQ(cublasSetAtomicsMode(handle_, static_cast<cublasAtomicsMode_t>(9)),
            CUBLAS_STATUS_INVALID_VALUE);

  alignas(256) static char workspace[1024];
  EXPECT_EQ(cublasSetWorkspace(handle_, workspace, sizeof(workspace)), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasSetWorkspace(handle_, workspace + 8, 512), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasSetWorkspace(handle_, nullptr, 0), CUBLAS_STATUS_SUCCESS);

  int sms = -1;
  EXPECT_EQ(cublasSetSmCountTarget(handle_, 100), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasGetSmCountTarget(handle_, &sms), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(sms, 100);
  EXPECT_EQ(cublasSetSmCountTarget(handle_, -1), CUBLAS_STATUS_INVALID_VALUE);
}

struct ArgCase {
  const char* what;
  int ta, tb;  // ints: some cases are not valid cublasOperation_t values
  int m, n, k, lda, ldb, ldc;
  cublasStatus_t status;
};

class SgemmArgsTest : public CublasTest, public ::testing::WithParamInterface<ArgCase> {};

TEST_P(SgemmArgsTest, ValidatesLikeTheRealLibrary) {
  const ArgCase& c = GetParam();
  EXPECT_EQ(Sgemm(static_cast<cublasOperation_t>(c.ta), static_cast<cublasOperation_t>(c.tb), c.m,
                  c.n, c.k, c.lda, c.ldb, c.ldc),
            c.status)
      << c.what;
  if (c.status != CUBLAS_STATUS_SUCCESS) {
    EXPECT_TRUE(FakeRuntime::Get().TakeOps().empty());
  }
}

constexpr auto N = CUBLAS_OP_N;
constexpr auto T = CUBLAS_OP_T;
constexpr auto C = CUBLAS_OP_C;
constexpr auto kOk = CUBLAS_STATUS_SUCCESS;
constexpr auto kBad = CUBLAS_STATUS_INVALID_VALUE;

INSTANTIATE_TEST_SUITE_P(
    Table, SgemmArgsTest,
    ::testing::Values(ArgCase{"nn", N, N, 64, 32, 16, 64, 16, 64, kOk},
                      ArgCase{"tn", T, N, 64, 32, 16, 16, 16, 64, kOk},
                      ArgCase{"nt", N, T, 64, 32, 16, 64, 32, 64, kOk},
                      ArgCase{"cc", C, C, 64, 32, 16, 16, 32, 64, kOk},
                      ArgCase{"m < 0", N, N, -1, 32, 16, 64, 16, 64, kBad},
                      ArgCase{"n < 0", N, N, 64, -1, 16, 64, 16, 64, kBad},
                      ArgCase{"k < 0", N, N, 64, 32, -1, 64, 16, 64, kBad},
                      ArgCase{"transa", CUBLAS_OP_CONJG, N, 64, 32, 16, 64, 16, 64, kBad},
                      ArgCase{"transb", N, 7, 64, 32, 16, 64, 16, 64, kBad},
                      ArgCase{"lda < m (N)", N, N, 64, 32, 16, 63, 16, 64, kBad},
                      ArgCase{"lda < k (T)", T, N, 64, 32, 16, 15, 16, 64, kBad},
                      ArgCase{"ldb < k (N)", N, N, 64, 32, 16, 64, 15, 64, kBad},
                      ArgCase{"ldb < n (T)", N, T, 64, 32, 16, 64, 31, 64, kBad},
                      ArgCase{"ldc < m", N, N, 64, 32, 16, 64, 16, 63, kBad},
                      ArgCase{"ld 0 with m 0", N, N, 0, 32, 16, 0, 16, 1, kBad},
                      ArgCase{"m == 0", N, N, 0, 32, 16, 1, 16, 1, kOk},
                      ArgCase{"n == 0", N, N, 64, 0, 16, 64, 16, 64, kOk},
                      ArgCase{"k == 0", N, N, 64, 32, 0, 64, 1, 64, kOk}));

TEST_F(CublasTest, ZeroSizesDoNoWorkAndKZeroIsAZeroLengthOp) {
  EXPECT_EQ(Sgemm(N, N, 0, 32, 16, 1, 16, 1), kOk);
  EXPECT_EQ(Sgemm(N, N, 64, 0, 16, 64, 16, 64), kOk);
  EXPECT_TRUE(FakeRuntime::Get().TakeOps().empty());
  EXPECT_EQ(Sgemm(N, N, 64, 32, 0, 64, 1, 64), kOk);
  std::vector<BusyOp> ops = FakeRuntime::Get().TakeOps();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].duration_ns, 0);
  EXPECT_EQ(ops[0].name, "gpusim_gemm_fp32_nn_k0");
  EXPECT_EQ(ops[0].stream, stream_);
}

TEST_F(CublasTest, GemmOccupiesItsStreamFor2MnkOverRate) {
  __half h = {};
  ASSERT_EQ(cublasHgemm(handle_, T, N, 1024, 2048, 4096, &h, nullptr, 4096, nullptr, 4096, &h,
                        nullptr, 1024),
            kOk);
  std::vector<BusyOp> ops = FakeRuntime::Get().TakeOps();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].stream, stream_);
  EXPECT_EQ(ops[0].name, "gpusim_gemm_fp16_tn");
  EXPECT_EQ(ops[0].flags, XTSIM_OP_COMPUTE);
  // 2·1024·2048·4096 / 800e12 s = 21474.8 ns.
  EXPECT_EQ(ops[0].duration_ns, 21475);
}

TEST_F(CublasTest, EveryGemmEntryPointUsesTheModel) {
  const double d1 = 1, d0 = 0;
  const float f1 = 1;
  const __half h1 = {};
  const void* const parray[1] = {nullptr};
  void* const carray[1] = {nullptr};
  const int m = 256, n = 128, k = 512;
  const int64_t m64 = m, n64 = n, k64 = k;
  struct Expect {
    cublasStatus_t status;
    const char* name;
    int64_t batch;
  };
  std::vector<Expect> expected;
  auto check = [&](cublasStatus_t status, const char* name, int64_t batch) {
    expected.push_back({status, name, batch});
  };
  check(cublasSgemm_v2_64(handle_, N, N, m64, n64, k64, &f1, a_, m64, b_, k64, &f1, c_, m64),
        "gpusim_gemm_fp32_nn", 1);
  check(cublasDgemm(handle_, N, N, m, n, k, &d1, nullptr, m, nullptr, k, &d0, nullptr, m),
        "gpusim_gemm_fp64_nn", 1);
  check(cublasDgemm_v2_64(handle_, N, N, m64, n64, k64, &d1, nullptr, m64, nullptr, k64, &d0,
                          nullptr, m64),
        "gpusim_gemm_fp64_nn", 1);
  check(cublasHgemm_64(handle_, N, N, m64, n64, k64, &h1, nullptr, m64, nullptr, k64, &h1, nullptr,
                       m64),
        "gpusim_gemm_fp16_nn", 1);
  check(
      cublasSgemmStridedBatched(handle_, N, N, m, n, k, &f1, a_, m, 0, b_, k, 0, &f1, c_, m, 0, 3),
      "gpusim_gemm_fp32_nn", 3);
  check(cublasDgemmStridedBatched_64(handle_, N, N, m64, n64, k64, &d1, nullptr, m64, 0, nullptr,
                                     k64, 0, &d0, nullptr, m64, 0, 5),
        "gpusim_gemm_fp64_nn", 5);
  check(cublasHgemmStridedBatched(handle_, N, N, m, n, k, &h1, nullptr, m, 0, nullptr, k, 0, &h1,
                                  nullptr, m, 0, 2),
        "gpusim_gemm_fp16_nn", 2);
  check(
      cublasSgemmBatched(handle_, N, N, m, n, k, &f1, reinterpret_cast<const float* const*>(parray),
                         m, reinterpret_cast<const float* const*>(parray), k, &f1,
                         reinterpret_cast<float* const*>(carray), m, 4),
      "gpusim_gemm_fp32_nn", 4);
  check(cublasDgemmBatched_64(handle_, N, N, m64, n64, k64, &d1,
                              reinterpret_cast<const double* const*>(parray), m64,
                              reinterpret_cast<const double* const*>(parray), k64, &d0,
                              reinterpret_cast<double* const*>(carray), m64, 6),
        "gpusim_gemm_fp64_nn", 6);
  check(cublasHgemmBatched(handle_, N, N, m, n, k, &h1,
                           reinterpret_cast<const __half* const*>(parray), m,
                           reinterpret_cast<const __half* const*>(parray), k, &h1,
                           reinterpret_cast<__half* const*>(carray), m, 7),
        "gpusim_gemm_fp16_nn", 7);
  check(cublasGemmEx(handle_, T, N, m, n, k, &f1, nullptr, CUDA_R_16BF, k, nullptr, CUDA_R_16BF, k,
                     &f1, nullptr, CUDA_R_16BF, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        "gpusim_gemm_bf16_tn", 1);
  check(cublasGemmEx_64(handle_, T, N, m64, n64, k64, &f1, nullptr, CUDA_R_8I, k64, nullptr,
                        CUDA_R_8I, k64, &f1, nullptr, CUDA_R_32F, m64, CUBLAS_COMPUTE_32F,
                        CUBLAS_GEMM_DEFAULT_TENSOR_OP),
        "gpusim_gemm_int8_tn", 1);
  check(cublasGemmStridedBatchedEx(handle_, N, N, m, n, k, &f1, nullptr, CUDA_R_16F, m, 0, nullptr,
                                   CUDA_R_16F, k, 0, &f1, nullptr, CUDA_R_32F, m, 0, 8,
                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        "gpusim_gemm_fp16_nn", 8);
  check(cublasGemmStridedBatchedEx_64(handle_, N, N, m64, n64, k64, &d1, nullptr, CUDA_R_64F, m64,
                                      0, nullptr, CUDA_R_64F, k64, 0, &d0, nullptr, CUDA_R_64F, m64,
                                      0, 9, CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT),
        "gpusim_gemm_fp64_nn", 9);
  check(cublasGemmBatchedEx(handle_, N, N, m, n, k, &f1, parray, CUDA_R_16BF, m, parray,
                            CUDA_R_16BF, k, &f1, carray, CUDA_R_32F, m, 10, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT),
        "gpusim_gemm_bf16_nn", 10);
  check(cublasGemmBatchedEx_64(handle_, N, N, m64, n64, k64, &f1, parray, CUDA_R_32F, m64, parray,
                               CUDA_R_32F, k64, &f1, carray, CUDA_R_32F, m64, 11,
                               CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT),
        "gpusim_gemm_tf32_nn", 11);

  std::vector<BusyOp> ops = FakeRuntime::Get().TakeOps();
  ASSERT_EQ(ops.size(), expected.size());
  const double rate_tflops[] = {60, 400, 800, 1600};  // fp32/fp64, tf32, fp16/bf16, int8
  for (size_t i = 0; i < ops.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(expected[i].status, kOk);
    EXPECT_EQ(ops[i].name, expected[i].name);
    std::string name = ops[i].name;
    double rate = name.find("tf32") != std::string::npos   ? rate_tflops[1]
                  : name.find("int8") != std::string::npos ? rate_tflops[3]
                  : name.find("16") != std::string::npos   ? rate_tflops[2]
                                                           : rate_tflops[0];
    double want = 2.0 * m * n * k * expected[i].batch / (rate * 1e3);
    EXPECT_NEAR(ops[i].duration_ns, want, 0.5);
  }
}

TEST_F(CublasTest, BatchCountValidation) {
  const float f1 = 1;
  EXPECT_EQ(cublasSgemmStridedBatched(handle_, N, N, 8, 8, 8, &f1, a_, 8, 64, b_, 8, 64, &f1, c_, 8,
                                      64, -1),
            kBad);
  EXPECT_EQ(cublasSgemmStridedBatched(handle_, N, N, 8, 8, 8, &f1, a_, 8, 64, b_, 8, 64, &f1, c_, 8,
                                      64, 0),
            kOk);
  EXPECT_TRUE(FakeRuntime::Get().TakeOps().empty());
}

TEST_F(CublasTest, GemmExTypeValidation) {
  const float f1 = 1;
  auto ex = [&](cudaDataType_t a, cudaDataType_t b, cudaDataType_t c, cublasComputeType_t compute,
                cublasGemmAlgo_t algo) {
    return cublasGemmEx(handle_, T, N, 16, 16, 16, &f1, nullptr, a, 16, nullptr, b, 16, &f1,
                        nullptr, c, 16, compute, algo);
  };
  const auto def = CUBLAS_GEMM_DEFAULT;
  EXPECT_EQ(ex(CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, def), kOk);
  EXPECT_EQ(ex(CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_16F, def), kOk);
  EXPECT_EQ(ex(CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_16F, def),
            CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(ex(CUDA_R_16F, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, def),
            CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(ex(CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, def),
            CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(
      ex(CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, static_cast<cublasGemmAlgo_t>(50)),
      CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(ex(CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_ALGO23), kOk);
  // A C caller passing the pre-CUDA-11 cudaDataType compute type (CUDA_R_32F == 0).
  EXPECT_EQ(
      ex(CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, static_cast<cublasComputeType_t>(CUDA_R_32F), def),
      kBad);
  EXPECT_EQ(ex(static_cast<cudaDataType_t>(77), CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, def),
            kBad);
  // Dimension errors come before type errors.
  EXPECT_EQ(
      cublasGemmEx(handle_, T, N, -1, 16, 16, &f1, nullptr, CUDA_R_8F_E4M3, 16, nullptr,
                   CUDA_R_8F_E4M3, 16, &f1, nullptr, CUDA_R_16BF, 16, CUBLAS_COMPUTE_32F, def),
      kBad);
  // The C++ overload taking a cudaDataType compute type migrates it through the math mode.
  EXPECT_EQ(cublasGemmEx(handle_, T, N, 16, 16, 16, &f1, nullptr, CUDA_R_32F, 16, nullptr,
                         CUDA_R_32F, 16, &f1, nullptr, CUDA_R_32F, 16, CUDA_R_32F, def),
            kOk);
}

TEST_F(CublasTest, MathModeSelectsTf32ForFp32Only) {
  const float f1 = 1;
  ASSERT_EQ(cublasSetMathMode(handle_, CUBLAS_TF32_TENSOR_OP_MATH), kOk);
  ASSERT_EQ(Sgemm(N, N, 1000, 1000, 1000, 1000, 1000, 1000), kOk);
  ASSERT_EQ(cublasGemmEx(handle_, N, N, 1000, 1000, 1000, &f1, nullptr, CUDA_R_32F, 1000, nullptr,
                         CUDA_R_32F, 1000, &f1, nullptr, CUDA_R_32F, 1000,
                         CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_GEMM_DEFAULT),
            kOk);
  ASSERT_EQ(cublasGemmEx(handle_, N, N, 1000, 1000, 1000, &f1, nullptr, CUDA_R_16BF, 1000, nullptr,
                         CUDA_R_16BF, 1000, &f1, nullptr, CUDA_R_16BF, 1000, CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT),
            kOk);
  ASSERT_EQ(cublasSetMathMode(handle_, CUBLAS_PEDANTIC_MATH), kOk);
  ASSERT_EQ(Sgemm(N, N, 1000, 1000, 1000, 1000, 1000, 1000), kOk);
  std::vector<BusyOp> ops = FakeRuntime::Get().TakeOps();
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_EQ(ops[0].name, "gpusim_gemm_tf32_nn");
  EXPECT_EQ(ops[0].duration_ns, 5000);  // 2e9 flop at 400 TFLOPS
  EXPECT_EQ(ops[1].name, "gpusim_gemm_fp32_nn");
  EXPECT_EQ(ops[2].name, "gpusim_gemm_bf16_nn");
  EXPECT_EQ(ops[3].name, "gpusim_gemm_fp32_nn");
  EXPECT_EQ(ops[3].duration_ns, 33333);  // 2e9 flop at 60 TFLOPS
}

TEST_F(CublasTest, RatesComeFromTheEnvironmentAtCreate) {
  setenv("XTIMER_SIM_TFLOPS_BF16", "100", 1);
  cublasHandle_t h = nullptr;
  ASSERT_EQ(cublasCreate(&h), kOk);
  unsetenv("XTIMER_SIM_TFLOPS_BF16");
  ASSERT_EQ(cublasSetStream(h, stream_), kOk);
  const float f1 = 1;
  ASSERT_EQ(
      cublasGemmEx(h, N, N, 1000, 1000, 1000, &f1, nullptr, CUDA_R_16BF, 1000, nullptr, CUDA_R_16BF,
                   1000, &f1, nullptr, CUDA_R_16BF, 1000, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      kOk);
  ASSERT_EQ(cublasDestroy(h), kOk);
  std::vector<BusyOp> ops = FakeRuntime::Get().TakeOps();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].duration_ns, 20000);  // 2e9 flop at 100 TFLOPS
}

TEST_F(CublasTest, InvalidStreamIsAnExecutionFailure) {
  cudaStream_t gone = FakeRuntime::Get().NewStream();
  ASSERT_EQ(cublasSetStream(handle_, gone), kOk);
  FakeRuntime::Get().DestroyStream(gone);
  EXPECT_EQ(Sgemm(N, N, 8, 8, 8, 8, 8, 8), CUBLAS_STATUS_EXECUTION_FAILED);
  ASSERT_EQ(cublasSetStream(handle_, cudaStreamPerThread), kOk);
  EXPECT_EQ(Sgemm(N, N, 8, 8, 8, 8, 8, 8), kOk);
}

TEST_F(CublasTest, HandlesOnManyThreads) {
  constexpr int kThreads = 8, kRounds = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this] {
      for (int i = 0; i < kRounds; ++i) {
        cublasHandle_t h = nullptr;
        ASSERT_EQ(cublasCreate(&h), kOk);
        ASSERT_EQ(cublasSetStream(h, stream_), kOk);
        const float f1 = 1;
        ASSERT_EQ(cublasSgemm(h, N, N, 64, 64, 64, &f1, a_, 64, b_, 64, &f1, c_, 64), kOk);
        ASSERT_EQ(cublasDestroy(h), kOk);
        ASSERT_EQ(cublasDestroy(h), CUBLAS_STATUS_NOT_INITIALIZED);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(FakeRuntime::Get().TakeOps().size(), static_cast<size_t>(kThreads * kRounds));
}

std::vector<std::string>* logged = nullptr;

TEST_F(CublasTest, LoggerCallbackSeesGemms) {
  std::vector<std::string> lines;
  logged = &lines;
  ASSERT_EQ(cublasSetLoggerCallback([](const char* msg) { logged->push_back(msg); }), kOk);
  cublasLogCallback cb = nullptr;
  EXPECT_EQ(cublasGetLoggerCallback(&cb), kOk);
  EXPECT_NE(cb, nullptr);
  ASSERT_EQ(cublasLoggerConfigure(1, 0, 0, nullptr), kOk);
  ASSERT_EQ(Sgemm(N, N, 8, 8, 8, 8, 8, 8), kOk);
  ASSERT_EQ(cublasLoggerConfigure(0, 0, 0, nullptr), kOk);
  ASSERT_EQ(Sgemm(N, N, 8, 8, 8, 8, 8, 8), kOk);
  ASSERT_EQ(cublasSetLoggerCallback(nullptr), kOk);
  logged = nullptr;
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("cublasSgemm_v2"), std::string::npos) << lines[0];
}

}  // namespace
