#include "hook/describe.h"

#include <cstdlib>
#include <cstring>

#include "hook/cuda_api.h"

namespace xtimer {
namespace hook {

using format::DType;
using format::Operation;

DType DTypeOfCuda(cudaDataType t) {
  switch (t) {
    case CUDA_R_64F:
    case CUDA_C_64F:
      return DType::kF64;
    case CUDA_R_32F:
    case CUDA_C_32F:
      return DType::kF32;
    case CUDA_R_16F:
    case CUDA_C_16F:
      return DType::kF16;
    case CUDA_R_16BF:
    case CUDA_C_16BF:
      return DType::kBF16;
    case CUDA_R_8F_E4M3:
      return DType::kF8E4M3;
    case CUDA_R_8F_E5M2:
      return DType::kF8E5M2;
    case CUDA_R_8I:
    case CUDA_C_8I:
      return DType::kI8;
    case CUDA_R_8U:
    case CUDA_C_8U:
      return DType::kU8;
    case CUDA_R_32I:
    case CUDA_C_32I:
      return DType::kI32;
    case CUDA_R_32U:
    case CUDA_C_32U:
      return DType::kU32;
    case CUDA_R_64I:
    case CUDA_C_64I:
      return DType::kI64;
    case CUDA_R_64U:
    case CUDA_C_64U:
      return DType::kU64;
    default:
      return DType::kUnknown;
  }
}

DType DTypeOfNccl(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: return DType::kI8;
    case ncclUint8: return DType::kU8;
    case ncclInt32: return DType::kI32;
    case ncclUint32: return DType::kU32;
    case ncclInt64: return DType::kI64;
    case ncclUint64: return DType::kU64;
    case ncclFloat16: return DType::kF16;
    case ncclFloat32: return DType::kF32;
    case ncclFloat64: return DType::kF64;
    case ncclBfloat16: return DType::kBF16;
    case ncclFloat8e4m3: return DType::kF8E4M3;
    case ncclFloat8e5m2: return DType::kF8E5M2;
    default: return DType::kUnknown;
  }
}

size_t NcclTypeSize(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
  }
}

Operation CopyOperation(cudaMemcpyKind kind) {
  switch (kind) {
    case cudaMemcpyHostToDevice: return Operation::kMemcpyHtoD;
    case cudaMemcpyDeviceToHost: return Operation::kMemcpyDtoH;
    case cudaMemcpyDeviceToDevice: return Operation::kMemcpyDtoD;
    case cudaMemcpyHostToHost: return Operation::kMemcpyHtoH;
    default: return Operation::kMemcpyDefault;
  }
}

namespace {

bool Tf32Allowed() {
  static const bool allowed = [] {
    const char* v = getenv("NVIDIA_TF32_OVERRIDE");
    return v == nullptr || strcmp(v, "0") != 0;
  }();
  return allowed;
}

// The rate class of an FP32-input GEMM, as cuBLAS picks its kernels.
DType Fp32Refined(cublasComputeType_t compute, int math_mode) {
  switch (compute) {
    case CUBLAS_COMPUTE_32F_FAST_TF32:
      return Tf32Allowed() ? DType::kTF32 : DType::kF32;
    case CUBLAS_COMPUTE_32F_FAST_16F:
      return DType::kF16;
    case CUBLAS_COMPUTE_32F_FAST_16BF:
      return DType::kBF16;
    case CUBLAS_COMPUTE_32F: {
      int mode = math_mode & 0xf;
      if (mode == CUBLAS_TF32_TENSOR_OP_MATH) return Tf32Allowed() ? DType::kTF32 : DType::kF32;
      if (mode == CUBLAS_TENSOR_OP_MATH) return DType::kF16;
      return DType::kF32;
    }
    default:
      return DType::kF32;
  }
}

}  // namespace

bool DescribeGemm(OpDesc* d, cublasHandle_t handle, Operation op, cublasOperation_t ta,
                  cublasOperation_t tb, int64_t m, int64_t n, int64_t k, int64_t batch,
                  cudaDataType a_type, cublasComputeType_t compute) {
  const CudaApi& api = Api();
  auto get_stream = api.cublas_get_stream.get_optional();
  cudaStream_t stream = nullptr;
  if (get_stream == nullptr || get_stream(handle, &stream) != CUBLAS_STATUS_SUCCESS) return false;
  d->kind = format::OpKind::kMatmul;
  d->op = op;
  d->stream = stream;
  d->m = m;
  d->n = n;
  d->k = k;
  d->batch = batch;
  d->flags = format::kFlagAsync | (ta != CUBLAS_OP_N ? format::kFlagTransA : 0) |
             (tb != CUBLAS_OP_N ? format::kFlagTransB : 0);
  d->dtype = DTypeOfCuda(a_type);
  if (d->dtype == DType::kF32 && a_type == CUDA_R_32F) {
    int mode = 0;
    auto get_math_mode = api.cublas_get_math_mode.get_optional();
    if (compute == CUBLAS_COMPUTE_32F && get_math_mode != nullptr) {
      cublasMath_t mm = CUBLAS_DEFAULT_MATH;
      if (get_math_mode(handle, &mm) == CUBLAS_STATUS_SUCCESS) mode = mm;
    }
    d->dtype = Fp32Refined(compute, mode);
  }
  return true;
}

