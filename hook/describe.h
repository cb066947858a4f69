// Turning a call's arguments into an OpDesc: sizes, dtypes, transposes, bytes. Plain functions
// (the cuBLAS / cuBLASLt queries go to the real libraries through cuda_api.h).
#ifndef XTIMER_HOOK_DESCRIBE_H_
#define XTIMER_HOOK_DESCRIBE_H_

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>

#include "format/record.h"
#include "hook/recorder.h"

namespace xtimer {
namespace hook {

format::DType DTypeOfCuda(cudaDataType t);
format::DType DTypeOfNccl(ncclDataType_t t);
format::Operation CopyOperation(cudaMemcpyKind kind);

// cuBLAS GEMMs. dtype: A's type, refined for FP32 inputs by the compute type or the handle's
// math mode (TF32 / FP16 / BF16 tensor-op paths), as cuBLAS chooses the kernel. Returns false
// when the handle's stream cannot be read (the call then passes through untimed).
bool DescribeGemm(OpDesc* d, cublasHandle_t handle, format::Operation op, cublasOperation_t ta,
                  cublasOperation_t tb, int64_t m, int64_t n, int64_t k, int64_t batch,
                  cudaDataType a_type, cublasComputeType_t compute);
// cuBLASLt: m, n, k, batch, dtypes and transposes read from the descriptors.
bool DescribeLtMatmul(OpDesc* d, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
                      cublasLtMatrixLayout_t dl, cudaStream_t stream);

inline bool DescribeCopy(OpDesc* d, cudaMemcpyKind kind, size_t count, cudaStream_t stream,
                         bool async) {
  d->kind = format::OpKind::kMemcpy;
  d->op = CopyOperation(kind);
  d->bytes = count;
  d->stream = stream;
  d->flags = async ? format::kFlagAsync : 0;
  return true;
}
inline bool DescribeMemset(OpDesc* d, size_t count, cudaStream_t stream, bool async) {
  d->kind = format::OpKind::kMemset;
  d->op = format::Operation::kMemset;
  d->bytes = count;
  d->stream = stream;
  d->flags = async ? format::kFlagAsync : 0;
  return true;
}
inline bool DescribeGraph(OpDesc* d, cudaStream_t stream) {
  d->kind = format::OpKind::kGraph;
  d->op = format::Operation::kGraphLaunch;
  d->stream = stream;
  d->flags = format::kFlagAsync;
  return true;
}

// Ranks in the call's communicator, 0 when unknown.
inline int CommSize(const OpDesc* d) { return d->comm != nullptr ? d->comm->size : 0; }

// NCCL. `count` is the call's count argument; bytes are the send buffer's size
// (opmath::SendBytes: for ReduceScatter, AlltoAll and Scatter, comm_size blocks of count).
void DescribeCollective(OpDesc* d, format::Operation op, size_t count, ncclDataType_t type,
                        int root, cudaStream_t stream, int comm_size);
void DescribeP2P(OpDesc* d, format::Operation op, size_t count, ncclDataType_t type, int peer,
                 cudaStream_t stream);

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_DESCRIBE_H_
