// Describing calls (hook/describe.h), with the cuBLAS and cuBLASLt queries injected into g_api:
// cuBLAS GEMMs (shape, transposes, the stream read from the handle, dtype refined by the compute
// type and the handle's math mode, the FLOP the shape implies), cuBLASLt matmuls read from their
// descriptors (with the attribute sizes cuBLASLt checks), copies, memsets, graphs, NCCL
// collectives and send/recv (bytes of the send buffer, dtype, count, root, peer), the dtype
// tables; and the failures that leave a call undescribed (no stream, a failed attribute query).
#include "hook/describe.h"

#include <atomic>
#include <cstring>

#include "format/record.h"
#include "gtest/gtest.h"
#include "hook/cuda_api.h"
#include "opmath/op_math.h"

namespace xtimer {
namespace hook {
namespace {

using format::DType;
using format::Operation;

cudaStream_t Stream(uintptr_t n) { return reinterpret_cast<cudaStream_t>(n); }

// cuBLAS: a handle is a FakeHandle*.
struct FakeHandle {
  cudaStream_t stream;
  cublasMath_t math;
  bool fail_stream = false;
};
FakeHandle* Of(cublasHandle_t h) { return reinterpret_cast<FakeHandle*>(h); }
cublasHandle_t Handle(FakeHandle* h) { return reinterpret_cast<cublasHandle_t>(h); }
std::atomic<int> g_math_mode_calls{0};

// cuBLASLt: descriptors and layouts are FakeLtDesc* / FakeLayout*. Like cuBLASLt, a query whose
// buffer is not the attribute's size fails.
struct FakeLtDesc {
  int32_t compute;
  int32_t ta, tb;
  bool fail = false;
};
struct FakeLayout {
  uint32_t type;
  uint64_t rows, cols;
  int32_t batch;
};

template <typename T>
cublasStatus_t Put(const T& value, void* buf, size_t size, size_t* written) {
  *written = sizeof(T);
  if (size != sizeof(T)) return CUBLAS_STATUS_INVALID_VALUE;
  memcpy(buf, &value, sizeof(T));
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t DescGet(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, void* buf,
                       size_t size, size_t* written) {
  auto* d = reinterpret_cast<FakeLtDesc*>(desc);
  if (d->fail) return CUBLAS_STATUS_INVALID_VALUE;
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE: return Put(d->compute, buf, size, written);
    case CUBLASLT_MATMUL_DESC_TRANSA: return Put(d->ta, buf, size, written);
    case CUBLASLT_MATMUL_DESC_TRANSB: return Put(d->tb, buf, size, written);
    default: return CUBLAS_STATUS_INVALID_VALUE;
  }
}

cublasStatus_t LayoutGet(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr,
                         void* buf, size_t size, size_t* written) {
  auto* l = reinterpret_cast<FakeLayout*>(layout);
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_TYPE: return Put(l->type, buf, size, written);
    case CUBLASLT_MATRIX_LAYOUT_ROWS: return Put(l->rows, buf, size, written);
    case CUBLASLT_MATRIX_LAYOUT_COLS: return Put(l->cols, buf, size, written);
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: return Put(l->batch, buf, size, written);
    default: return CUBLAS_STATUS_INVALID_VALUE;
  }
}

class DescribeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_api.cublas_get_stream.SetForTesting(
        [](cublasHandle_t h, cudaStream_t* stream) -> cublasStatus_t {
          if (Of(h)->fail_stream) return CUBLAS_STATUS_NOT_INITIALIZED;
          *stream = Of(h)->stream;
          return CUBLAS_STATUS_SUCCESS;
        });
    g_api.cublas_get_math_mode.SetForTesting(
        [](cublasHandle_t h, cublasMath_t* mode) -> cublasStatus_t {
          g_math_mode_calls.fetch_add(1);
          *mode = Of(h)->math;
          return CUBLAS_STATUS_SUCCESS;
        });
    g_api.lt_desc_get_attribute.SetForTesting(DescGet);
    g_api.lt_layout_get_attribute.SetForTesting(LayoutGet);
    g_math_mode_calls = 0;
  }

