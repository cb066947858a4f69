// Unit tests of the simulated cuBLASLt against a recording fake of the runtime's private table.
#include <cublasLt.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <string>
#include <vector>

#include "test/gpusim/cublas/fake_runtime.h"
#include "test/gpusim/sim_api.h"

namespace {

using xtsim::testing::BusyOp;
using xtsim::testing::FakeRuntime;

constexpr auto kOk = CUBLAS_STATUS_SUCCESS;
constexpr auto kBad = CUBLAS_STATUS_INVALID_VALUE;
constexpr auto kNo = CUBLAS_STATUS_NOT_SUPPORTED;

template <typename T>
cublasStatus_t SetDesc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, T value) {
  return cublasLtMatmulDescSetAttribute(d, attr, &value, sizeof(value));
}

template <typename T>
cublasStatus_t SetLayout(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t attr, T value) {
  return cublasLtMatrixLayoutSetAttribute(l, attr, &value, sizeof(value));
}

TEST(CublasLtInfoTest, VersionsAndNames) {
  EXPECT_EQ(cublasLtGetVersion(), static_cast<size_t>(CUBLAS_VERSION));
  EXPECT_EQ(cublasLtGetCudartVersion(), static_cast<size_t>(CUDART_VERSION));
  int major = 0;
  EXPECT_EQ(cublasLtGetProperty(MAJOR_VERSION, &major), kOk);
  EXPECT_EQ(major, CUBLAS_VER_MAJOR);
  EXPECT_EQ(cublasLtGetProperty(MAJOR_VERSION, nullptr), kBad);
  EXPECT_STREQ(cublasLtGetStatusName(CUBLAS_STATUS_ARCH_MISMATCH), "CUBLAS_STATUS_ARCH_MISMATCH");
  EXPECT_STRNE(cublasLtGetStatusString(CUBLAS_STATUS_SUCCESS), "");
}

TEST(CublasLtHandleTest, Lifetime) {
  EXPECT_EQ(cublasLtCreate(nullptr), kBad);
  EXPECT_EQ(cublasLtDestroy(nullptr), CUBLAS_STATUS_NOT_INITIALIZED);
  cublasLtHandle_t h = nullptr;
  ASSERT_EQ(cublasLtCreate(&h), kOk);
  ASSERT_EQ(cublasLtDestroy(h), kOk);
  EXPECT_EQ(cublasLtDestroy(h), CUBLAS_STATUS_NOT_INITIALIZED);
  FakeRuntime::Get().set_no_device(true);
  EXPECT_EQ(cublasLtCreate(&h), CUBLAS_STATUS_NOT_INITIALIZED);
  FakeRuntime::Get().set_no_device(false);
}

