// The simulated libcublas.so.13: handles, their modes and the GEMM family. Every GEMM entry point
// is a thin wrapper, generated from the tables at the end of this file, around one function
// (Gemm) that validates like the real library and puts a modelled busy period on the handle's
// stream through the runtime's private table (gemm_model.h). Entry points not defined here fall
// back to the generated "not implemented" stubs (test/gpusim/gen_stubs.py).
#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

#include "test/gpusim/common/call_cost.h"
#include "test/gpusim/common/sim_env.h"
#include "test/gpusim/cublas/gemm_model.h"
#include "test/gpusim/cublas/object_registry.h"
#include "test/gpusim/cublas/status.h"
#include "test/gpusim/sim_api_client.h"

// The opaque type behind cublasHandle_t (declared, never defined, by cublas_api.h).
struct cublasContext {
  static constexpr uint32_t kMagic = 0x58424c53;  // "XBLS"
  static constexpr uint32_t kDead = 0xdeadb1a5;

  uint32_t magic = kMagic;
  int device = 0;
  cudaStream_t stream = nullptr;
  void* workspace = nullptr;  // user workspace (cublasSetWorkspace); null: the library's own
  size_t workspace_size = 0;
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
  cublasAtomicsMode_t atomics_mode = CUBLAS_ATOMICS_NOT_ALLOWED;
  cublasMath_t math_mode = CUBLAS_DEFAULT_MATH;
  int sm_count_target = 0;
  xtsim::blas::Rates rates{};
};

