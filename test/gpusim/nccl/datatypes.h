// Element types and reduction arithmetic of the simulated NCCL.
//
// One template in datatypes.cc is instantiated per ncclDataType_t; the engine reaches it through
// the TypeKernels table, so no collective carries per-type code. Low-precision types (half,
// bfloat16, fp8) are computed in float and rounded back to the type after every pairwise step,
// as a ring reduction on the GPU does. Integer arithmetic wraps (two's complement), like the GPU.
#ifndef XTIMER_TEST_GPUSIM_NCCL_DATATYPES_H_
#define XTIMER_TEST_GPUSIM_NCCL_DATATYPES_H_

#include <nccl.h>

#include <cstddef>
#include <cstdint>

namespace xtsim {
namespace nccl {

// The largest element (int64/uint64/double): scalars of ncclRedOpCreatePreMulSum fit in this.
inline constexpr size_t kMaxElementSize = 8;

struct TypeKernels {
  size_t size;       // bytes per element
  const char* name;  // "float32", "bfloat16", ...
  bool is_float;
  // dst[i] = src[i] * scalar, where scalar points at one element of this type. dst may equal src.
  void (*scale)(void* dst, const void* src, size_t count, const void* scalar);
  // dst[i] = srcs[0][i] op srcs[1][i] op ... (left to right). op is ncclSum, ncclProd, ncclMax or
  // ncclMin. dst may alias none of the sources.
  void (*reduce)(void* dst, const void* const* srcs, int nsrcs, size_t count, ncclRedOp_t op);
  // dst[i] /= divisor, truncating (the integer half of ncclAvg).
  void (*divide)(void* dst, size_t count, int divisor);
  // Stores 1/n as one element of this type (the floating-point half of ncclAvg).
  void (*reciprocal)(void* out, int n);
};

// The kernels of `type`, or nullptr when `type` is not a valid ncclDataType_t.
const TypeKernels* KernelsFor(ncclDataType_t type);

// "ncclSum", "ncclAvg", ... or "PreMulSum" for a dynamic operator.
const char* RedOpName(ncclRedOp_t op);

}  // namespace nccl
}  // namespace xtsim

#endif  // XTIMER_TEST_GPUSIM_NCCL_DATATYPES_H_