  void TearDown() override {
    g_api.cublas_get_stream.SetForTesting(nullptr);
    g_api.cublas_get_math_mode.SetForTesting(nullptr);
    g_api.lt_desc_get_attribute.SetForTesting(nullptr);
    g_api.lt_layout_get_attribute.SetForTesting(nullptr);
  }

  // The dtype DescribeGemm gives an FP32-input GEMM with `compute` on a handle in `math`.
  static DType Fp32GemmDType(cublasComputeType_t compute, cublasMath_t math) {
    FakeHandle h{Stream(1), math};
    OpDesc d;
    EXPECT_TRUE(DescribeGemm(&d, Handle(&h), Operation::kGemmEx, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8,
                             8, 1, CUDA_R_32F, compute));
    return d.dtype;
  }
};

// ---------------------------------------------------------------------------------- cuBLAS

TEST_F(DescribeTest, AGemmHasItsShapeTransposesAndTheHandlesStream) {
  FakeHandle h{Stream(0x42), CUBLAS_DEFAULT_MATH};
  OpDesc d;
  ASSERT_TRUE(DescribeGemm(&d, Handle(&h), Operation::kGemmStridedBatchedEx, CUBLAS_OP_T,
                           CUBLAS_OP_N, /*m=*/1024, /*n=*/512, /*k=*/256, /*batch=*/8,
                           CUDA_R_16BF, CUBLAS_COMPUTE_32F));
  EXPECT_EQ(d.kind, format::OpKind::kMatmul);
  EXPECT_EQ(d.op, Operation::kGemmStridedBatchedEx);
  EXPECT_EQ(d.stream, Stream(0x42));
  EXPECT_EQ(d.m, 1024);
  EXPECT_EQ(d.n, 512);
  EXPECT_EQ(d.k, 256);
  EXPECT_EQ(d.batch, 8);
  EXPECT_EQ(d.flags, format::kFlagAsync | format::kFlagTransA);
  EXPECT_EQ(d.dtype, DType::kBF16);
  // What the daemon makes of the shape: 2 m n k per matrix of the batch.
  EXPECT_EQ(opmath::MatmulFlop(d.m, d.n, d.k, d.batch), 2.0 * 1024 * 512 * 256 * 8);
  EXPECT_EQ(g_math_mode_calls.load(), 0) << "the math mode matters for FP32 inputs only";
}

TEST_F(DescribeTest, AConjugateTransposeCountsAsATranspose) {
  FakeHandle h{Stream(1), CUBLAS_DEFAULT_MATH};
  OpDesc d;
  ASSERT_TRUE(DescribeGemm(&d, Handle(&h), Operation::kGemmEx, CUBLAS_OP_N, CUBLAS_OP_C, 2, 3, 4,
                           1, CUDA_R_64F, CUBLAS_COMPUTE_64F));
  EXPECT_EQ(d.flags, format::kFlagAsync | format::kFlagTransB);
  EXPECT_EQ(d.dtype, DType::kF64);
}

TEST_F(DescribeTest, AnFp32GemmIsRefinedByItsComputeTypeAndTheHandlesMathMode) {
  EXPECT_EQ(Fp32GemmDType(CUBLAS_COMPUTE_32F, CUBLAS_DEFAULT_MATH), DType::kF32);
  EXPECT_EQ(Fp32GemmDType(CUBLAS_COMPUTE_32F, CUBLAS_PEDANTIC_MATH), DType::kF32);
  EXPECT_EQ(Fp32GemmDType(CUBLAS_COMPUTE_32F, CUBLAS_TF32_TENSOR_OP_MATH), DType::kTF32);
  EXPECT_EQ(Fp32GemmDType(CUBLAS_COMPUTE_32F,
                          static_cast<cublasMath_t>(CUBLAS_TF32_TENSOR_OP_MATH |
                                                    CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)),
            DType::kTF32)
      << "the mode's flag bits do not hide it";
  EXPECT_EQ(Fp32GemmDType(CUBLAS_COMPUTE_32F, CUBLAS_TENSOR_OP_MATH), DType::kF16);
  EXPECT_EQ(Fp32GemmDType(CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_DEFAULT_MATH), DType::kTF32);
  EXPECT_EQ(Fp32GemmDType(CUBLAS_COMPUTE_32F_FAST_16F, CUBLAS_DEFAULT_MATH), DType::kF16);
  EXPECT_EQ(Fp32GemmDType(CUBLAS_COMPUTE_32F_FAST_16BF, CUBLAS_DEFAULT_MATH), DType::kBF16);
  EXPECT_EQ(Fp32GemmDType(CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_TF32_TENSOR_OP_MATH), DType::kF32);
  const int calls = g_math_mode_calls.load();
  Fp32GemmDType(CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_TENSOR_OP_MATH);
  EXPECT_EQ(g_math_mode_calls.load(), calls) << "an explicit compute type needs no math mode";
}

