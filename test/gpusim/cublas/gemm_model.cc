#include "test/gpusim/cublas/gemm_model.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "test/gpusim/common/sim_env.h"
#include "test/gpusim/sim_api_client.h"

namespace xtsim {
namespace blas {
namespace {

struct DtypeInfo {
  const char* name;
  const char* env;
  double default_tflops;
};

// Indexed by Dtype.
constexpr DtypeInfo kDtypes[kDtypeCount] = {
    {"fp64", "XTIMER_SIM_TFLOPS_FP64", 60},   {"fp32", "XTIMER_SIM_TFLOPS_FP32", 60},
    {"tf32", "XTIMER_SIM_TFLOPS_TF32", 400},  {"fp16", "XTIMER_SIM_TFLOPS_FP16", 800},
    {"bf16", "XTIMER_SIM_TFLOPS_BF16", 800},  {"fp8", "XTIMER_SIM_TFLOPS_FP8", 1600},
    {"int8", "XTIMER_SIM_TFLOPS_INT8", 1600},
};

// Compute types as bits (every cublasComputeType_t lies in [64, 80)).
constexpr uint32_t Bit(int c) { return 1u << (c - 64); }
constexpr uint32_t kC16F = Bit(CUBLAS_COMPUTE_16F) | Bit(CUBLAS_COMPUTE_16F_PEDANTIC);
constexpr uint32_t kC32I = Bit(CUBLAS_COMPUTE_32I) | Bit(CUBLAS_COMPUTE_32I_PEDANTIC);
constexpr uint32_t kC32F = Bit(CUBLAS_COMPUTE_32F) | Bit(CUBLAS_COMPUTE_32F_PEDANTIC);
// FP32 inputs also accept the down-converting and emulated compute types.
constexpr uint32_t kC32FAny =
    kC32F | Bit(CUBLAS_COMPUTE_32F_FAST_16F) | Bit(CUBLAS_COMPUTE_32F_FAST_16BF) |
    Bit(CUBLAS_COMPUTE_32F_FAST_TF32) | Bit(CUBLAS_COMPUTE_32F_EMULATED_16BFX9);
constexpr uint32_t kC64F = Bit(CUBLAS_COMPUTE_64F) | Bit(CUBLAS_COMPUTE_64F_PEDANTIC) |
                           Bit(CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT);
constexpr uint32_t kValidCompute = kC16F | kC32I | kC32FAny | kC64F;

constexpr unsigned kGemmEx = 1, kLt = 2, kBoth = kGemmEx | kLt;

// One supported combination. A and B share a type; cublasGemmEx has one type for C and D and no
// scale type. FP8 is handled by IsFp8Combination below.
struct TypeRow {
  uint32_t computes;
  int scale;
  int ab;
  int c;
  int d;
  unsigned apis;
};

// From the cublasGemmEx and cublasLtMatmul documentation (CUDA 13).
constexpr TypeRow kTypeTable[] = {
    {kC16F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, kBoth},
    {kC32I, CUDA_R_32I, CUDA_R_8I, CUDA_R_32I, CUDA_R_32I, kBoth},
    {kC32I, CUDA_R_32F, CUDA_R_8I, CUDA_R_8I, CUDA_R_8I, kLt},
    {kC32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, kBoth},
    {kC32F, CUDA_R_32F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, kBoth},
    {kC32F, CUDA_R_32F, CUDA_R_8I, CUDA_R_32F, CUDA_R_32F, kBoth},
    {kC32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_32F, CUDA_R_32F, kBoth},
    {kC32F, CUDA_R_32F, CUDA_R_16F, CUDA_R_32F, CUDA_R_32F, kBoth},
    {kC32FAny, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, kBoth},
    {kC32F, CUDA_C_32F, CUDA_C_8I, CUDA_C_32F, CUDA_C_32F, kBoth},
    {kC32FAny, CUDA_C_32F, CUDA_C_32F, CUDA_C_32F, CUDA_C_32F, kBoth},
    {kC64F, CUDA_R_64F, CUDA_R_64F, CUDA_R_64F, CUDA_R_64F, kBoth},
    {kC64F, CUDA_C_64F, CUDA_C_64F, CUDA_C_64F, CUDA_C_64F, kBoth},
};

bool IsFp8(int t) { return t == CUDA_R_8F_E4M3 || t == CUDA_R_8F_E5M2; }

// cuBLASLt FP8: A and B in E4M3 or E5M2 (not both E5M2), FP32 compute and scale, C in BF16,
// FP16 or FP32, D the type of C or (for 16-bit C) an FP8 type.
bool IsFp8Combination(const GemmTypes& t) {
  if ((kC32F & Bit(t.compute)) == 0 || t.scale != CUDA_R_32F) return false;
  if (!IsFp8(t.a) || !IsFp8(t.b)) return false;
  if (t.a == CUDA_R_8F_E5M2 && t.b == CUDA_R_8F_E5M2) return false;
  if (t.c != CUDA_R_16BF && t.c != CUDA_R_16F && t.c != CUDA_R_32F) return false;
  return t.d == t.c || (t.c != CUDA_R_32F && IsFp8(t.d));
}

bool ValidDataType(int t) { return t >= CUDA_R_32F && t <= CUDA_R_4F_E2M1; }

bool ValidComputeType(int c) { return c >= 64 && c < 80 && (kValidCompute & Bit(c)) != 0; }

Dtype RateClass(int a, int compute, const Rates& rates) {
  switch (a) {
    case CUDA_R_64F:
    case CUDA_C_64F:
      return Dtype::kFp64;
    case CUDA_R_16F:
      return Dtype::kFp16;
    case CUDA_R_16BF:
      return Dtype::kBf16;
    case CUDA_R_8I:
    case CUDA_C_8I:
      return Dtype::kInt8;
    case CUDA_R_8F_E4M3:
    case CUDA_R_8F_E5M2:
      return Dtype::kFp8;
    default:  // CUDA_R_32F, CUDA_C_32F
      switch (compute) {
        case CUBLAS_COMPUTE_32F_FAST_TF32:
          return rates.tf32_disabled ? Dtype::kFp32 : Dtype::kTf32;
        case CUBLAS_COMPUTE_32F_FAST_16F:
          return Dtype::kFp16;
        case CUBLAS_COMPUTE_32F_FAST_16BF:
          return Dtype::kBf16;
        default:
          return Dtype::kFp32;
      }
  }
}

bool IsComplex(int t) { return t == CUDA_C_8I || t == CUDA_C_32F || t == CUDA_C_64F; }

char OpChar(cublasOperation_t op) {
  switch (op) {
    case CUBLAS_OP_N:
      return 'n';
    case CUBLAS_OP_T:
      return 't';
    default:
      return 'c';
  }
}

}  // namespace

const char* DtypeName(Dtype dtype) { return kDtypes[static_cast<int>(dtype)].name; }

Rates Rates::FromEnv() {
  Rates rates{};
  for (int i = 0; i < kDtypeCount; ++i) {
    double v = EnvDouble(kDtypes[i].env, kDtypes[i].default_tflops);
    if (!(v > 0)) Fatal("%s=%g must be a positive number of TFLOPS", kDtypes[i].env, v);
    rates.tflops[i] = v;
  }
  const char* tf32 = getenv("NVIDIA_TF32_OVERRIDE");
  rates.tf32_disabled = tf32 != nullptr && strcmp(tf32, "0") == 0;
  return rates;
}

cublasStatus_t ClassifyTypes(Api api, const GemmTypes& t, const Rates& rates, GemmKind* kind) {
  bool lt = api == Api::kLt;
  if (!ValidComputeType(t.compute) || !ValidDataType(t.a) || !ValidDataType(t.b) ||
      !ValidDataType(t.c) || (lt && (!ValidDataType(t.d) || !ValidDataType(t.scale)))) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  bool supported = lt && IsFp8Combination(t);
  for (const TypeRow& row : kTypeTable) {
    if (supported) break;
    supported = (row.apis & (lt ? kLt : kGemmEx)) != 0 && (row.computes & Bit(t.compute)) != 0 &&
                t.a == row.ab && t.b == row.ab && t.c == row.c &&
                (!lt || (t.d == row.d && t.scale == row.scale));
  }
  if (!supported) return CUBLAS_STATUS_NOT_SUPPORTED;
  kind->dtype = RateClass(t.a, t.compute, rates);
  kind->flop_factor = IsComplex(t.a) ? 4 : 1;
  return CUBLAS_STATUS_SUCCESS;
}

int ApplyMathMode(int compute, cublasMath_t mode) {
  if (compute != CUBLAS_COMPUTE_32F) return compute;
  switch (static_cast<int>(mode) & 0xf) {
    case CUBLAS_TF32_TENSOR_OP_MATH:
      return CUBLAS_COMPUTE_32F_FAST_TF32;
    case CUBLAS_TENSOR_OP_MATH:
      return CUBLAS_COMPUTE_32F_FAST_16F;
    case CUBLAS_FP32_EMULATED_BF16X9_MATH:
      return CUBLAS_COMPUTE_32F_EMULATED_16BFX9;
    default:
      return compute;
  }
}

bool ValidOperation(int op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; }

int64_t GemmDurationNs(const GemmShape& shape, const GemmKind& kind, const Rates& rates) {
  if (shape.m == 0 || shape.n == 0 || shape.k == 0 || shape.batch == 0) return 0;
  double flops = 2.0 * static_cast<double>(shape.m) * static_cast<double>(shape.n) *
                 static_cast<double>(shape.k) * static_cast<double>(shape.batch) * kind.flop_factor;
  // TFLOPS = 1e12 flop/s = 1e3 flop/ns.
  double ns = flops / (rates.For(kind.dtype) * 1e3);
  if (ns > 9e18) return INT64_MAX / 2;  // absurd shapes: a practically endless kernel
  int64_t rounded = std::llround(ns);
  return rounded > 0 ? rounded : 1;
}

void GemmOpName(const char* prefix, const GemmShape& shape, const GemmKind& kind, char* out,
                int out_size) {
  snprintf(out, static_cast<size_t>(out_size), "%s_%s_%c%c%s", prefix, DtypeName(kind.dtype),
           OpChar(shape.transa), OpChar(shape.transb), shape.k == 0 ? "_k0" : "");
}

cublasStatus_t EnqueueGemm(cudaStream_t stream, const char* prefix, const GemmShape& shape,
                           const GemmKind& kind, const Rates& rates) {
  if (shape.m == 0 || shape.n == 0 || shape.batch == 0) return CUBLAS_STATUS_SUCCESS;
  char name[96];
  GemmOpName(prefix, shape, kind, name, sizeof(name));
  int64_t ns = GemmDurationNs(shape, kind, rates);
  cudaError_t err = Runtime().enqueue_busy(stream, name, ns, XTSIM_OP_COMPUTE);
  if (err != cudaSuccess) {
    Debug("%s on stream %p failed: cuda error %d", name, static_cast<void*>(stream),
          static_cast<int>(err));
    return CUBLAS_STATUS_EXECUTION_FAILED;
  }
  Debug("%s m=%lld n=%lld k=%lld batch=%lld: %lld ns on stream %p", name,
        static_cast<long long>(shape.m), static_cast<long long>(shape.n),
        static_cast<long long>(shape.k), static_cast<long long>(shape.batch),
        static_cast<long long>(ns), static_cast<void*>(stream));
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace blas
}  // namespace xtsim