TEST(MatmulDescTest, AttributeRoundTripsAndSizeQueries) {
  cublasLtMatmulDesc_t d = nullptr;
  ASSERT_EQ(cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F), kOk);
  size_t written = 0;
  int32_t i32 = -1;
  // Defaults.
  ASSERT_EQ(cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &i32, sizeof(i32),
                                           &written),
            kOk);
  EXPECT_EQ(i32, CUBLAS_COMPUTE_32F);
  EXPECT_EQ(written, sizeof(int32_t));
  ASSERT_EQ(
      cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &i32, sizeof(i32), nullptr),
      kOk);
  EXPECT_EQ(i32, CUBLAS_OP_N);
  uint32_t epilogue = 0;
  ASSERT_EQ(cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                           sizeof(epilogue), &written),
            kOk);
  EXPECT_EQ(epilogue, CUBLASLT_EPILOGUE_DEFAULT);
  ASSERT_EQ(cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &i32,
                                           sizeof(i32), &written),
            kOk);
  EXPECT_EQ(i32, -1);

  // Round trips of the attributes users set in practice.
  EXPECT_EQ(SetDesc<int32_t>(d, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T), kOk);
  EXPECT_EQ(SetDesc<cublasOperation_t>(d, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_C), kOk);
  EXPECT_EQ(SetDesc<int32_t>(d, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, CUBLAS_COMPUTE_32F_FAST_TF32),
            kOk);
  EXPECT_EQ(SetDesc<int32_t>(d, CUBLASLT_MATMUL_DESC_SCALE_TYPE, CUDA_R_32F), kOk);
  EXPECT_EQ(SetDesc<int32_t>(d, CUBLASLT_MATMUL_DESC_POINTER_MODE, CUBLASLT_POINTER_MODE_DEVICE),
            kOk);
  EXPECT_EQ(SetDesc<uint32_t>(d, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_GELU_BIAS), kOk);
  int dummy[4];
  EXPECT_EQ(SetDesc<const void*>(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dummy[0]), kOk);
  EXPECT_EQ(SetDesc<const void*>(d, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &dummy[1]), kOk);
  EXPECT_EQ(SetDesc<const void*>(d, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &dummy[2]), kOk);
  EXPECT_EQ(SetDesc<void*>(d, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, &dummy[3]), kOk);
  EXPECT_EQ(SetDesc<int8_t>(d, CUBLASLT_MATMUL_DESC_FAST_ACCUM, 1), kOk);
  EXPECT_EQ(SetDesc<int64_t>(d, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, 4096), kOk);

  auto get_i32 = [&](cublasLtMatmulDescAttributes_t attr) {
    int32_t v = 0;
    EXPECT_EQ(cublasLtMatmulDescGetAttribute(d, attr, &v, sizeof(v), &written), kOk);
    EXPECT_EQ(written, sizeof(v));
    return v;
  };
  auto get_ptr = [&](cublasLtMatmulDescAttributes_t attr) {
    const void* v = nullptr;
    EXPECT_EQ(cublasLtMatmulDescGetAttribute(d, attr, &v, sizeof(v), &written), kOk);
    EXPECT_EQ(written, sizeof(v));
    return v;
  };
  EXPECT_EQ(get_i32(CUBLASLT_MATMUL_DESC_TRANSA), CUBLAS_OP_T);
  EXPECT_EQ(get_i32(CUBLASLT_MATMUL_DESC_TRANSB), CUBLAS_OP_C);
  EXPECT_EQ(get_i32(CUBLASLT_MATMUL_DESC_COMPUTE_TYPE), CUBLAS_COMPUTE_32F_FAST_TF32);
  EXPECT_EQ(get_i32(CUBLASLT_MATMUL_DESC_POINTER_MODE), CUBLASLT_POINTER_MODE_DEVICE);
  EXPECT_EQ(get_i32(CUBLASLT_MATMUL_DESC_EPILOGUE), CUBLASLT_EPILOGUE_GELU_BIAS);
  EXPECT_EQ(get_ptr(CUBLASLT_MATMUL_DESC_BIAS_POINTER), &dummy[0]);
  EXPECT_EQ(get_ptr(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER), &dummy[1]);
  EXPECT_EQ(get_ptr(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER), &dummy[2]);
  EXPECT_EQ(get_ptr(CUBLASLT_MATMUL_DESC_AMAX_D_POINTER), &dummy[3]);
  int8_t fast = 0;
  EXPECT_EQ(cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, 1, &written),
            kOk);
  EXPECT_EQ(fast, 1);
  EXPECT_EQ(written, 1u);

  // sizeWritten queries: sizeInBytes == 0 reports the size, and needs sizeWritten.
  struct SizeCase {
    cublasLtMatmulDescAttributes_t attr;
    size_t size;
  };
  for (SizeCase c :
       {SizeCase{CUBLASLT_MATMUL_DESC_TRANSA, 4}, SizeCase{CUBLASLT_MATMUL_DESC_EPILOGUE, 4},
        SizeCase{CUBLASLT_MATMUL_DESC_BIAS_POINTER, 8},
        SizeCase{CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, 8},
        SizeCase{CUBLASLT_MATMUL_DESC_FAST_ACCUM, 1},
        SizeCase{CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, 8}}) {
    written = 0;
    EXPECT_EQ(cublasLtMatmulDescGetAttribute(d, c.attr, nullptr, 0, &written), kOk) << c.attr;
    EXPECT_EQ(written, c.size) << c.attr;
  }
  EXPECT_EQ(cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, nullptr, 0, nullptr),
            kBad);

  // Size mismatches, null buffers and unknown attributes.
  int64_t wide = CUBLAS_OP_N;
  EXPECT_EQ(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &wide, sizeof(wide)),
            kBad);
  EXPECT_EQ(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, nullptr, 4), kBad);
  int32_t fast_as_int = 1;
  EXPECT_EQ(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast_as_int,
                                           sizeof(fast_as_int)),
            kBad);
  EXPECT_EQ(
      cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &wide, sizeof(wide), &written),
      kBad);
  EXPECT_EQ(cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, nullptr, 4, &written),
            kBad);
  auto unknown = static_cast<cublasLtMatmulDescAttributes_t>(9);
  EXPECT_EQ(SetDesc<int32_t>(d, unknown, 0), kBad);
  EXPECT_EQ(cublasLtMatmulDescGetAttribute(d, unknown, nullptr, 0, &written), kBad);
  EXPECT_EQ(SetDesc<int32_t>(d, static_cast<cublasLtMatmulDescAttributes_t>(1000), 0), kBad);

  ASSERT_EQ(cublasLtMatmulDescDestroy(d), kOk);
  // Use after destroy: rejected without reading freed memory; destroy twice is an error.
  EXPECT_EQ(SetDesc<int32_t>(d, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_N), kBad);
  EXPECT_EQ(cublasLtMatmulDescDestroy(d), kBad);
  EXPECT_EQ(cublasLtMatmulDescDestroy(nullptr), kOk);
}

