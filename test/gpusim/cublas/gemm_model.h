// The GEMM cost model and type rules shared by the simulated cuBLAS and cuBLASLt.
//
// A GEMM computes nothing: it occupies its stream for 2·m·n·k·batch / TFLOPS(dtype) (four times
// that for complex types), through the runtime's enqueue_busy with XTSIM_OP_COMPUTE, so the
// runtime's slow-rank factor applies. The dtype is named by the inputs' type (A), refined by the
// compute type for FP32 inputs (TF32 / FP16 / BF16 down-conversion). See docs/gpusim-cublas.md.
#ifndef XTIMER_TEST_GPUSIM_CUBLAS_GEMM_MODEL_H_
#define XTIMER_TEST_GPUSIM_CUBLAS_GEMM_MODEL_H_

#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <library_types.h>

#include <cstdint>

namespace xtsim {
namespace blas {

// The rate classes of the model; each has an XTIMER_SIM_TFLOPS_<NAME> knob.
enum class Dtype { kFp64, kFp32, kTf32, kFp16, kBf16, kFp8, kInt8 };
inline constexpr int kDtypeCount = 7;

// "fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8".
const char* DtypeName(Dtype dtype);

// Dense TFLOPS per rate class, read from the environment when a handle is created.
struct Rates {
  double tflops[kDtypeCount];
  // NVIDIA_TF32_OVERRIDE=0 turns TF32 off in the real libraries; FP32 GEMMs then run at the FP32
  // rate whatever the math mode or compute type asks for.
  bool tf32_disabled;

  // XTIMER_SIM_TFLOPS_FP64 (default 60), _FP32 (60), _TF32 (400), _FP16 (800), _BF16 (800),
  // _FP8 (1600), _INT8 (1600). A value that is not a positive number is fatal.
  static Rates FromEnv();
  double For(Dtype dtype) const { return tflops[static_cast<int>(dtype)]; }
};

// Which entry point asks: the supported type combinations differ (FP8 and INT8 output exist in
// cuBLASLt only; cublasGemmEx has no scale-type argument).
enum class Api { kGemmEx, kLt };

// Raw values as callers pass them (a C caller may pass anything, so they are ints until checked):
// a cublasComputeType_t and cudaDataType_t values.
struct GemmTypes {
  int compute;
  int scale;  // ignored for Api::kGemmEx
  int a, b, c, d;
};

// What the model needs to know about a supported type combination.
struct GemmKind {
  Dtype dtype;
  int flop_factor;  // 1 for real types, 4 for complex ones
};

// Checks a type combination against the documented tables. Returns CUBLAS_STATUS_SUCCESS and
// fills *kind; CUBLAS_STATUS_INVALID_VALUE when a value is not a member of its enum;
// CUBLAS_STATUS_NOT_SUPPORTED when the values are valid but the combination is not supported.
cublasStatus_t ClassifyTypes(Api api, const GemmTypes& types, const Rates& rates, GemmKind* kind);

// The compute type a cuBLAS handle's math mode turns CUBLAS_COMPUTE_32F into (cublas<t>gemm and
// cublasGemmEx): TF32_TENSOR_OP -> 32F_FAST_TF32, TENSOR_OP (deprecated) -> 32F_FAST_16F,
// FP32_EMULATED_BF16X9 -> 32F_EMULATED_16BFX9. Every other compute type is returned unchanged.
int ApplyMathMode(int compute, cublasMath_t mode);

bool ValidOperation(int op);  // CUBLAS_OP_N, _T or _C

struct GemmShape {
  cublasOperation_t transa;
  cublasOperation_t transb;
  int64_t m, n, k;
  int64_t batch;
};

// Modelled busy time in nanoseconds: 2·m·n·k·batch·flop_factor / TFLOPS, rounded to the nearest
// nanosecond, at least 1 ns when there is any work. 0 when m, n, k or batch is 0.
int64_t GemmDurationNs(const GemmShape& shape, const GemmKind& kind, const Rates& rates);

// "<prefix>_<dtype>_<opA><opB>" (for example gpusim_gemm_bf16_tn); "_k0" is appended when k is 0.
void GemmOpName(const char* prefix, const GemmShape& shape, const GemmKind& kind, char* out,
                int out_size);

// Puts one validated GEMM on `stream`: nothing when m, n or batch is 0; a zero-length operation
// when k is 0 (a real GPU still scales C by beta); else a busy period of GemmDurationNs.
// Returns CUBLAS_STATUS_EXECUTION_FAILED when the runtime refuses the stream.
cublasStatus_t EnqueueGemm(cudaStream_t stream, const char* prefix, const GemmShape& shape,
                           const GemmKind& kind, const Rates& rates);

}  // namespace blas
}  // namespace xtsim

#endif  // XTIMER_TEST_GPUSIM_CUBLAS_GEMM_MODEL_H_
