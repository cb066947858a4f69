// The simulated libcublasLt.so.13: handles, descriptors (lt_descriptors.h), the heuristic query
// and cublasLtMatmul. A matmul is validated like the real library, then occupies its stream for
// the modelled time (gemm_model.h). Entry points not defined here fall back to the generated
// "not implemented" stubs (test/gpusim/gen_stubs.py).
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "test/gpusim/common/sim_env.h"
#include "test/gpusim/cublas/gemm_model.h"
#include "test/gpusim/cublas/lt_descriptors.h"
#include "test/gpusim/cublas/object_registry.h"
#include "test/gpusim/cublas/status.h"
#include "test/gpusim/sim_api_client.h"

// The opaque type behind cublasLtHandle_t (declared, never defined, by cublasLt.h).
struct cublasLtContext {
  static constexpr uint32_t kMagic = 0x584c5448;  // "XLTH"
  static constexpr uint32_t kDead = 0xdeadb175;

  uint32_t magic = kMagic;
  xtsim::blas::Rates rates{};
  // XTIMER_SIM_CUBLASLT_WORKSPACE: the workspace every modelled algorithm needs.
  uint64_t min_workspace = 0;
};

namespace xtsim {
namespace blas {
namespace {

ObjectRegistry& Handles() {
  static ObjectRegistry* registry = new ObjectRegistry;
  return *registry;
}

cublasLtContext* Live(cublasLtHandle_t handle) { return LiveObject(Handles(), handle); }

// ---- Logging (cublasLtLogger*): API-trace lines for cublasLtMatmul ----

constexpr int kLogApiTrace = 16;  // mask bit of level 5, "API Trace"

struct Logger {
  std::mutex mu;
  int mask = 0;
  bool disabled = false;
  cublasLtLoggerCallback_t callback = nullptr;
  FILE* file = nullptr;
  bool own_file = false;
};

Logger& Log() {
  static Logger* logger = new Logger;
  return *logger;
}

void LogApi(const char* function, const char* message) {
  Logger& log = Log();
  std::lock_guard<std::mutex> lock(log.mu);
  if (log.disabled || (log.mask & kLogApiTrace) == 0) return;
  if (log.callback != nullptr) log.callback(5, function, message);
  if (log.file != nullptr) {
    fprintf(log.file, "[cublasLt][gpusim][Api][%s] %s\n", function, message);
    fflush(log.file);
  }
}

// cublasLtHeuristicsCache{Get,Set}Capacity: remembered, not used (8192 is the real default).
std::atomic<size_t> heuristics_cache_capacity{8192};

void SetLogFile(FILE* file, bool own) {
  Logger& log = Log();
  std::lock_guard<std::mutex> lock(log.mu);
  if (log.own_file && log.file != nullptr) fclose(log.file);
  log.file = file;
  log.own_file = own;
}

// ---- The matmul problem ----

bool ValidEpilogue(uint32_t e) {
  switch (e) {
    case CUBLASLT_EPILOGUE_DEFAULT:
    case CUBLASLT_EPILOGUE_RELU:
    case CUBLASLT_EPILOGUE_RELU_AUX:
    case CUBLASLT_EPILOGUE_BIAS:
    case CUBLASLT_EPILOGUE_RELU_BIAS:
    case CUBLASLT_EPILOGUE_RELU_AUX_BIAS:
    case CUBLASLT_EPILOGUE_DRELU:
    case CUBLASLT_EPILOGUE_DRELU_BGRAD:
    case CUBLASLT_EPILOGUE_GELU:
    case CUBLASLT_EPILOGUE_GELU_AUX:
    case CUBLASLT_EPILOGUE_GELU_BIAS:
    case CUBLASLT_EPILOGUE_GELU_AUX_BIAS:
    case CUBLASLT_EPILOGUE_DGELU:
    case CUBLASLT_EPILOGUE_DGELU_BGRAD:
    case CUBLASLT_EPILOGUE_BGRADA:
    case CUBLASLT_EPILOGUE_BGRADB:
      return true;
    default:
      return false;
  }
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A layout's dimensions, if representable, and whether its leading dimension is large enough
// for its memory order (the rules cublasLt.h gives for each cublasLtOrder_t).
bool ValidLayout(const MatrixLayout& l) {
  if (l.rows > static_cast<uint64_t>(INT32_MAX) || l.cols > static_cast<uint64_t>(INT32_MAX)) {
    return false;
  }
  int64_t rows = static_cast<int64_t>(l.rows);
  int64_t cols = static_cast<int64_t>(l.cols);
  if (l.ld < 0 || l.batch_count < 1) return false;
  switch (l.order) {
    case CUBLASLT_ORDER_COL:
      return l.ld >= std::max<int64_t>(1, rows);
    case CUBLASLT_ORDER_ROW:
      return l.ld >= std::max<int64_t>(1, cols);
    case CUBLASLT_ORDER_COL32:
      return l.ld >= 32 * rows;
    case CUBLASLT_ORDER_COL4_4R2_8C:
      return l.ld >= 32 * 8 * CeilDiv(rows, 8);
    case CUBLASLT_ORDER_COL32_2R_4R4:
      return l.ld >= 32 * 32 * CeilDiv(rows, 32);
    default:
      return false;
  }
}

struct LtProblem {
  GemmShape shape;
  GemmKind kind;
};

// D (m×n) = op(A) (m×k) · op(B) (k×n) + C (m×n), with m and n from D's layout and k from A's.
cublasStatus_t ResolveProblem(const cublasLtContext& ctx, const MatmulDesc& op,
                              const MatrixLayout& a, const MatrixLayout& b, const MatrixLayout& c,
                              const MatrixLayout& d, LtProblem* out) {
  if (!ValidOperation(op.transa) || !ValidOperation(op.transb) || !ValidOperation(op.transc) ||
      op.pointer_mode < CUBLASLT_POINTER_MODE_HOST ||
      op.pointer_mode > CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST ||
      !ValidEpilogue(op.epilogue)) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (op.transc != CUBLAS_OP_N) return CUBLAS_STATUS_NOT_SUPPORTED;  // "only CUBLAS_OP_N"
  if (!ValidLayout(a) || !ValidLayout(b) || !ValidLayout(c) || !ValidLayout(d)) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  auto transa = static_cast<cublasOperation_t>(op.transa);
  auto transb = static_cast<cublasOperation_t>(op.transb);
  auto m = static_cast<int64_t>(d.rows);
  auto n = static_cast<int64_t>(d.cols);
  auto a_rows = static_cast<int64_t>(a.rows), a_cols = static_cast<int64_t>(a.cols);
  auto b_rows = static_cast<int64_t>(b.rows), b_cols = static_cast<int64_t>(b.cols);
  int64_t k = transa == CUBLAS_OP_N ? a_cols : a_rows;
  bool shapes_agree = (transa == CUBLAS_OP_N ? a_rows : a_cols) == m &&
                      (transb == CUBLAS_OP_N ? b_rows : b_cols) == k &&
                      (transb == CUBLAS_OP_N ? b_cols : b_rows) == n && c.rows == d.rows &&
                      c.cols == d.cols;
  bool batches_agree = a.batch_count == d.batch_count && b.batch_count == d.batch_count &&
                       c.batch_count == d.batch_count;
  if (!shapes_agree || !batches_agree) return CUBLAS_STATUS_INVALID_VALUE;
  GemmTypes types{op.compute_type,          op.scale_type,
                  static_cast<int>(a.type), static_cast<int>(b.type),
                  static_cast<int>(c.type), static_cast<int>(d.type)};
  cublasStatus_t status = ClassifyTypes(Api::kLt, types, ctx.rates, &out->kind);
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  out->shape = GemmShape{transa, transb, m, n, k, d.batch_count};
  return CUBLAS_STATUS_SUCCESS;
}

// ---- Algorithms ----
//
// Two modelled algorithms, both at the modelled rate: id 0 needs only the handle's minimum
// workspace; id 1 (split-K) also wants a reduction buffer of up to 32 MiB. A cublasLtMatmulAlgo_t
// carries: data[0] = kAlgoMagic << 32 | id, data[1] = workspace bytes, data[2] = reduction scheme.

constexpr uint64_t kAlgoMagic = 0x584c4147;  // "XLAG"
constexpr uint64_t kMaxSplitKWorkspace = 32ull << 20;

struct AlgoChoice {
  int id;
  uint64_t workspace;
  uint32_t reduction_scheme;
};

int Candidates(const cublasLtContext& ctx, const LtProblem& p, AlgoChoice out[2]) {
  uint64_t partials = 4ull * static_cast<uint64_t>(p.shape.m) * static_cast<uint64_t>(p.shape.n) *
                      static_cast<uint64_t>(p.shape.batch);
  out[0] = AlgoChoice{0, ctx.min_workspace, CUBLASLT_REDUCTION_SCHEME_NONE};
  out[1] = AlgoChoice{1, std::max(ctx.min_workspace, std::min(partials, kMaxSplitKWorkspace)),
                      CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE};
  return 2;
}

void EncodeAlgo(const AlgoChoice& choice, cublasLtMatmulAlgo_t* algo) {
  memset(algo, 0, sizeof(*algo));
  algo->data[0] = kAlgoMagic << 32 | static_cast<uint32_t>(choice.id);
  algo->data[1] = choice.workspace;
  algo->data[2] = choice.reduction_scheme;
}

bool DecodeAlgo(const cublasLtMatmulAlgo_t& algo, AlgoChoice* choice) {
  if (algo.data[0] >> 32 != kAlgoMagic) return false;
  int id = static_cast<int>(algo.data[0] & 0xffffffff);
  if (id != 0 && id != 1) return false;
  *choice = AlgoChoice{id, algo.data[1], static_cast<uint32_t>(algo.data[2])};
  return true;
}

// Device utilisation as the real heuristic reports it: 128×128 output tiles over 132 SMs.
float WavesCount(const GemmShape& s) {
  double tiles = static_cast<double>(CeilDiv(s.m, 128)) * static_cast<double>(CeilDiv(s.n, 128)) *
                 static_cast<double>(s.batch);
  return static_cast<float>(tiles / 132.0);
}

struct Operands {
  cublasLtContext* ctx;
  MatmulDesc* op;
  MatrixLayout* a;
  MatrixLayout* b;
  MatrixLayout* c;
  MatrixLayout* d;
};

cublasStatus_t ResolveOperands(cublasLtHandle_t handle, cublasLtMatmulDesc_t op,
                               cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                               cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d, Operands* out) {
  out->ctx = Live(handle);
  if (out->ctx == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  out->op = Resolve<MatmulDesc>(op);
  out->a = Resolve<MatrixLayout>(a);
  out->b = Resolve<MatrixLayout>(b);
  out->c = Resolve<MatrixLayout>(c);
  out->d = Resolve<MatrixLayout>(d);
  if (out->op == nullptr || out->a == nullptr || out->b == nullptr || out->c == nullptr ||
      out->d == nullptr) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace
}  // namespace blas
}  // namespace xtsim

namespace blas = xtsim::blas;

extern "C" {

// ---- Handle and library information ----

cublasStatus_t cublasLtCreate(cublasLtHandle_t* lightHandle) {
  if (lightHandle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  // Without the simulated runtime this exits with a clear message; without a device
  // (XTIMER_SIM_DEVICE_COUNT=0) the library cannot initialise, as on a machine with no GPU.
  if (xtsim::Runtime().stream_check(nullptr, nullptr) != cudaSuccess) {
    return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  int64_t min_workspace = xtsim::EnvInt("XTIMER_SIM_CUBLASLT_WORKSPACE", 0);
  if (min_workspace < 0) {
    xtsim::Fatal("XTIMER_SIM_CUBLASLT_WORKSPACE=%" PRId64 " must not be negative", min_workspace);
  }
  auto* ctx = new cublasLtContext;
  ctx->rates = blas::Rates::FromEnv();
  ctx->min_workspace = static_cast<uint64_t>(min_workspace);
  blas::Handles().Add(ctx);
  *lightHandle = ctx;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t lightHandle) {
  if (lightHandle == nullptr || !blas::Handles().Remove(lightHandle)) {
    return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  lightHandle->magic = cublasLtContext::kDead;
  delete lightHandle;
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasLtGetStatusName(cublasStatus_t status) { return blas::StatusName(status); }

const char* cublasLtGetStatusString(cublasStatus_t status) { return blas::StatusString(status); }

size_t cublasLtGetVersion(void) { return CUBLAS_VERSION; }

size_t cublasLtGetCudartVersion(void) { return CUDART_VERSION; }

cublasStatus_t cublasLtGetProperty(libraryPropertyType type, int* value) {
  return blas::GetProperty(type, value);
}

// ---- Matmul descriptor ----

cublasStatus_t cublasLtMatmulDescInit_internal(cublasLtMatmulDesc_t matmulDesc, size_t size,
                                               cublasComputeType_t computeType,
                                               cudaDataType_t scaleType) {
  blas::MatmulDesc value;
  value.compute_type = computeType;
  value.scale_type = scaleType;
  return blas::InitDescriptor(matmulDesc, size, value);
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* matmulDesc,
                                        cublasComputeType_t computeType, cudaDataType_t scaleType) {
  blas::MatmulDesc value;
  value.compute_type = computeType;
  value.scale_type = scaleType;
  return blas::CreateDescriptor(matmulDesc, value);
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc) {
  return blas::DestroyDescriptor<blas::MatmulDesc>(matmulDesc);
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
                                              cublasLtMatmulDescAttributes_t attr, const void* buf,
                                              size_t sizeInBytes) {
  blas::MatmulDesc* desc = blas::Resolve<blas::MatmulDesc>(matmulDesc);
  if (desc == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  return blas::SetAttribute(desc, blas::MatmulDescAttrs(), attr, buf, sizeInBytes);
}

cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t matmulDesc,
                                              cublasLtMatmulDescAttributes_t attr, void* buf,
                                              size_t sizeInBytes, size_t* sizeWritten) {
  const blas::MatmulDesc* desc = blas::Resolve<blas::MatmulDesc>(matmulDesc);
  if (desc == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  return blas::GetAttribute(desc, blas::MatmulDescAttrs(), attr, buf, sizeInBytes, sizeWritten);
}

// ---- Matrix layout ----

cublasStatus_t cublasLtMatrixLayoutInit_internal(cublasLtMatrixLayout_t matLayout, size_t size,
                                                 cudaDataType type, uint64_t rows, uint64_t cols,
                                                 int64_t ld) {
  blas::MatrixLayout value;
  value.type = static_cast<uint32_t>(type);
  value.rows = rows;
  value.cols = cols;
  value.ld = ld;
  return blas::InitDescriptor(matLayout, size, value);
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* matLayout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
  blas::MatrixLayout value;
  value.type = static_cast<uint32_t>(type);
  value.rows = rows;
  value.cols = cols;
  value.ld = ld;
  return blas::CreateDescriptor(matLayout, value);
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout) {
  return blas::DestroyDescriptor<blas::MatrixLayout>(matLayout);
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, size_t sizeInBytes) {
  blas::MatrixLayout* layout = blas::Resolve<blas::MatrixLayout>(matLayout);
  if (layout == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  return blas::SetAttribute(layout, blas::MatrixLayoutAttrs(), attr, buf, sizeInBytes);
}

cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t matLayout,
                                                cublasLtMatrixLayoutAttribute_t attr, void* buf,
                                                size_t sizeInBytes, size_t* sizeWritten) {
  const blas::MatrixLayout* layout = blas::Resolve<blas::MatrixLayout>(matLayout);
  if (layout == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  return blas::GetAttribute(layout, blas::MatrixLayoutAttrs(), attr, buf, sizeInBytes, sizeWritten);
}

// ---- Heuristic preference ----

cublasStatus_t cublasLtMatmulPreferenceInit_internal(cublasLtMatmulPreference_t pref, size_t size) {
  return blas::InitDescriptor(pref, size, blas::MatmulPreference{});
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  return blas::CreateDescriptor(pref, blas::MatmulPreference{});
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  return blas::DestroyDescriptor<blas::MatmulPreference>(pref);
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void* buf, size_t sizeInBytes) {
  blas::MatmulPreference* p = blas::Resolve<blas::MatmulPreference>(pref);
  if (p == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  return blas::SetAttribute(p, blas::MatmulPreferenceAttrs(), attr, buf, sizeInBytes);
}

cublasStatus_t cublasLtMatmulPreferenceGetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    void* buf, size_t sizeInBytes,
                                                    size_t* sizeWritten) {
  const blas::MatmulPreference* p = blas::Resolve<blas::MatmulPreference>(pref);
  if (p == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  return blas::GetAttribute(p, blas::MatmulPreferenceAttrs(), attr, buf, sizeInBytes, sizeWritten);
}

// ---- Heuristic and matmul ----

// Returns the modelled algorithms whose workspace fits the preference (and whose reduction
// scheme it allows), fewest bytes first; CUBLAS_STATUS_NOT_SUPPORTED with *returnAlgoCount = 0
// when none does.
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc, cublasLtMatrixLayout_t Adesc,
    cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
    cublasLtMatmulPreference_t preference, int requestedAlgoCount,
    cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int* returnAlgoCount) {
  blas::Operands ops;
  cublasStatus_t status =
      blas::ResolveOperands(lightHandle, operationDesc, Adesc, Bdesc, Cdesc, Ddesc, &ops);
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  const blas::MatmulPreference* pref = blas::Resolve<blas::MatmulPreference>(preference);
  if (pref == nullptr || requestedAlgoCount <= 0 || heuristicResultsArray == nullptr ||
      returnAlgoCount == nullptr) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  *returnAlgoCount = 0;
  blas::LtProblem problem;
  status = blas::ResolveProblem(*ops.ctx, *ops.op, *ops.a, *ops.b, *ops.c, *ops.d, &problem);
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  blas::AlgoChoice candidates[2];
  int count = blas::Candidates(*ops.ctx, problem, candidates);
  int returned = 0;
  for (int i = 0; i < count && returned < requestedAlgoCount; ++i) {
    const blas::AlgoChoice& c = candidates[i];
    bool reduction_allowed = c.reduction_scheme == CUBLASLT_REDUCTION_SCHEME_NONE ||
                             (pref->reduction_scheme_mask & c.reduction_scheme) != 0;
    if (c.workspace > pref->max_workspace_bytes || !reduction_allowed) continue;
    cublasLtMatmulHeuristicResult_t& r = heuristicResultsArray[returned++];
    memset(&r, 0, sizeof(r));
    blas::EncodeAlgo(c, &r.algo);
    r.workspaceSize = c.workspace;
    r.state = CUBLAS_STATUS_SUCCESS;
    r.wavesCount = blas::WavesCount(problem.shape);
  }
  *returnAlgoCount = returned;
  return returned > 0 ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,
                              const void* alpha, const void* A, cublasLtMatrixLayout_t Adesc,
                              const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta,
                              const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
                              cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo,
                              void* workspace, size_t workspaceSizeInBytes, cudaStream_t stream) {
  blas::Operands ops;
  cublasStatus_t status =
      blas::ResolveOperands(lightHandle, computeDesc, Adesc, Bdesc, Cdesc, Ddesc, &ops);
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  blas::LtProblem problem;
  status = blas::ResolveProblem(*ops.ctx, *ops.op, *ops.a, *ops.b, *ops.c, *ops.d, &problem);
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  blas::AlgoChoice choice;
  if (algo != nullptr) {
    // "INVALID_VALUE ... when workspaceSizeInBytes is less than workspace required by algo".
    if (!blas::DecodeAlgo(*algo, &choice) || choice.workspace > workspaceSizeInBytes) {
      return CUBLAS_STATUS_INVALID_VALUE;
    }
  } else {
    // Without an algorithm the library runs its heuristic against the given workspace.
    blas::AlgoChoice candidates[2];
    int count = blas::Candidates(*ops.ctx, problem, candidates);
    const blas::AlgoChoice* fit = std::find_if(
        candidates, candidates + count,
        [&](const blas::AlgoChoice& c) { return c.workspace <= workspaceSizeInBytes; });
    if (fit == candidates + count) return CUBLAS_STATUS_NOT_SUPPORTED;
    choice = *fit;
  }
  char line[192];
  snprintf(line, sizeof(line), "m=%lld n=%lld k=%lld batch=%lld %s algo=%d",
           static_cast<long long>(problem.shape.m), static_cast<long long>(problem.shape.n),
           static_cast<long long>(problem.shape.k), static_cast<long long>(problem.shape.batch),
           blas::DtypeName(problem.kind.dtype), choice.id);
  blas::LogApi("cublasLtMatmul", line);
  return blas::EnqueueGemm(stream, "gpusim_ltmatmul", problem.shape, problem.kind, ops.ctx->rates);
}

// ---- Logging and the heuristics cache (accepted; the simulator keeps no cache) ----

cublasStatus_t cublasLtLoggerSetCallback(cublasLtLoggerCallback_t callback) {
  blas::Logger& log = blas::Log();
  std::lock_guard<std::mutex> lock(log.mu);
  log.callback = callback;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtLoggerSetFile(FILE* file) {
  blas::SetLogFile(file, /*own=*/false);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtLoggerOpenFile(const char* logFile) {
  if (logFile == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  FILE* file = fopen(logFile, "w");
  if (file == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  blas::SetLogFile(file, /*own=*/true);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtLoggerSetLevel(int level) {
  if (level < 0 || level > 5) return CUBLAS_STATUS_INVALID_VALUE;
  blas::Logger& log = blas::Log();
  std::lock_guard<std::mutex> lock(log.mu);
  log.mask = (1 << level) - 1;  // level N turns on the first N mask bits
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtLoggerSetMask(int mask) {
  blas::Logger& log = blas::Log();
  std::lock_guard<std::mutex> lock(log.mu);
  log.mask = mask;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtLoggerForceDisable() {
  blas::Logger& log = blas::Log();
  std::lock_guard<std::mutex> lock(log.mu);
  log.disabled = true;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtHeuristicsCacheGetCapacity(size_t* capacity) {
  if (capacity == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *capacity = blas::heuristics_cache_capacity.load();
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtHeuristicsCacheSetCapacity(size_t capacity) {
  blas::heuristics_cache_capacity.store(capacity);
  return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