TEST_F(DescribeTest, AComplexFp32GemmIsNotRefined) {
  FakeHandle h{Stream(1), CUBLAS_TF32_TENSOR_OP_MATH};
  OpDesc d;
  ASSERT_TRUE(DescribeGemm(&d, Handle(&h), Operation::kGemmEx, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2,
                           1, CUDA_C_32F, CUBLAS_COMPUTE_32F));
  EXPECT_EQ(d.dtype, DType::kF32);
}

TEST_F(DescribeTest, AGemmWhoseStreamCannotBeReadIsNotDescribed) {
  FakeHandle h{Stream(1), CUBLAS_DEFAULT_MATH, /*fail_stream=*/true};
  OpDesc d;
  EXPECT_FALSE(DescribeGemm(&d, Handle(&h), Operation::kSgemm, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2,
                            1, CUDA_R_32F, CUBLAS_COMPUTE_32F));
  EXPECT_EQ(d.kind, OpDesc().kind);
  EXPECT_EQ(d.m, 0);
  g_api.cublas_get_stream.SetForTesting(nullptr);  // cuBLAS not loaded (nothing resolves here)
  h.fail_stream = false;
  EXPECT_FALSE(DescribeGemm(&d, Handle(&h), Operation::kSgemm, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2,
                            1, CUDA_R_32F, CUBLAS_COMPUTE_32F));
}

// -------------------------------------------------------------------------------- cuBLASLt

TEST_F(DescribeTest, AnLtMatmulIsReadFromItsDescriptors) {
  FakeLtDesc desc{CUBLAS_COMPUTE_32F, CUBLAS_OP_T, CUBLAS_OP_N};
  FakeLayout a{CUDA_R_16F, /*rows=*/64, /*cols=*/32, 1};   // A^T: k = its rows
  FakeLayout dl{CUDA_R_16F, /*rows=*/32, /*cols=*/16, /*batch=*/4};
  OpDesc d;
  ASSERT_TRUE(DescribeLtMatmul(&d, reinterpret_cast<cublasLtMatmulDesc_t>(&desc),
                               reinterpret_cast<cublasLtMatrixLayout_t>(&a),
                               reinterpret_cast<cublasLtMatrixLayout_t>(&dl), Stream(0x99)));
  EXPECT_EQ(d.kind, format::OpKind::kMatmul);
  EXPECT_EQ(d.op, Operation::kLtMatmul);
  EXPECT_EQ(d.stream, Stream(0x99));
  EXPECT_EQ(d.m, 32);
  EXPECT_EQ(d.n, 16);
  EXPECT_EQ(d.k, 64);
  EXPECT_EQ(d.batch, 4);
  EXPECT_EQ(d.flags, format::kFlagAsync | format::kFlagTransA);
  EXPECT_EQ(d.dtype, DType::kF16);
  EXPECT_EQ(opmath::MatmulFlop(d.m, d.n, d.k, d.batch), 2.0 * 32 * 16 * 64 * 4);

  desc.ta = CUBLAS_OP_N;  // A as stored: k = its columns
  desc.tb = CUBLAS_OP_T;
  ASSERT_TRUE(DescribeLtMatmul(&d, reinterpret_cast<cublasLtMatmulDesc_t>(&desc),
                               reinterpret_cast<cublasLtMatrixLayout_t>(&a),
                               reinterpret_cast<cublasLtMatrixLayout_t>(&dl), Stream(0x99)));
  EXPECT_EQ(d.k, 32);
  EXPECT_EQ(d.flags, format::kFlagAsync | format::kFlagTransB);
}