TEST(MatrixLayoutTest, AttributeRoundTrips) {
  cublasLtMatrixLayout_t l = nullptr;
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&l, CUDA_R_16BF, 4096, 1024, 4096), kOk);
  size_t written = 0;
  uint32_t type = 0;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0, stride = -1;
  int32_t order = -1, batch = 0;
  auto get = [&](cublasLtMatrixLayoutAttribute_t attr, void* buf, size_t size) {
    written = 0;
    EXPECT_EQ(cublasLtMatrixLayoutGetAttribute(l, attr, buf, size, &written), kOk) << attr;
    EXPECT_EQ(written, size) << attr;
  };
  get(CUBLASLT_MATRIX_LAYOUT_TYPE, &type, sizeof(type));
  get(CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, sizeof(rows));
  get(CUBLASLT_MATRIX_LAYOUT_COLS, &cols, sizeof(cols));
  get(CUBLASLT_MATRIX_LAYOUT_LD, &ld, sizeof(ld));
  get(CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof(order));
  get(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch));
  get(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride));
  EXPECT_EQ(type, static_cast<uint32_t>(CUDA_R_16BF));
  EXPECT_EQ(rows, 4096u);
  EXPECT_EQ(cols, 1024u);
  EXPECT_EQ(ld, 4096);
  EXPECT_EQ(order, CUBLASLT_ORDER_COL);
  EXPECT_EQ(batch, 1);
  EXPECT_EQ(stride, 0);

  EXPECT_EQ(SetLayout<int32_t>(l, CUBLASLT_MATRIX_LAYOUT_ORDER, CUBLASLT_ORDER_ROW), kOk);
  EXPECT_EQ(SetLayout<int32_t>(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, 8), kOk);
  EXPECT_EQ(SetLayout<int64_t>(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, 1 << 22), kOk);
  EXPECT_EQ(SetLayout<uint64_t>(l, CUBLASLT_MATRIX_LAYOUT_ROWS, 2048), kOk);
  EXPECT_EQ(SetLayout<uint32_t>(l, CUBLASLT_MATRIX_LAYOUT_TYPE, CUDA_R_8F_E4M3), kOk);
  get(CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof(order));
  get(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch));
  get(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride));
  get(CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, sizeof(rows));
  get(CUBLASLT_MATRIX_LAYOUT_TYPE, &type, sizeof(type));
  EXPECT_EQ(order, CUBLASLT_ORDER_ROW);
  EXPECT_EQ(batch, 8);
  EXPECT_EQ(stride, 1 << 22);
  EXPECT_EQ(rows, 2048u);
  EXPECT_EQ(type, static_cast<uint32_t>(CUDA_R_8F_E4M3));

  // BATCH_COUNT is int32_t, ROWS uint64_t: other widths are rejected.
  EXPECT_EQ(SetLayout<int64_t>(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, 8), kBad);
  EXPECT_EQ(SetLayout<int32_t>(l, CUBLASLT_MATRIX_LAYOUT_ROWS, 8), kBad);
  EXPECT_EQ(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ROWS, nullptr, 0, &written),
            kOk);
  EXPECT_EQ(written, sizeof(uint64_t));
  EXPECT_EQ(SetLayout<int32_t>(l, static_cast<cublasLtMatrixLayoutAttribute_t>(42), 0), kBad);
  ASSERT_EQ(cublasLtMatrixLayoutDestroy(l), kOk);
  EXPECT_EQ(SetLayout<int32_t>(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, 1), kBad);
}

