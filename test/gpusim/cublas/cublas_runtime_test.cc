// The simulated cuBLAS / cuBLASLt on the real simulated runtime (linked statically): GEMM time
// measured with CUDA events equals 2·m·n·k / TFLOPS, on the user's stream, under capture too.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>

namespace {

constexpr double kBf16Tflops = 800;  // the defaults (docs/gpusim-cublas.md)
constexpr double kFp8Tflops = 1600;
constexpr int kWarmupK = 1 << 20;  // 2 x 8192 x 8192 x 2^20 / 800 TFLOPS: about 0.18 s

class CublasRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v :
         {"XTIMER_SIM_TFLOPS_BF16", "XTIMER_SIM_TFLOPS_FP8", "XTIMER_SIM_SLOW_RANKS"}) {
      unsetenv(v);
    }
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaEventCreate(&start_), cudaSuccess);
    ASSERT_EQ(cudaEventCreate(&stop_), cudaSuccess);
    ASSERT_EQ(cublasCreate(&handle_), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cublasSetStream(handle_, stream_), CUBLAS_STATUS_SUCCESS);
  }
  void TearDown() override {
    EXPECT_EQ(cublasDestroy(handle_), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cudaEventDestroy(start_), cudaSuccess);
    EXPECT_EQ(cudaEventDestroy(stop_), cudaSuccess);
    EXPECT_EQ(cudaStreamDestroy(stream_), cudaSuccess);
  }

  cublasStatus_t Bf16Gemm(int m, int n, int k) {
    const float one = 1, zero = 0;
    return cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, nullptr, CUDA_R_16BF, k,
                        nullptr, CUDA_R_16BF, k, &zero, nullptr, CUDA_R_16BF, m, CUBLAS_COMPUTE_32F,
                        CUBLAS_GEMM_DEFAULT);
  }
  // Elapsed milliseconds between the two events once `stop_` completes.
  double ElapsedMs() {
    EXPECT_EQ(cudaEventSynchronize(stop_), cudaSuccess);
    float ms = 0;
    EXPECT_EQ(cudaEventElapsedTime(&ms, start_, stop_), cudaSuccess);
    return ms;
  }

  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  cublasHandle_t handle_ = nullptr;
};

TEST_F(CublasRuntimeTest, GemmExTimeMeasuredWithEvents) {
  const int m = 4096, n = 4096, k = 4096, iterations = 20;
  // A first GEMM keeps the simulated GPU ahead of the host (host time stays out of the interval):
  // about 0.18 s of simulated work, so that a slow host (a sanitizer build on a loaded machine)
  // still queues the timed GEMMs before the GPU reaches them.
  ASSERT_EQ(Bf16Gemm(8192, 8192, kWarmupK), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaEventRecord(start_, stream_), cudaSuccess);
  for (int i = 0; i < iterations; ++i) ASSERT_EQ(Bf16Gemm(m, n, k), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaEventRecord(stop_, stream_), cudaSuccess);
  double expected_ms = iterations * 2.0 * m * n * k / (kBf16Tflops * 1e12) * 1e3;
  EXPECT_NEAR(ElapsedMs(), expected_ms, expected_ms * 0.01);
}

TEST_F(CublasRuntimeTest, LtMatmulFp8TimeMeasuredWithEvents) {
  const uint64_t m = 8192, n = 8192, k = 8192;
  cublasLtHandle_t lt = nullptr;
  ASSERT_EQ(cublasLtCreate(&lt), CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulDesc_t op = nullptr;
  ASSERT_EQ(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
  int32_t transa = CUBLAS_OP_T;
  ASSERT_EQ(
      cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof(transa)),
      CUBLAS_STATUS_SUCCESS);
  cublasLtMatrixLayout_t a, b, c;
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&a, CUDA_R_8F_E4M3, k, m, k), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&b, CUDA_R_8F_E4M3, k, n, k), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&c, CUDA_R_16BF, m, n, m), CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulPreference_t pref;
  ASSERT_EQ(cublasLtMatmulPreferenceCreate(&pref), CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulHeuristicResult_t result;
  int count = 0;
  ASSERT_EQ(cublasLtMatmulAlgoGetHeuristic(lt, op, a, b, c, c, pref, 1, &result, &count),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(count, 1);
  const float one = 1, zero = 0;
  auto matmul = [&] {
    return cublasLtMatmul(lt, op, &one, nullptr, a, nullptr, b, &zero, nullptr, c, nullptr, c,
                          &result.algo, nullptr, 0, stream_);
  };
  // Keeps the GPU ahead of the host (see GemmExTimeMeasuredWithEvents).
  ASSERT_EQ(Bf16Gemm(8192, 8192, kWarmupK), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaEventRecord(start_, stream_), cudaSuccess);
  for (int i = 0; i < 5; ++i) ASSERT_EQ(matmul(), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaEventRecord(stop_, stream_), cudaSuccess);
  double expected_ms = 5 * 2.0 * m * n * k / (kFp8Tflops * 1e12) * 1e3;
  EXPECT_NEAR(ElapsedMs(), expected_ms, expected_ms * 0.01);
  EXPECT_EQ(cublasLtMatmulPreferenceDestroy(pref), CUBLAS_STATUS_SUCCESS);
  for (cublasLtMatrixLayout_t l : {a, b, c}) {
    EXPECT_EQ(cublasLtMatrixLayoutDestroy(l), CUBLAS_STATUS_SUCCESS);
  }
  EXPECT_EQ(cublasLtMatmulDescDestroy(op), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtDestroy(lt), CUBLAS_STATUS_SUCCESS);
}

TEST_F(CublasRuntimeTest, CapturedGemmRunsWithTheGraph) {
  const int m = 4096, n = 4096, k = 4096;
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(Bf16Gemm(m, n, k), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(Bf16Gemm(m, n, k), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaStreamEndCapture(stream_, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(Bf16Gemm(8192, 8192, kWarmupK), CUBLAS_STATUS_SUCCESS);  // keeps the GPU ahead
  ASSERT_EQ(cudaEventRecord(start_, stream_), cudaSuccess);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(cudaGraphLaunch(exec, stream_), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(stop_, stream_), cudaSuccess);
  double expected_ms = 6 * 2.0 * m * n * k / (kBf16Tflops * 1e12) * 1e3;
  EXPECT_NEAR(ElapsedMs(), expected_ms, expected_ms * 0.01);
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
}

TEST_F(CublasRuntimeTest, DestroyedStreamIsAnExecutionFailure) {
  cudaStream_t gone = nullptr;
  ASSERT_EQ(cudaStreamCreate(&gone), cudaSuccess);
  ASSERT_EQ(cublasSetStream(handle_, gone), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaStreamDestroy(gone), cudaSuccess);
  EXPECT_EQ(Bf16Gemm(64, 64, 64), CUBLAS_STATUS_EXECUTION_FAILED);
  ASSERT_EQ(cublasSetStream(handle_, stream_), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(Bf16Gemm(64, 64, 64), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
}

}  // namespace