bool DescribeLtMatmul(OpDesc* d, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
                      cublasLtMatrixLayout_t dl, cudaStream_t stream) {
  auto desc_get = Api().lt_desc_get_attribute.get_optional();
  auto layout_get = Api().lt_layout_get_attribute.get_optional();
  if (desc_get == nullptr || layout_get == nullptr || desc == nullptr || a == nullptr ||
      dl == nullptr) {
    return false;
  }
  size_t written = 0;
  int32_t compute = 0, ta = 0, tb = 0, batch = 1;
  uint32_t a_type = 0;
  uint64_t a_rows = 0, a_cols = 0, d_rows = 0, d_cols = 0;
  if (desc_get(desc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &compute,
                                sizeof(compute), &written) != CUBLAS_STATUS_SUCCESS ||
      desc_get(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta), &written) !=
          CUBLAS_STATUS_SUCCESS ||
      desc_get(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb), &written) !=
          CUBLAS_STATUS_SUCCESS ||
      layout_get(a, CUBLASLT_MATRIX_LAYOUT_TYPE, &a_type, sizeof(a_type),
                                  &written) != CUBLAS_STATUS_SUCCESS ||
      layout_get(a, CUBLASLT_MATRIX_LAYOUT_ROWS, &a_rows, sizeof(a_rows),
                                  &written) != CUBLAS_STATUS_SUCCESS ||
      layout_get(a, CUBLASLT_MATRIX_LAYOUT_COLS, &a_cols, sizeof(a_cols),
                                  &written) != CUBLAS_STATUS_SUCCESS ||
      layout_get(dl, CUBLASLT_MATRIX_LAYOUT_ROWS, &d_rows, sizeof(d_rows),
                                  &written) != CUBLAS_STATUS_SUCCESS ||
      layout_get(dl, CUBLASLT_MATRIX_LAYOUT_COLS, &d_cols, sizeof(d_cols),
                                  &written) != CUBLAS_STATUS_SUCCESS ||
      layout_get(dl, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch),
                                  &written) != CUBLAS_STATUS_SUCCESS) {
    return false;
  }
  d->kind = format::OpKind::kMatmul;
  d->op = Operation::kLtMatmul;
  d->stream = stream;
  d->m = static_cast<int64_t>(d_rows);
  d->n = static_cast<int64_t>(d_cols);
  d->k = static_cast<int64_t>(ta == CUBLAS_OP_N ? a_cols : a_rows);
  d->batch = batch;
  d->flags = format::kFlagAsync | (ta != CUBLAS_OP_N ? format::kFlagTransA : 0) |
             (tb != CUBLAS_OP_N ? format::kFlagTransB : 0);
  auto at = static_cast<cudaDataType>(a_type);
  d->dtype = DTypeOfCuda(at);
  if (at == CUDA_R_32F) d->dtype = Fp32Refined(static_cast<cublasComputeType_t>(compute), 0);
  return true;
}

void DescribeCollective(OpDesc* d, Operation op, size_t count, ncclDataType_t type, int root,
                        cudaStream_t stream, size_t send_blocks) {
  d->kind = format::OpKind::kCollective;
  d->op = op;
  d->dtype = DTypeOfNccl(type);
  d->count = count;
  d->bytes = count * NcclTypeSize(type) * send_blocks;
  d->root = root;
  d->stream = stream;
  d->flags = format::kFlagAsync;
}

void DescribeP2P(OpDesc* d, Operation op, size_t count, ncclDataType_t type, int peer,
                 cudaStream_t stream) {
  d->kind = format::OpKind::kP2P;
  d->op = op;
  d->dtype = DTypeOfNccl(type);
  d->count = count;
  d->bytes = count * NcclTypeSize(type);
  d->peer = peer;
  d->stream = stream;
  d->flags = format::kFlagAsync;
}

}  // namespace hook
}  // namespace xtimer