TEST(PreferenceTest, DefaultsAndRoundTrips) {
  cublasLtMatmulPreference_t p = nullptr;
  ASSERT_EQ(cublasLtMatmulPreferenceCreate(&p), kOk);
  uint64_t ws = 1;
  size_t written = 0;
  ASSERT_EQ(cublasLtMatmulPreferenceGetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                                 sizeof(ws), &written),
            kOk);
  EXPECT_EQ(ws, 0u);
  ws = 32 << 20;
  ASSERT_EQ(cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                                 sizeof(ws)),
            kOk);
  ws = 0;
  ASSERT_EQ(cublasLtMatmulPreferenceGetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                                 sizeof(ws), &written),
            kOk);
  EXPECT_EQ(ws, 32u << 20);
  uint32_t align = 0;
  ASSERT_EQ(cublasLtMatmulPreferenceGetAttribute(p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                                 &align, sizeof(align), &written),
            kOk);
  EXPECT_EQ(align, 256u);
  // A 32-bit workspace limit is the classic mistake: the attribute is uint64_t.
  uint32_t small = 1024;
  EXPECT_EQ(cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                 &small, sizeof(small)),
            kBad);
  ASSERT_EQ(cublasLtMatmulPreferenceDestroy(p), kOk);
}

TEST(InitTest, DescriptorsInCallerStorage) {
  cublasLtMatmulDescOpaque_t desc_storage;
  cublasLtMatrixLayoutOpaque_t layout_storage;
  cublasLtMatmulPreferenceOpaque_t pref_storage;
  ASSERT_EQ(cublasLtMatmulDescInit(&desc_storage, CUBLAS_COMPUTE_32F, CUDA_R_32F), kOk);
  ASSERT_EQ(cublasLtMatrixLayoutInit(&layout_storage, CUDA_R_16F, 64, 32, 64), kOk);
  ASSERT_EQ(cublasLtMatmulPreferenceInit(&pref_storage), kOk);
  EXPECT_EQ(SetDesc<int32_t>(&desc_storage, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T), kOk);
  uint64_t cols = 0;
  EXPECT_EQ(cublasLtMatrixLayoutGetAttribute(&layout_storage, CUBLASLT_MATRIX_LAYOUT_COLS, &cols,
                                             sizeof(cols), nullptr),
            kOk);
  EXPECT_EQ(cols, 32u);
  // Too little storage.
  EXPECT_EQ(cublasLtMatmulDescInit_internal(&desc_storage, 16, CUBLAS_COMPUTE_32F, CUDA_R_32F),
            CUBLAS_STATUS_ALLOC_FAILED);
  EXPECT_EQ(cublasLtMatrixLayoutInit_internal(nullptr, 64, CUDA_R_16F, 1, 1, 1), kBad);
  // Garbage that was never initialised is rejected.
  cublasLtMatrixLayoutOpaque_t garbage = {};
  EXPECT_EQ(SetLayout<int32_t>(&garbage, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, 2), kBad);
  // Destroying a descriptor built in caller storage marks it dead without freeing it.
  EXPECT_EQ(cublasLtMatrixLayoutDestroy(&layout_storage), kOk);
  EXPECT_EQ(cublasLtMatrixLayoutGetAttribute(&layout_storage, CUBLASLT_MATRIX_LAYOUT_COLS, &cols,
                                             sizeof(cols), nullptr),
            kBad);
}