TEST_F(DescribeTest, AnFp32LtMatmulIsRefinedByItsComputeTypeOnly) {
  FakeLtDesc desc{CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_OP_N, CUBLAS_OP_N};
  FakeLayout a{CUDA_R_32F, 8, 8, 1};
  FakeLayout dl{CUDA_R_32F, 8, 8, 1};
  auto describe = [&](OpDesc* d) {
    return DescribeLtMatmul(d, reinterpret_cast<cublasLtMatmulDesc_t>(&desc),
                            reinterpret_cast<cublasLtMatrixLayout_t>(&a),
                            reinterpret_cast<cublasLtMatrixLayout_t>(&dl), Stream(1));
  };
  OpDesc d;
  ASSERT_TRUE(describe(&d));
  EXPECT_EQ(d.dtype, DType::kTF32);
  desc.compute = CUBLAS_COMPUTE_32F;
  ASSERT_TRUE(describe(&d));
  EXPECT_EQ(d.dtype, DType::kF32);
}

TEST_F(DescribeTest, AnLtMatmulWhoseDescriptorsCannotBeReadIsNotDescribed) {
  FakeLtDesc desc{CUBLAS_COMPUTE_32F, CUBLAS_OP_N, CUBLAS_OP_N, /*fail=*/true};
  FakeLayout a{CUDA_R_16F, 8, 8, 1};
  FakeLayout dl{CUDA_R_16F, 8, 8, 1};
  auto lt_desc = reinterpret_cast<cublasLtMatmulDesc_t>(&desc);
  auto lt_a = reinterpret_cast<cublasLtMatrixLayout_t>(&a);
  auto lt_d = reinterpret_cast<cublasLtMatrixLayout_t>(&dl);
  OpDesc d;
  EXPECT_FALSE(DescribeLtMatmul(&d, lt_desc, lt_a, lt_d, Stream(1)));
  EXPECT_EQ(d.m, 0);
  desc.fail = false;
  EXPECT_FALSE(DescribeLtMatmul(&d, nullptr, lt_a, lt_d, Stream(1)));
  EXPECT_FALSE(DescribeLtMatmul(&d, lt_desc, nullptr, lt_d, Stream(1)));
  EXPECT_FALSE(DescribeLtMatmul(&d, lt_desc, lt_a, nullptr, Stream(1)));
  g_api.lt_layout_get_attribute.SetForTesting(nullptr);  // cuBLASLt not loaded
  EXPECT_FALSE(DescribeLtMatmul(&d, lt_desc, lt_a, lt_d, Stream(1)));
  EXPECT_EQ(d.m, 0);
}

// ------------------------------------------------------------------ copies, memsets, graphs

TEST_F(DescribeTest, ACopyHasItsDirectionBytesAndAsynchrony) {
  struct Case {
    cudaMemcpyKind kind;
    Operation op;
  };
  const Case cases[] = {{cudaMemcpyHostToDevice, Operation::kMemcpyHtoD},
                        {cudaMemcpyDeviceToHost, Operation::kMemcpyDtoH},
                        {cudaMemcpyDeviceToDevice, Operation::kMemcpyDtoD},
                        {cudaMemcpyHostToHost, Operation::kMemcpyHtoH},
                        {cudaMemcpyDefault, Operation::kMemcpyDefault}};
  for (const Case& c : cases) {
    OpDesc d;
    ASSERT_TRUE(DescribeCopy(&d, c.kind, 1 << 20, Stream(3), /*async=*/true));
    EXPECT_EQ(d.kind, format::OpKind::kMemcpy);
    EXPECT_EQ(d.op, c.op) << c.kind;
    EXPECT_EQ(d.bytes, 1u << 20);
    EXPECT_EQ(d.stream, Stream(3));
    EXPECT_EQ(d.flags, format::kFlagAsync);
  }
  OpDesc d;
  DescribeCopy(&d, cudaMemcpyDeviceToHost, 10, nullptr, /*async=*/false);
  EXPECT_EQ(d.flags, 0);
}