namespace xtsim {
namespace blas {
namespace {

ObjectRegistry& Handles() {
  static ObjectRegistry* registry = new ObjectRegistry;
  return *registry;
}

cublasContext* Live(cublasHandle_t handle) { return LiveObject(Handles(), handle); }

// cublasLoggerConfigure / cublasSetLoggerCallback. When logging is on, each GEMM writes one line.
struct Logger {
  std::mutex mu;
  bool on = false;
  bool to_stdout = false;
  bool to_stderr = false;
  std::string file;
  cublasLogCallback callback = nullptr;
};

Logger& Log() {
  static Logger* logger = new Logger;
  return *logger;
}

void LogCall(const char* line) {
  Logger& log = Log();
  std::lock_guard<std::mutex> lock(log.mu);
  if (!log.on) return;
  if (log.callback != nullptr) log.callback(line);
  if (log.to_stdout) fprintf(stdout, "%s\n", line);
  if (log.to_stderr) fprintf(stderr, "%s\n", line);
  if (!log.file.empty()) {
    if (FILE* f = fopen(log.file.c_str(), "a")) {
      fprintf(f, "%s\n", line);
      fclose(f);
    }
  }
}

bool ValidAlgo(int algo) {
  return algo == CUBLAS_GEMM_DEFAULT || (algo >= CUBLAS_GEMM_ALGO0 && algo <= CUBLAS_GEMM_ALGO23) ||
         (algo >= CUBLAS_GEMM_DEFAULT_TENSOR_OP && algo <= CUBLAS_GEMM_ALGO15_TENSOR_OP) ||
         algo == CUBLAS_GEMM_AUTOTUNE;
}

bool ValidMathMode(cublasMath_t mode) {
  int base = static_cast<int>(mode) & ~CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
  return base == CUBLAS_DEFAULT_MATH || base == CUBLAS_TENSOR_OP_MATH ||
         base == CUBLAS_PEDANTIC_MATH || base == CUBLAS_TF32_TENSOR_OP_MATH ||
         base == CUBLAS_FP32_EMULATED_BF16X9_MATH || base == CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH;
}

// One GEMM call of any entry point, widened to 64 bits. A plain GEMM has batch 1. Enum arguments
// are kept as the ints the caller passed until they are checked.
struct GemmCall {
  const char* api;
  int transa;
  int transb;
  int64_t m, n, k;
  int64_t lda, ldb, ldc;
  int64_t batch;
  int a_type, b_type, c_type;  // cudaDataType_t
  int compute;                 // cublasComputeType_t
  int algo;                    // cublasGemmAlgo_t
};

// The order of checks follows the real library: handle, then dimensions and leading dimensions
// (CUBLAS_STATUS_INVALID_VALUE), then types and algorithm (INVALID_VALUE for a value outside its
// enum, NOT_SUPPORTED for an unsupported combination or algorithm).
cublasStatus_t Gemm(cublasHandle_t handle, const GemmCall& g) {
  ChargeCall(CallCost::kLaunch);  // its kernel's launch (call_cost.h)
  cublasContext* ctx = Live(handle);
  if (ctx == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!ValidOperation(g.transa) || !ValidOperation(g.transb) || g.m < 0 || g.n < 0 || g.k < 0 ||
      g.batch < 0) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  int64_t a_rows = g.transa == CUBLAS_OP_N ? g.m : g.k;
  int64_t b_rows = g.transb == CUBLAS_OP_N ? g.k : g.n;
  if (g.lda < std::max<int64_t>(1, a_rows) || g.ldb < std::max<int64_t>(1, b_rows) ||
      g.ldc < std::max<int64_t>(1, g.m)) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  // The math mode changes how FP32 inputs are computed (TF32 tensor cores, ...).
  int compute = g.compute;
  if (g.a_type == CUDA_R_32F || g.a_type == CUDA_C_32F) {
    compute = ApplyMathMode(compute, ctx->math_mode);
  }
  GemmKind kind;
  GemmTypes types{compute, CUDA_R_32F, g.a_type, g.b_type, g.c_type, g.c_type};
  cublasStatus_t status = ClassifyTypes(Api::kGemmEx, types, ctx->rates, &kind);
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  if (!ValidAlgo(g.algo)) return CUBLAS_STATUS_NOT_SUPPORTED;

  char line[256];
  snprintf(line, sizeof(line),
           "gpusim cuBLAS: %s transa=%d transb=%d m=%lld n=%lld k=%lld batch=%lld %s", g.api,
           g.transa, g.transb, static_cast<long long>(g.m), static_cast<long long>(g.n),
           static_cast<long long>(g.k), static_cast<long long>(g.batch), DtypeName(kind.dtype));
  LogCall(line);
  GemmShape shape{static_cast<cublasOperation_t>(g.transa),
                  static_cast<cublasOperation_t>(g.transb),
                  g.m,
                  g.n,
                  g.k,
                  g.batch};
  return EnqueueGemm(ctx->stream, "gpusim_gemm", shape, kind, ctx->rates);
}

// The element type and default compute type of cublas<t>gemm*.
template <typename T>
struct Typed;
template <>
struct Typed<float> {
  static constexpr int kType = CUDA_R_32F;
  static constexpr int kCompute = CUBLAS_COMPUTE_32F;
};
template <>
struct Typed<double> {
  static constexpr int kType = CUDA_R_64F;
  static constexpr int kCompute = CUBLAS_COMPUTE_64F;
};
template <>
struct Typed<__half> {
  static constexpr int kType = CUDA_R_16F;
  static constexpr int kCompute = CUBLAS_COMPUTE_16F;
};

template <typename T>
cublasStatus_t TypedGemm(const char* api, cublasHandle_t handle, int transa, int transb, int64_t m,
                         int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc,
                         int64_t batch) {
  return Gemm(handle, {api, transa, transb, m, n, k, lda, ldb, ldc, batch, Typed<T>::kType,
                       Typed<T>::kType, Typed<T>::kType, Typed<T>::kCompute, CUBLAS_GEMM_DEFAULT});
}

cublasStatus_t ExGemm(const char* api, cublasHandle_t handle, int transa, int transb, int64_t m,
                      int64_t n, int64_t k, int a_type, int64_t lda, int b_type, int64_t ldb,
                      int c_type, int64_t ldc, int64_t batch, int compute, int algo) {
  return Gemm(handle, {api, transa, transb, m, n, k, lda, ldb, ldc, batch, a_type, b_type, c_type,
                       compute, algo});
}

}  // namespace
}  // namespace blas
}  // namespace xtsim

using xtsim::blas::Live;