// A bf16 TN matmul D(m×n) = op(A) op(B) with A stored k×m and B stored k×n.
class LtMatmulTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("XTIMER_SIM_CUBLASLT_WORKSPACE");
    unsetenv("XTIMER_SIM_TFLOPS_BF16");
    unsetenv("XTIMER_SIM_TFLOPS_FP8");
    ASSERT_EQ(cublasLtCreate(&lt_), kOk);
    stream_ = FakeRuntime::Get().NewStream();
    Build(CUDA_R_16BF, CUDA_R_16BF, 4096, 2048, 1024);
    ASSERT_EQ(cublasLtMatmulPreferenceCreate(&pref_), kOk);
    uint64_t ws = 32 << 20;
    ASSERT_EQ(cublasLtMatmulPreferenceSetAttribute(pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                   &ws, sizeof(ws)),
              kOk);
    FakeRuntime::Get().TakeOps();
  }
  void TearDown() override {
    Release();
    EXPECT_EQ(cublasLtMatmulPreferenceDestroy(pref_), kOk);
    EXPECT_EQ(cublasLtDestroy(lt_), kOk);
    FakeRuntime::Get().DestroyStream(stream_);
  }

  void Build(cudaDataType_t ab, cudaDataType_t cd, uint64_t m, uint64_t n, uint64_t k) {
    Release();
    m_ = m, n_ = n, k_ = k;
    ASSERT_EQ(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F), kOk);
    ASSERT_EQ(SetDesc<int32_t>(op_, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T), kOk);
    ASSERT_EQ(cublasLtMatrixLayoutCreate(&a_, ab, k, m, k), kOk);
    ASSERT_EQ(cublasLtMatrixLayoutCreate(&b_, ab, k, n, k), kOk);
    ASSERT_EQ(cublasLtMatrixLayoutCreate(&c_, cd, m, n, m), kOk);
    ASSERT_EQ(cublasLtMatrixLayoutCreate(&d_, cd, m, n, m), kOk);
  }
  void Release() {
    if (op_ == nullptr) return;
    EXPECT_EQ(cublasLtMatmulDescDestroy(op_), kOk);
    for (cublasLtMatrixLayout_t l : {a_, b_, c_, d_}) {
      EXPECT_EQ(cublasLtMatrixLayoutDestroy(l), kOk);
    }
    op_ = nullptr;
  }
  void SetBatch(int32_t batch) {
    for (cublasLtMatrixLayout_t l : {a_, b_, c_, d_}) {
      ASSERT_EQ(SetLayout<int32_t>(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, batch), kOk);
    }
  }
  cublasStatus_t Heuristic(cublasLtMatmulHeuristicResult_t* results, int requested, int* count) {
    return cublasLtMatmulAlgoGetHeuristic(lt_, op_, a_, b_, c_, d_, pref_, requested, results,
                                          count);
  }
  cublasStatus_t Matmul(const cublasLtMatmulAlgo_t* algo, size_t workspace) {
    float one = 1, zero = 0;
    return cublasLtMatmul(lt_, op_, &one, nullptr, a_, nullptr, b_, &zero, nullptr, c_, nullptr, d_,
                          algo, nullptr, workspace, stream_);
  }
  double Flops() const { return 2.0 * m_ * n_ * k_; }

  cublasLtHandle_t lt_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr, d_ = nullptr;
  cublasLtMatmulPreference_t pref_ = nullptr;
  uint64_t m_ = 0, n_ = 0, k_ = 0;
};