TEST_F(DescribeTest, AMemsetAndAGraphLaunch) {
  OpDesc d;
  ASSERT_TRUE(DescribeMemset(&d, 4096, Stream(5), /*async=*/false));
  EXPECT_EQ(d.kind, format::OpKind::kMemset);
  EXPECT_EQ(d.op, Operation::kMemset);
  EXPECT_EQ(d.bytes, 4096u);
  EXPECT_EQ(d.stream, Stream(5));
  EXPECT_EQ(d.flags, 0);
  DescribeMemset(&d, 1, Stream(5), true);
  EXPECT_EQ(d.flags, format::kFlagAsync);

  OpDesc g;
  ASSERT_TRUE(DescribeGraph(&g, Stream(6)));
  EXPECT_EQ(g.kind, format::OpKind::kGraph);
  EXPECT_EQ(g.op, Operation::kGraphLaunch);
  EXPECT_EQ(g.stream, Stream(6));
  EXPECT_EQ(g.flags, format::kFlagAsync);
}

// ------------------------------------------------------------------------------------- NCCL

TEST_F(DescribeTest, ACollectiveRecordsItsSendBuffersBytes) {
  struct Case {
    Operation op;
    size_t count;
    ncclDataType_t type;
    int comm_size;
    uint64_t bytes;  // count * element size, times comm_size where the send buffer has blocks
  };
  const Case cases[] = {
      {Operation::kAllReduce, 1024, ncclFloat32, 8, 4096},
      {Operation::kAllGather, 100, ncclInt8, 4, 100},
      {Operation::kBroadcast, 10, ncclFloat64, 2, 80},
      {Operation::kReduce, 7, ncclBfloat16, 3, 14},
      {Operation::kReduceScatter, 1000, ncclFloat16, 4, 8000},
      {Operation::kAlltoAll, 10, ncclInt64, 8, 640},
      {Operation::kScatter, 5, ncclUint32, 3, 60},
      {Operation::kGather, 5, ncclUint32, 3, 20},
      {Operation::kReduceScatter, 1000, ncclFloat16, 0, 2000},  // size unknown: one block
  };
  for (const Case& c : cases) {
    OpDesc d;
    DescribeCollective(&d, c.op, c.count, c.type, /*root=*/-1, Stream(7), c.comm_size);
    EXPECT_EQ(d.bytes, c.bytes) << static_cast<int>(c.op) << " on " << c.comm_size;
    EXPECT_EQ(d.count, c.count);
    EXPECT_EQ(d.dtype, DTypeOfNccl(c.type));
  }
}

TEST_F(DescribeTest, ACollectiveHasItsKindRootStreamAndDType) {
  OpDesc d;
  DescribeCollective(&d, Operation::kBroadcast, 256, ncclBfloat16, /*root=*/2, Stream(8), 4);
  EXPECT_EQ(d.kind, format::OpKind::kCollective);
  EXPECT_EQ(d.op, Operation::kBroadcast);
  EXPECT_EQ(d.dtype, DType::kBF16);
  EXPECT_EQ(d.count, 256u);
  EXPECT_EQ(d.bytes, 512u);
  EXPECT_EQ(d.root, 2);
  EXPECT_EQ(d.peer, -1);
  EXPECT_EQ(d.stream, Stream(8));
  EXPECT_EQ(d.flags, format::kFlagAsync);
}

TEST_F(DescribeTest, ACollectiveOfAnUnknownTypeHasNoBytes) {
  OpDesc d;
  DescribeCollective(&d, Operation::kAllReduce, 1024, static_cast<ncclDataType_t>(99), -1,
                     Stream(1), 2);
  EXPECT_EQ(d.dtype, DType::kUnknown);
  EXPECT_EQ(d.count, 1024u);
  EXPECT_EQ(d.bytes, 0u);
}