extern "C" {

// ---- Handles and modes ----

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  // "The CUDA Runtime initialization failed", e.g. no device (XTIMER_SIM_DEVICE_COUNT=0).
  if (xtsim::Runtime().stream_check(nullptr, nullptr) != cudaSuccess) {
    return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  auto* ctx = new cublasContext;
  ctx->device = xtsim::Runtime().current_device();
  ctx->rates = xtsim::blas::Rates::FromEnv();
  xtsim::blas::Handles().Add(ctx);
  *handle = ctx;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  if (handle == nullptr || !xtsim::blas::Handles().Remove(handle)) {
    return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  handle->magic = cublasContext::kDead;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

// Like the real library, this works without a handle (cublasGetVersion(NULL, &v) is common).
cublasStatus_t cublasGetVersion_v2(cublasHandle_t, int* version) {
  if (version == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *version = CUBLAS_VERSION;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetProperty(libraryPropertyType type, int* value) {
  return xtsim::blas::GetProperty(type, value);
}

size_t cublasGetCudartVersion(void) { return CUDART_VERSION; }

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace,
                                     size_t workspaceSizeInBytes) {
  cublasContext* ctx = Live(handle);
  if (ctx == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  // The documented requirement: a user workspace is aligned to at least 256 bytes.
  if (reinterpret_cast<uintptr_t>(workspace) % 256 != 0) return CUBLAS_STATUS_INVALID_VALUE;
  ctx->workspace = workspace;
  ctx->workspace_size = workspace == nullptr ? 0 : workspaceSizeInBytes;
  return CUBLAS_STATUS_SUCCESS;
}

// The stream is not checked here (the real library does not either); a GEMM on an invalid stream
// returns CUBLAS_STATUS_EXECUTION_FAILED. Setting a stream resets the workspace to the library's
// own, as documented.
cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId) {
  cublasContext* ctx = Live(handle);
  if (ctx == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  ctx->stream = streamId;
  ctx->workspace = nullptr;
  ctx->workspace_size = 0;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* streamId) {
  cublasContext* ctx = Live(handle);
  if (ctx == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (streamId == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *streamId = ctx->stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t* mode) {
  cublasContext* ctx = Live(handle);
  if (ctx == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = ctx->pointer_mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode) {
  cublasContext* ctx = Live(handle);
  if (ctx == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode != CUBLAS_POINTER_MODE_HOST && mode != CUBLAS_POINTER_MODE_DEVICE) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  ctx->pointer_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t* mode) {
  cublasContext* ctx = Live(handle);
  if (ctx == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = ctx->atomics_mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t mode) {
  cublasContext* ctx = Live(handle);
  if (ctx == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode != CUBLAS_ATOMICS_NOT_ALLOWED && mode != CUBLAS_ATOMICS_ALLOWED) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  ctx->atomics_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
  cublasContext* ctx = Live(handle);
  if (ctx == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = ctx->math_mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  cublasContext* ctx = Live(handle);
  if (ctx == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!xtsim::blas::ValidMathMode(mode)) return CUBLAS_STATUS_INVALID_VALUE;
  ctx->math_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetSmCountTarget(cublasHandle_t handle, int* smCountTarget) {
  cublasContext* ctx = Live(handle);
  if (ctx == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (smCountTarget == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *smCountTarget = ctx->sm_count_target;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetSmCountTarget(cublasHandle_t handle, int smCountTarget) {
  cublasContext* ctx = Live(handle);
  if (ctx == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (smCountTarget < 0) return CUBLAS_STATUS_INVALID_VALUE;
  ctx->sm_count_target = smCountTarget;
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusName(cublasStatus_t status) { return xtsim::blas::StatusName(status); }

const char* cublasGetStatusString(cublasStatus_t status) {
  return xtsim::blas::StatusString(status);
}

cublasStatus_t cublasLoggerConfigure(int logIsOn, int logToStdOut, int logToStdErr,
                                     const char* logFileName) {
  xtsim::blas::Logger& log = xtsim::blas::Log();
  std::lock_guard<std::mutex> lock(log.mu);
  log.on = logIsOn != 0;
  log.to_stdout = logToStdOut != 0;
  log.to_stderr = logToStdErr != 0;
  log.file = logFileName != nullptr ? logFileName : "";
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetLoggerCallback(cublasLogCallback userCallback) {
  xtsim::blas::Logger& log = xtsim::blas::Log();
  std::lock_guard<std::mutex> lock(log.mu);
  log.callback = userCallback;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetLoggerCallback(cublasLogCallback* userCallback) {
  if (userCallback == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  xtsim::blas::Logger& log = xtsim::blas::Log();
  std::lock_guard<std::mutex> lock(log.mu);
  *userCallback = log.callback;
  return CUBLAS_STATUS_SUCCESS;
}

// ---- GEMMs ----
//
// Each row of a table below names the 32-bit entry point; the `_64` twin (int64_t sizes) is
// generated beside it. The parameter lists are the ABI (cublas_api.h declares each function, so
// the compiler rejects any mismatch); the bodies only widen the arguments and call Gemm. Alpha,
// beta and the matrices are never read: the simulator models time, not values.

// cublas<t>gemm, cublas<t>gemmBatched, cublas<t>gemmStridedBatched: (T, plain, batched, strided).
#define XTSIM_TYPED_GEMMS(X)                                               \
  X(float, cublasSgemm_v2, cublasSgemmBatched, cublasSgemmStridedBatched)  \
  X(double, cublasDgemm_v2, cublasDgemmBatched, cublasDgemmStridedBatched) \
  X(__half, cublasHgemm, cublasHgemmBatched, cublasHgemmStridedBatched)

#define XTSIM_DEFINE_TYPED_GEMM(T, NAME, I)                                                      \
  cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, \
                      I m, I n, I k, const T* alpha, const T* A, I lda, const T* B, I ldb,       \
                      const T* beta, T* C, I ldc) {                                              \
    return xtsim::blas::TypedGemm<T>(#NAME, handle, transa, transb, m, n, k, lda, ldb, ldc, 1);  \
  }

#define XTSIM_DEFINE_TYPED_GEMM_BATCHED(T, NAME, I)                                              \
  cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, \
                      I m, I n, I k, const T* alpha, const T* const Aarray[], I lda,             \
                      const T* const Barray[], I ldb, const T* beta, T* const Carray[], I ldc,   \
                      I batchCount) {                                                            \
    return xtsim::blas::TypedGemm<T>(#NAME, handle, transa, transb, m, n, k, lda, ldb, ldc,      \
                                     batchCount);                                                \
  }

#define XTSIM_DEFINE_TYPED_GEMM_STRIDED(T, NAME, I)                                              \
  cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, \
                      I m, I n, I k, const T* alpha, const T* A, I lda, long long int strideA,   \
                      const T* B, I ldb, long long int strideB, const T* beta, T* C, I ldc,      \
                      long long int strideC, I batchCount) {                                     \
    return xtsim::blas::TypedGemm<T>(#NAME, handle, transa, transb, m, n, k, lda, ldb, ldc,      \
                                     batchCount);                                                \
  }

#define XTSIM_DEFINE_TYPED_FAMILY(T, PLAIN, BATCHED, STRIDED) \
  XTSIM_DEFINE_TYPED_GEMM(T, PLAIN, int)                      \
  XTSIM_DEFINE_TYPED_GEMM(T, PLAIN##_64, int64_t)             \
  XTSIM_DEFINE_TYPED_GEMM_BATCHED(T, BATCHED, int)            \
  XTSIM_DEFINE_TYPED_GEMM_BATCHED(T, BATCHED##_64, int64_t)   \
  XTSIM_DEFINE_TYPED_GEMM_STRIDED(T, STRIDED, int)            \
  XTSIM_DEFINE_TYPED_GEMM_STRIDED(T, STRIDED##_64, int64_t)

XTSIM_TYPED_GEMMS(XTSIM_DEFINE_TYPED_FAMILY)

// cublasGemmEx, cublasGemmBatchedEx, cublasGemmStridedBatchedEx.
#define XTSIM_DEFINE_GEMM_EX(NAME, I)                                                             \
  cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,  \
                      I m, I n, I k, const void* alpha, const void* A, cudaDataType Atype, I lda, \
                      const void* B, cudaDataType Btype, I ldb, const void* beta, void* C,        \
                      cudaDataType Ctype, I ldc, cublasComputeType_t computeType,                 \
                      cublasGemmAlgo_t algo) {                                                    \
    return xtsim::blas::ExGemm(#NAME, handle, transa, transb, m, n, k, Atype, lda, Btype, ldb,    \
                               Ctype, ldc, 1, computeType, algo);                                 \
  }

#define XTSIM_DEFINE_GEMM_BATCHED_EX(NAME, I)                                                    \
  cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, \
                      I m, I n, I k, const void* alpha, const void* const Aarray[],              \
                      cudaDataType Atype, I lda, const void* const Barray[], cudaDataType Btype, \
                      I ldb, const void* beta, void* const Carray[], cudaDataType Ctype, I ldc,  \
                      I batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo) {    \
    return xtsim::blas::ExGemm(#NAME, handle, transa, transb, m, n, k, Atype, lda, Btype, ldb,   \
                               Ctype, ldc, batchCount, computeType, algo);                       \
  }

#define XTSIM_DEFINE_GEMM_STRIDED_EX(NAME, I)                                                      \
  cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,   \
                      I m, I n, I k, const void* alpha, const void* A, cudaDataType Atype, I lda,  \
                      long long int strideA, const void* B, cudaDataType Btype, I ldb,             \
                      long long int strideB, const void* beta, void* C, cudaDataType Ctype, I ldc, \
                      long long int strideC, I batchCount, cublasComputeType_t computeType,        \
                      cublasGemmAlgo_t algo) {                                                     \
    return xtsim::blas::ExGemm(#NAME, handle, transa, transb, m, n, k, Atype, lda, Btype, ldb,     \
                               Ctype, ldc, batchCount, computeType, algo);                         \
  }

XTSIM_DEFINE_GEMM_EX(cublasGemmEx, int)
XTSIM_DEFINE_GEMM_EX(cublasGemmEx_64, int64_t)
XTSIM_DEFINE_GEMM_BATCHED_EX(cublasGemmBatchedEx, int)
XTSIM_DEFINE_GEMM_BATCHED_EX(cublasGemmBatchedEx_64, int64_t)
XTSIM_DEFINE_GEMM_STRIDED_EX(cublasGemmStridedBatchedEx, int)
XTSIM_DEFINE_GEMM_STRIDED_EX(cublasGemmStridedBatchedEx_64, int64_t)

}  // extern "C"