TEST_F(LtMatmulTest, HeuristicReturnsAlgosWithinTheWorkspaceLimit) {
  cublasLtMatmulHeuristicResult_t results[8];
  int count = -1;
  ASSERT_EQ(Heuristic(results, 8, &count), kOk);
  ASSERT_GE(count, 1);
  for (int i = 0; i < count; ++i) {
    EXPECT_EQ(results[i].state, kOk);
    EXPECT_LE(results[i].workspaceSize, 32u << 20);
    EXPECT_GT(results[i].wavesCount, 0.0f);
  }
  ASSERT_EQ(Heuristic(results, 1, &count), kOk);
  EXPECT_EQ(count, 1);
  // No workspace allowed: still an algorithm without one.
  uint64_t zero = 0;
  ASSERT_EQ(cublasLtMatmulPreferenceSetAttribute(pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                 &zero, sizeof(zero)),
            kOk);
  ASSERT_EQ(Heuristic(results, 8, &count), kOk);
  ASSERT_EQ(count, 1);
  EXPECT_EQ(results[0].workspaceSize, 0u);
  EXPECT_EQ(Heuristic(results, 0, &count), kBad);
  EXPECT_EQ(Heuristic(results, 1, nullptr), kBad);
}

TEST_F(LtMatmulTest, HeuristicNotSupportedWhenNoAlgoFits) {
  setenv("XTIMER_SIM_CUBLASLT_WORKSPACE", "4194304", 1);
  cublasLtHandle_t needy = nullptr;
  ASSERT_EQ(cublasLtCreate(&needy), kOk);
  unsetenv("XTIMER_SIM_CUBLASLT_WORKSPACE");
  uint64_t limit = 1 << 20;
  ASSERT_EQ(cublasLtMatmulPreferenceSetAttribute(pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                 &limit, sizeof(limit)),
            kOk);
  cublasLtMatmulHeuristicResult_t results[4];
  int count = -1;
  EXPECT_EQ(cublasLtMatmulAlgoGetHeuristic(needy, op_, a_, b_, c_, d_, pref_, 4, results, &count),
            kNo);
  EXPECT_EQ(count, 0);
  // Matmul without an algorithm runs the same search against its workspace argument.
  float one = 1;
  EXPECT_EQ(cublasLtMatmul(needy, op_, &one, nullptr, a_, nullptr, b_, &one, nullptr, c_, nullptr,
                           d_, nullptr, nullptr, 1 << 20, stream_),
            kNo);
  limit = 4 << 20;
  ASSERT_EQ(cublasLtMatmulPreferenceSetAttribute(pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                 &limit, sizeof(limit)),
            kOk);
  ASSERT_EQ(cublasLtMatmulAlgoGetHeuristic(needy, op_, a_, b_, c_, d_, pref_, 4, results, &count),
            kOk);
  EXPECT_EQ(results[0].workspaceSize, 4u << 20);
  ASSERT_EQ(cublasLtDestroy(needy), kOk);
}

TEST_F(LtMatmulTest, MatmulOccupiesTheStreamFor2MnkOverRate) {
  cublasLtMatmulHeuristicResult_t result;
  int count = 0;
  ASSERT_EQ(Heuristic(&result, 1, &count), kOk);
  ASSERT_EQ(Matmul(&result.algo, result.workspaceSize), kOk);
  ASSERT_EQ(Matmul(nullptr, 0), kOk);
  std::vector<BusyOp> ops = FakeRuntime::Get().TakeOps();
  ASSERT_EQ(ops.size(), 2u);
  for (const BusyOp& op : ops) {
    EXPECT_EQ(op.stream, stream_);
    EXPECT_EQ(op.name, "gpusim_ltmatmul_bf16_tn");
    EXPECT_EQ(op.flags, XTSIM_OP_COMPUTE);
    EXPECT_NEAR(op.duration_ns, Flops() / 800e3, 0.5);
  }
}

TEST_F(LtMatmulTest, AlgoWorkspaceMustFit) {
  cublasLtMatmulHeuristicResult_t results[4];
  int count = 0;
  ASSERT_EQ(Heuristic(results, 4, &count), kOk);
  const cublasLtMatmulHeuristicResult_t* needs_workspace = nullptr;
  for (int i = 0; i < count; ++i) {
    if (results[i].workspaceSize > 0) needs_workspace = &results[i];
  }
  ASSERT_NE(needs_workspace, nullptr);
  EXPECT_EQ(Matmul(&needs_workspace->algo, needs_workspace->workspaceSize - 1), kBad);
  cublasLtMatmulAlgo_t garbage = {};
  EXPECT_EQ(Matmul(&garbage, 1 << 30), kBad);
  EXPECT_TRUE(FakeRuntime::Get().TakeOps().empty());
}