TEST_F(DescribeTest, ASendOrRecvHasItsPeerAndOneBlock) {
  OpDesc d;
  DescribeP2P(&d, Operation::kSend, 10, ncclFloat32, /*peer=*/3, Stream(9));
  EXPECT_EQ(d.kind, format::OpKind::kP2P);
  EXPECT_EQ(d.op, Operation::kSend);
  EXPECT_EQ(d.dtype, DType::kF32);
  EXPECT_EQ(d.count, 10u);
  EXPECT_EQ(d.bytes, 40u);
  EXPECT_EQ(d.peer, 3);
  EXPECT_EQ(d.root, -1);
  EXPECT_EQ(d.stream, Stream(9));
  EXPECT_EQ(d.flags, format::kFlagAsync);
  OpDesc r;
  DescribeP2P(&r, Operation::kRecv, 3, ncclUint8, 0, Stream(9));
  EXPECT_EQ(r.op, Operation::kRecv);
  EXPECT_EQ(r.bytes, 3u);
  EXPECT_EQ(r.peer, 0);
}

// ------------------------------------------------------------------------------ dtype tables

TEST(DTypeTest, NcclTypes) {
  EXPECT_EQ(DTypeOfNccl(ncclInt8), DType::kI8);
  EXPECT_EQ(DTypeOfNccl(ncclUint8), DType::kU8);
  EXPECT_EQ(DTypeOfNccl(ncclInt32), DType::kI32);
  EXPECT_EQ(DTypeOfNccl(ncclUint32), DType::kU32);
  EXPECT_EQ(DTypeOfNccl(ncclInt64), DType::kI64);
  EXPECT_EQ(DTypeOfNccl(ncclUint64), DType::kU64);
  EXPECT_EQ(DTypeOfNccl(ncclFloat16), DType::kF16);
  EXPECT_EQ(DTypeOfNccl(ncclFloat32), DType::kF32);
  EXPECT_EQ(DTypeOfNccl(ncclFloat64), DType::kF64);
  EXPECT_EQ(DTypeOfNccl(ncclBfloat16), DType::kBF16);
  EXPECT_EQ(DTypeOfNccl(ncclFloat8e4m3), DType::kF8E4M3);
  EXPECT_EQ(DTypeOfNccl(ncclFloat8e5m2), DType::kF8E5M2);
  EXPECT_EQ(DTypeOfNccl(static_cast<ncclDataType_t>(200)), DType::kUnknown);
}

TEST(DTypeTest, CudaTypesRealAndComplex) {
  EXPECT_EQ(DTypeOfCuda(CUDA_R_64F), DType::kF64);
  EXPECT_EQ(DTypeOfCuda(CUDA_C_64F), DType::kF64);
  EXPECT_EQ(DTypeOfCuda(CUDA_R_32F), DType::kF32);
  EXPECT_EQ(DTypeOfCuda(CUDA_C_32F), DType::kF32);
  EXPECT_EQ(DTypeOfCuda(CUDA_R_16F), DType::kF16);
  EXPECT_EQ(DTypeOfCuda(CUDA_R_16BF), DType::kBF16);
  EXPECT_EQ(DTypeOfCuda(CUDA_R_8F_E4M3), DType::kF8E4M3);
  EXPECT_EQ(DTypeOfCuda(CUDA_R_8F_E5M2), DType::kF8E5M2);
  EXPECT_EQ(DTypeOfCuda(CUDA_R_8I), DType::kI8);
  EXPECT_EQ(DTypeOfCuda(CUDA_R_8U), DType::kU8);
  EXPECT_EQ(DTypeOfCuda(CUDA_R_32I), DType::kI32);
  EXPECT_EQ(DTypeOfCuda(CUDA_R_32U), DType::kU32);
  EXPECT_EQ(DTypeOfCuda(CUDA_R_64I), DType::kI64);
  EXPECT_EQ(DTypeOfCuda(CUDA_R_64U), DType::kU64);
  EXPECT_EQ(DTypeOfCuda(CUDA_R_4I), DType::kUnknown);
}

}  // namespace
}  // namespace hook
}  // namespace xtimer