TEST_F(LtMatmulTest, BatchedFp8) {
  Build(CUDA_R_8F_E4M3, CUDA_R_16BF, 8192, 1024, 4096);
  SetBatch(4);
  ASSERT_EQ(Matmul(nullptr, 32 << 20), kOk);
  std::vector<BusyOp> ops = FakeRuntime::Get().TakeOps();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].name, "gpusim_ltmatmul_fp8_tn");
  EXPECT_NEAR(ops[0].duration_ns, 4 * Flops() / 1600e3, 0.5);
  // FP8 output needs a 16-bit C; an FP8 D with an FP32 C is not supported.
  Build(CUDA_R_8F_E4M3, CUDA_R_32F, 64, 64, 64);
  ASSERT_EQ(SetLayout<uint32_t>(d_, CUBLASLT_MATRIX_LAYOUT_TYPE, CUDA_R_8F_E4M3), kOk);
  EXPECT_EQ(Matmul(nullptr, 0), kNo);
}

TEST_F(LtMatmulTest, RowMajorLayoutsAndTf32) {
  Build(CUDA_R_32F, CUDA_R_32F, 1000, 1000, 1000);
  ASSERT_EQ(SetDesc<int32_t>(op_, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, CUBLAS_COMPUTE_32F_FAST_TF32),
            kOk);
  for (cublasLtMatrixLayout_t l : {a_, b_, c_, d_}) {
    ASSERT_EQ(SetLayout<int32_t>(l, CUBLASLT_MATRIX_LAYOUT_ORDER, CUBLASLT_ORDER_ROW), kOk);
  }
  ASSERT_EQ(Matmul(nullptr, 0), kOk);
  std::vector<BusyOp> ops = FakeRuntime::Get().TakeOps();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].name, "gpusim_ltmatmul_tf32_tn");
  EXPECT_EQ(ops[0].duration_ns, 5000);
}

TEST_F(LtMatmulTest, Validation) {
  // Shapes that do not agree: B's k differs from A's.
  ASSERT_EQ(SetLayout<uint64_t>(b_, CUBLASLT_MATRIX_LAYOUT_ROWS, k_ + 1), kOk);
  ASSERT_EQ(SetLayout<int64_t>(b_, CUBLASLT_MATRIX_LAYOUT_LD, k_ + 1), kOk);
  EXPECT_EQ(Matmul(nullptr, 0), kBad);
  ASSERT_EQ(SetLayout<uint64_t>(b_, CUBLASLT_MATRIX_LAYOUT_ROWS, k_), kOk);
  EXPECT_EQ(Matmul(nullptr, 0), kOk);
  // Leading dimension too small for column order.
  ASSERT_EQ(SetLayout<int64_t>(c_, CUBLASLT_MATRIX_LAYOUT_LD, m_ - 1), kOk);
  EXPECT_EQ(Matmul(nullptr, 0), kBad);
  ASSERT_EQ(SetLayout<int64_t>(c_, CUBLASLT_MATRIX_LAYOUT_LD, m_), kOk);
  // Batch counts must agree.
  ASSERT_EQ(SetLayout<int32_t>(a_, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, 2), kOk);
  EXPECT_EQ(Matmul(nullptr, 0), kBad);
  SetBatch(1);
  // Enum values outside their range.
  ASSERT_EQ(SetDesc<int32_t>(op_, CUBLASLT_MATMUL_DESC_TRANSB, 9), kOk);
  EXPECT_EQ(Matmul(nullptr, 0), kBad);
  ASSERT_EQ(SetDesc<int32_t>(op_, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N), kOk);
  ASSERT_EQ(SetDesc<uint32_t>(op_, CUBLASLT_MATMUL_DESC_EPILOGUE, 3), kOk);
  EXPECT_EQ(Matmul(nullptr, 0), kBad);
  ASSERT_EQ(SetDesc<uint32_t>(op_, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_RELU_BIAS),
            kOk);
  ASSERT_EQ(SetDesc<int32_t>(op_, CUBLASLT_MATMUL_DESC_TRANSC, CUBLAS_OP_T), kOk);
  EXPECT_EQ(Matmul(nullptr, 0), kNo);
  ASSERT_EQ(SetDesc<int32_t>(op_, CUBLASLT_MATMUL_DESC_TRANSC, CUBLAS_OP_N), kOk);
  // Types: a 16F scale type is not a bf16 combination.
  ASSERT_EQ(SetDesc<int32_t>(op_, CUBLASLT_MATMUL_DESC_SCALE_TYPE, CUDA_R_16F), kOk);
  EXPECT_EQ(Matmul(nullptr, 0), kNo);
  ASSERT_EQ(SetDesc<int32_t>(op_, CUBLASLT_MATMUL_DESC_SCALE_TYPE, CUDA_R_32F), kOk);
  // Handles and descriptors.
  float one = 1;
  EXPECT_EQ(cublasLtMatmul(nullptr, op_, &one, nullptr, a_, nullptr, b_, &one, nullptr, c_, nullptr,
                           d_, nullptr, nullptr, 0, stream_),
            CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(cublasLtMatmul(lt_, op_, &one, nullptr, a_, nullptr, b_, &one, nullptr, nullptr,
                           nullptr, d_, nullptr, nullptr, 0, stream_),
            kBad);
  EXPECT_EQ(cublasLtMatmul(lt_, op_, &one, nullptr, a_, nullptr, b_, &one, nullptr, c_, nullptr, d_,
                           nullptr, nullptr, 0, reinterpret_cast<cudaStream_t>(0xdead0)),
            CUBLAS_STATUS_EXECUTION_FAILED);
  EXPECT_EQ(Matmul(nullptr, 0), kOk);
  EXPECT_EQ(FakeRuntime::Get().TakeOps().size(), 2u);
}

TEST_F(LtMatmulTest, ZeroSizes) {
  Build(CUDA_R_16BF, CUDA_R_16BF, 64, 64, 0);
  ASSERT_EQ(SetLayout<int64_t>(a_, CUBLASLT_MATRIX_LAYOUT_LD, 1), kOk);
  ASSERT_EQ(SetLayout<int64_t>(b_, CUBLASLT_MATRIX_LAYOUT_LD, 1), kOk);
  ASSERT_EQ(Matmul(nullptr, 0), kOk);
  std::vector<BusyOp> ops = FakeRuntime::Get().TakeOps();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].duration_ns, 0);
  EXPECT_EQ(ops[0].name, "gpusim_ltmatmul_bf16_tn_k0");
  Build(CUDA_R_16BF, CUDA_R_16BF, 64, 0, 64);
  ASSERT_EQ(Matmul(nullptr, 0), kOk);
  EXPECT_TRUE(FakeRuntime::Get().TakeOps().empty());
}

std::vector<std::string>* api_lines = nullptr;

TEST_F(LtMatmulTest, LoggerApiTrace) {
  std::vector<std::string> lines;
  api_lines = &lines;
  ASSERT_EQ(cublasLtLoggerSetCallback([](int, const char* function, const char* message) {
              api_lines->push_back(std::string(function) + ": " + message);
            }),
            kOk);
  EXPECT_EQ(cublasLtLoggerSetLevel(6), kBad);
  ASSERT_EQ(cublasLtLoggerSetLevel(5), kOk);
  ASSERT_EQ(Matmul(nullptr, 0), kOk);
  ASSERT_EQ(cublasLtLoggerSetLevel(0), kOk);
  ASSERT_EQ(Matmul(nullptr, 0), kOk);
  ASSERT_EQ(cublasLtLoggerSetCallback(nullptr), kOk);
  api_lines = nullptr;
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("cublasLtMatmul: m=4096 n=2048 k=1024"), std::string::npos) << lines[0];
}

}  // namespace
