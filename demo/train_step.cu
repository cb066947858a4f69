// train_step: one rank of a small Megatron-style training job (tensor, pipeline and data parallel).
//
// Real CUDA + cuBLAS + cuBLASLt + NCCL code: it runs on GPUs as it is, and on the GPU simulator in
// test/gpusim (which models time but does not execute kernels). Start it with demo/launch.py (or
// torchrun, or any launcher that sets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE and shares a
// rendezvous directory in XTIMER_DEMO_RENDEZVOUS). What a step does, the flags and the rank layout
// are described in docs/demo.md.
//
// Correctness checks rely only on copies and NCCL (never on kernel results, which the simulator
// does not compute): each step every rank checks
//   - the data-parallel all-reduce of its gradient buffer (a tail of the buffer that no kernel or
//     GEMM touches is filled with (rank+1)*(step+1) from the host; the sum over the DP group is
//     exact in fp32),
//   - a tensor-parallel all-gather of per-rank values, and
//   - a tag that the sender of every pipeline send/recv writes into the message's tail.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <fcntl.h>
#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "demo/linger.h"
#include "demo/program_args.h"
#include "demo/rendezvous.h"

namespace {

using demo::UsageError;

using bf16 = __nv_bfloat16;

// The global rank and the current step (0-based), for error messages (-1 until known / before
// the first step).
int g_rank = -1;
int g_step = -1;

[[noreturn]] void Die(int code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

void Die(int code, const char* fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (g_rank >= 0 && g_step >= 0) {
    fprintf(stderr, "train_step: rank %d, step %d: %s\n", g_rank, g_step + 1, msg);
  } else if (g_rank >= 0) {
    fprintf(stderr, "train_step: rank %d: %s\n", g_rank, msg);
  } else {
    fprintf(stderr, "train_step: %s\n", msg);
  }
  fflush(stdout);
  fflush(stderr);
  exit(code);
}

// One checking macro per library: prints the call text and the decoded error, exits 1.
#define CUDA_CHECK(call)                                                                        \
  do {                                                                                          \
    cudaError_t err_ = (call);                                                                  \
    if (err_ != cudaSuccess) {                                                                  \
      Die(1, "%s:%d: %s failed: %s (%s)", __FILE__, __LINE__, #call, cudaGetErrorString(err_), \
          cudaGetErrorName(err_));                                                              \
    }                                                                                           \
  } while (0)

#define CUBLAS_CHECK(call)                                                                  \
  do {                                                                                      \
    cublasStatus_t st_ = (call);                                                            \
    if (st_ != CUBLAS_STATUS_SUCCESS) {                                                     \
      Die(1, "%s:%d: %s failed: %s (%d)", __FILE__, __LINE__, #call,                        \
          cublasGetStatusString(st_), static_cast<int>(st_));                               \
    }                                                                                       \
  } while (0)

#define CUBLASLT_CHECK(call)                                                                \
  do {                                                                                      \
    cublasStatus_t st_ = (call);                                                            \
    if (st_ != CUBLAS_STATUS_SUCCESS) {                                                     \
      Die(1, "%s:%d: %s failed: %s (%d)", __FILE__, __LINE__, #call,                        \
          cublasLtGetStatusString(st_), static_cast<int>(st_));                             \
    }                                                                                       \
  } while (0)

#define NCCL_CHECK(call)                                                                      \
  do {                                                                                        \
    ncclResult_t res_ = (call);                                                               \
    if (res_ != ncclSuccess && res_ != ncclInProgress) {                                      \
      const char* last_ = ncclGetLastError(nullptr);                                          \
      Die(1, "%s:%d: %s failed: %s (%d)%s%s", __FILE__, __LINE__, #call,                      \
          ncclGetErrorString(res_), static_cast<int>(res_), (last_ && *last_) ? ": " : "",    \
          (last_ && *last_) ? last_ : "");                                                    \
    }                                                                                         \
  } while (0)

// ---------------------------------------------------------------------------------------------
// Command line and environment
// ---------------------------------------------------------------------------------------------

struct Options {
  int tp = 1;
  int pp = 1;
  int dp = 0;  // 0: WORLD_SIZE / (tp * pp)
  int steps = 10;
  int hidden = 1024;
  int heads = 16;
  int seq = 1024;
  int micro_batch = 1;
  int micro_batches = 2;
  int layers = 4;
  int vocab = 4096;
  int rendezvous_timeout_s = 120;
  int linger_s = 0;
  bool verbose = false;
};

const char kUsage[] =
    "usage: train_step [FLAGS]\n"
    "\n"
    "One rank of a simulated Megatron-style training job: per step an H2D copy of the input batch,\n"
    "per layer cuBLAS and cuBLASLt GEMMs of transformer shapes and custom kernels, tensor-parallel\n"
    "all-gather / reduce-scatter (sequence parallel), pipeline send/recv between stages (1F1B),\n"
    "a data-parallel gradient all-reduce, a D2H copy and a check of the reduced values.\n"
    "Start one process per rank, e.g. with demo/launch.py. See docs/demo.md.\n"
    "\n"
    "Parallel layout (Megatron order tp-dp-pp, tp fastest):\n"
    "  rank = tp_idx + tp * (dp_idx + dp * pp_idx)\n"
    "  --tp N              tensor-parallel size (default 1)\n"
    "  --pp N              pipeline-parallel size (default 1)\n"
    "  --dp N              data-parallel size (default WORLD_SIZE / (tp * pp));\n"
    "                      tp * pp * dp must equal WORLD_SIZE\n"
    "Model and batch:\n"
    "  --layers N          transformer layers in the whole model, divisible by pp (default 4)\n"
    "  --hidden N          hidden size, divisible by heads and by tp (default 1024)\n"
    "  --heads N           attention heads, divisible by tp (default 16)\n"
    "  --seq N             sequence length (default 1024)\n"
    "  --micro-batch N     sequences per micro-batch; micro-batch * seq divisible by tp (default 1)\n"
    "  --micro-batches N   micro-batches per step (pipeline 1F1B schedule) (default 2)\n"
    "  --vocab N           vocabulary size of the (replicated, frozen) embedding (default 4096)\n"
    "Run:\n"
    "  --steps N           training steps (default 10)\n"
    "  --rendezvous-timeout S  seconds a rank waits for rank 0's NCCL id (default 120)\n"
    "  --linger S          stay alive S seconds after the last step, communicators still open, so\n"
    "                      that monitors can read the final state (default 0)\n"
    "  --verbose           every rank prints its layout and a line per step\n"
    "  --help              print this help and exit\n"
    "Flags take their value as '--flag N' or '--flag=N'.\n"
    "\n"
    "Environment (torchrun convention): RANK, WORLD_SIZE (default 0 and 1), LOCAL_RANK (default\n"
    "RANK; the device is LOCAL_RANK % device count), LOCAL_WORLD_SIZE; XTIMER_DEMO_RENDEZVOUS: a\n"
    "directory shared by all ranks where rank 0 publishes the NCCL unique id (required when\n"
    "WORLD_SIZE > 1).\n"
    "\n"
    "Exit status: 0 success, 1 a failed CUDA/cuBLAS/NCCL call or a failed check, 2 bad usage.\n";

bool ParseInt(const char* s, long min, long max, int* out) {
  long v;
  if (!demo::ParseLong(s, min, max, &v)) return false;
  *out = static_cast<int>(v);
  return true;
}

Options ParseFlags(int argc, char** argv) {
  Options o;
  struct IntFlag {
    const char* name;
    int* value;
    long min;
  };
  const IntFlag int_flags[] = {
      {"--tp", &o.tp, 1},
      {"--pp", &o.pp, 1},
      {"--dp", &o.dp, 1},
      {"--steps", &o.steps, 1},
      {"--hidden", &o.hidden, 1},
      {"--heads", &o.heads, 1},
      {"--seq", &o.seq, 1},
      {"--micro-batch", &o.micro_batch, 1},
      {"--micro-batches", &o.micro_batches, 1},
      {"--layers", &o.layers, 1},
      {"--vocab", &o.vocab, 1},
      {"--rendezvous-timeout", &o.rendezvous_timeout_s, 1},
      {"--linger", &o.linger_s, 0},
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      fputs(kUsage, stdout);
      exit(0);
    }
    if (arg == "--verbose") {
      o.verbose = true;
      continue;
    }
    const char* value = nullptr;
    const std::string name = demo::FlagName(argv, i, &value);
    const IntFlag* flag = nullptr;
    for (const IntFlag& f : int_flags) {
      if (name == f.name) flag = &f;
    }
    if (flag == nullptr) demo::UnknownArgument(argv[i]);
    value = demo::FlagValue(argc, argv, &i, name, value);
    if (!ParseInt(value, flag->min, 1 << 24, flag->value)) {
      UsageError("flag %s: '%s' is not an integer in [%ld, %d]", name.c_str(), value, flag->min,
                 1 << 24);
    }
  }
  return o;
}

int EnvInt(const char* name, int def, int min) {
  return static_cast<int>(demo::EnvLong(name, def, min));
}

// Megatron's default order "tp-cp-ep-dp-pp" (no cp/ep here): tp varies fastest, then dp, then pp.
struct Layout {
  int world, rank, local_rank, local_world;
  int tp, pp, dp;
  int tp_idx, dp_idx, pp_idx;
  int RankOf(int t, int d, int p) const { return t + tp * (d + dp * p); }
  int TpColor() const { return pp_idx * dp + dp_idx; }  // ranks with the same (dp, pp)
  int DpColor() const { return pp_idx * tp + tp_idx; }  // ranks with the same (tp, pp)
  int PpColor() const { return dp_idx * tp + tp_idx; }  // ranks with the same (tp, dp)
};

Layout MakeLayout(const Options& o) {
  Layout l{};
  l.world = EnvInt("WORLD_SIZE", 1, 1);
  l.rank = EnvInt("RANK", 0, 0);
  if (l.rank >= l.world) UsageError("RANK=%d is not below WORLD_SIZE=%d", l.rank, l.world);
  l.local_rank = EnvInt("LOCAL_RANK", l.rank, 0);
  l.local_world = EnvInt("LOCAL_WORLD_SIZE", l.world, 1);
  l.tp = o.tp;
  l.pp = o.pp;
  if (l.world % (o.tp * o.pp) != 0) {
    UsageError("WORLD_SIZE=%d is not divisible by tp*pp=%d", l.world, o.tp * o.pp);
  }
  l.dp = o.dp > 0 ? o.dp : l.world / (o.tp * o.pp);
  if (l.tp * l.pp * l.dp != l.world) {
    UsageError("tp*pp*dp = %d*%d*%d = %d does not equal WORLD_SIZE=%d", l.tp, l.pp, l.dp,
               l.tp * l.pp * l.dp, l.world);
  }
  l.tp_idx = l.rank % l.tp;
  l.dp_idx = (l.rank / l.tp) % l.dp;
  l.pp_idx = l.rank / (l.tp * l.dp);
  return l;
}

void ValidateModel(const Options& o) {
  if (o.layers % o.pp != 0) UsageError("--layers %d is not divisible by --pp %d", o.layers, o.pp);
  if (o.heads % o.tp != 0) UsageError("--heads %d is not divisible by --tp %d", o.heads, o.tp);
  if (o.hidden % o.heads != 0) {
    UsageError("--hidden %d is not divisible by --heads %d", o.hidden, o.heads);
  }
  if ((static_cast<long>(o.micro_batch) * o.seq) % o.tp != 0) {
    UsageError("micro-batch*seq = %ld is not divisible by --tp %d (sequence parallelism)",
               static_cast<long>(o.micro_batch) * o.seq, o.tp);
  }
  if (static_cast<long>(o.micro_batch) * o.seq > (1 << 22)) {
    UsageError("micro-batch*seq is too large");
  }
}

// NCCL collectives (not counting sends and receives) that every rank issues per step: 8 TP
// collectives per layer and micro-batch, the TP check all-gather and the DP all-reduce. Identical on
// every rank. demo/launch.py uses the same numbers for --crash-step, --nccl-error-step and
// --hang-step; keep them in sync (docs/demo.md).
int CollectivesPerStep(const Options& o) { return o.micro_batches * 8 * (o.layers / o.pp) + 2; }
int TpCollectivesPerStep(const Options& o) { return CollectivesPerStep(o) - 1; }
// Sends plus receives per step of a rank of pipeline stage `pp_idx`.
int P2pCallsPerStep(const Options& o, int pp_idx) {
  return o.micro_batches * (2 * (pp_idx > 0) + 2 * (pp_idx < o.pp - 1));
}

// ---------------------------------------------------------------------------------------------
// Kernels: simple but real computations. The simulator does not execute them, so nothing that
// is checked depends on their results.
// ---------------------------------------------------------------------------------------------

constexpr int kThreads = 256;

unsigned Blocks(size_t n) {
  size_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::min<size_t>(std::max<size_t>(b, 1), 4096));
}

__device__ __forceinline__ float WarpSum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float WarpMax(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Block-wide sum or max; blockDim.x is a multiple of 32.
template <bool kMax>
__device__ float BlockReduce(float v) {
  __shared__ float partial[32];
  v = kMax ? WarpMax(v) : WarpSum(v);
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();  // a previous call may still read partial[0]
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    int warps = blockDim.x >> 5;
    float x = lane < warps ? partial[lane] : (kMax ? -INFINITY : 0.f);
    x = kMax ? WarpMax(x) : WarpSum(x);
    if (lane == 0) partial[0] = x;
  }
  __syncthreads();
  return partial[0];
}

__device__ __forceinline__ uint32_t Hash(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

__global__ void InitUniform(bf16* p, size_t n, uint32_t seed, float scale) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    float u = (Hash(static_cast<uint32_t>(i) * 2654435761U + seed) >> 8) * (1.0f / 16777216.0f);
    p[i] = __float2bfloat16((2.f * u - 1.f) * scale);
  }
}

// x[r, :] = table[tokens[row0 + r], :] for this rank's sequence shard.
__global__ void Embedding(const int* tokens, int row0, const bf16* table, int vocab, bf16* x,
                          int rows, int hidden) {
  size_t n = static_cast<size_t>(rows) * hidden;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    int r = static_cast<int>(i / hidden), c = static_cast<int>(i % hidden);
    int tok = tokens[row0 + r];
    tok = ((tok % vocab) + vocab) % vocab;
    x[i] = table[static_cast<size_t>(tok) * hidden + c];
  }
}

// One block per row: y = (x - mean) / sqrt(var + eps).
__global__ void LayerNorm(const bf16* x, bf16* y, int hidden) {
  const bf16* xr = x + static_cast<size_t>(blockIdx.x) * hidden;
  bf16* yr = y + static_cast<size_t>(blockIdx.x) * hidden;
  float s = 0.f, s2 = 0.f;
  for (int c = threadIdx.x; c < hidden; c += blockDim.x) {
    float v = __bfloat162float(xr[c]);
    s += v;
    s2 += v * v;
  }
  float mean = BlockReduce<false>(s) / hidden;
  float var = BlockReduce<false>(s2) / hidden - mean * mean;
  float inv = rsqrtf(fmaxf(var, 0.f) + 1e-5f);
  for (int c = threadIdx.x; c < hidden; c += blockDim.x) {
    yr[c] = __float2bfloat16((__bfloat162float(xr[c]) - mean) * inv);
  }
}

// [B*S, ld] row-major, columns [col0, col0 + heads*d) -> [heads*B, S, d]; or back when kToRows.
template <bool kToRows>
__global__ void Heads(bf16* rows_buf, int ld, int col0, bf16* heads_buf, int batch, int seq,
                      int heads, int d) {
  size_t n = static_cast<size_t>(batch) * seq * heads * d;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    int e = static_cast<int>(i % d);
    size_t t = i / d;
    int s = static_cast<int>(t % seq);
    t /= seq;
    int b = static_cast<int>(t % batch);
    int h = static_cast<int>(t / batch);
    size_t r = (static_cast<size_t>(b) * seq + s) * ld + col0 + static_cast<size_t>(h) * d + e;
    if (kToRows) {
      rows_buf[r] = heads_buf[i];
    } else {
      heads_buf[i] = rows_buf[r];
    }
  }
}

// One block per row of a [*, seq, seq] score tensor: causal softmax of scale * row, in place.
__global__ void CausalSoftmax(bf16* scores, int seq, float scale) {
  bf16* row = scores + static_cast<size_t>(blockIdx.x) * seq;
  int q = blockIdx.x % seq;
  float m = -INFINITY;
  for (int c = threadIdx.x; c <= q; c += blockDim.x) m = fmaxf(m, scale * __bfloat162float(row[c]));
  m = BlockReduce<true>(m);
  float s = 0.f;
  for (int c = threadIdx.x; c <= q; c += blockDim.x) s += __expf(scale * __bfloat162float(row[c]) - m);
  s = BlockReduce<false>(s);
  for (int c = threadIdx.x; c < seq; c += blockDim.x) {
    float p = c <= q ? __expf(scale * __bfloat162float(row[c]) - m) / s : 0.f;
    row[c] = __float2bfloat16(p);
  }
}

// One block per row: dS = P * (dP - sum(P * dP)), in place in dp.
__global__ void SoftmaxBackward(const bf16* probs, bf16* dprobs, int seq, float scale) {
  const bf16* p = probs + static_cast<size_t>(blockIdx.x) * seq;
  bf16* g = dprobs + static_cast<size_t>(blockIdx.x) * seq;
  float dot = 0.f;
  for (int c = threadIdx.x; c < seq; c += blockDim.x) {
    dot += __bfloat162float(p[c]) * __bfloat162float(g[c]);
  }
  dot = BlockReduce<false>(dot);
  for (int c = threadIdx.x; c < seq; c += blockDim.x) {
    float pc = __bfloat162float(p[c]);
    g[c] = __float2bfloat16(scale * pc * (__bfloat162float(g[c]) - dot));
  }
}

__device__ __forceinline__ float Gelu(float x) {
  return 0.5f * x * (1.f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
}

__global__ void GeluForward(const bf16* x, bf16* y, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    y[i] = __float2bfloat16(Gelu(__bfloat162float(x[i])));
  }
}

// g *= gelu'(x)
__global__ void GeluBackward(const bf16* x, bf16* g, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    float v = __bfloat162float(x[i]);
    float t = tanhf(0.7978845608f * (v + 0.044715f * v * v * v));
    float dt = (1.f - t * t) * 0.7978845608f * (1.f + 3.f * 0.044715f * v * v);
    float d = 0.5f * (1.f + t) + 0.5f * v * dt;
    g[i] = __float2bfloat16(__bfloat162float(g[i]) * d);
  }
}

// x += y
__global__ void AddInPlace(bf16* x, const bf16* y, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    x[i] = __float2bfloat16(__bfloat162float(x[i]) + __bfloat162float(y[i]));
  }
}

// Stand-in loss gradient: g = (x - embedding(label)) / tokens for this rank's shard.
__global__ void LossGrad(const bf16* x, const int* labels, int row0, const bf16* table, int vocab,
                         bf16* g, int rows, int hidden, float inv_tokens) {
  size_t n = static_cast<size_t>(rows) * hidden;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    int r = static_cast<int>(i / hidden), c = static_cast<int>(i % hidden);
    int tok = ((labels[row0 + r] % vocab) + vocab) % vocab;
    float target = __bfloat162float(table[static_cast<size_t>(tok) * hidden + c]);
    g[i] = __float2bfloat16((__bfloat162float(x[i]) - target) * inv_tokens);
  }
}

// w -= lr * g
__global__ void SgdUpdate(bf16* w, const float* g, size_t n, float lr) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    w[i] = __float2bfloat16(__bfloat162float(w[i]) - lr * g[i]);
  }
}

#define LAUNCH_CHECK() CUDA_CHECK(cudaGetLastError())

// ---------------------------------------------------------------------------------------------
// GEMMs on row-major matrices. cuBLAS is column-major; a row-major [r, c] matrix is a
// column-major [c, r] one, so C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T.
// ---------------------------------------------------------------------------------------------

struct Gemms {
  cublasHandle_t blas = nullptr;
  cublasLtHandle_t lt = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  cudaStream_t stream = nullptr;
  double flops = 0;  // model FLOPs issued since the last reset
};

// C[M,N] (+)= op(A)[M,K] op(B)[K,N]; A is stored [M,K] or, with ta, [K,M]; B [K,N] or, with tb,
// [N,K]. C is bf16, or fp32 with c_fp32 (weight gradients accumulate into fp32 with beta = 1).
void Gemm(Gemms& g, bool ta, bool tb, int M, int N, int K, const bf16* A, const bf16* B, void* C,
          bool c_fp32, float beta, int batch = 1, long long sA = 0, long long sB = 0,
          long long sC = 0) {
  const float alpha = 1.f;
  cublasOperation_t op_b = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t op_a = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  int ldb = tb ? K : N;
  int lda = ta ? M : K;
  cudaDataType_t c_type = c_fp32 ? CUDA_R_32F : CUDA_R_16BF;
  if (batch == 1) {
    CUBLAS_CHECK(cublasGemmEx(g.blas, op_b, op_a, N, M, K, &alpha, B, CUDA_R_16BF, ldb, A,
                              CUDA_R_16BF, lda, &beta, C, c_type, N, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT));
  } else {
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(g.blas, op_b, op_a, N, M, K, &alpha, B, CUDA_R_16BF,
                                            ldb, sB, A, CUDA_R_16BF, lda, sA, &beta, C, c_type, N,
                                            sC, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
  g.flops += 2.0 * M * N * K * batch;
}

// A cuBLASLt plan for the row-major C[M,N] = A[M,K] B[K,N] (bf16, fp32 compute), made once.
struct LtPlan {
  int M = 0, N = 0, K = 0;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;  // column-major operands
  cublasLtMatmulAlgo_t algo{};
};

LtPlan MakeLtPlan(Gemms& g, int M, int N, int K) {
  LtPlan p;
  p.M = M;
  p.N = N;
  p.K = K;
  CUBLASLT_CHECK(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t op = CUBLAS_OP_N;
  CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op, sizeof(op)));
  CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op, sizeof(op)));
  // Column-major view: C^T[N,M] = B^T[N,K] * A^T[K,M].
  CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16BF, N, K, N));
  CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_16BF, K, M, K));
  CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&p.c, CUDA_R_16BF, N, M, N));
  cublasLtMatmulPreference_t pref = nullptr;
  CUBLASLT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  uint64_t ws = g.workspace_bytes;
  CUBLASLT_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  CUBLASLT_CHECK(cublasLtMatmulAlgoGetHeuristic(g.lt, p.desc, p.a, p.b, p.c, p.c, pref, 1,
                                                &result, &found));
  CUBLASLT_CHECK(cublasLtMatmulPreferenceDestroy(pref));
  if (found == 0) Die(1, "cublasLtMatmulAlgoGetHeuristic found no algorithm for %dx%dx%d", M, N, K);
  p.algo = result.algo;
  return p;
}

void LtMatmul(Gemms& g, const LtPlan& p, const bf16* A, const bf16* B, bf16* C) {
  const float alpha = 1.f, beta = 0.f;
  CUBLASLT_CHECK(cublasLtMatmul(g.lt, p.desc, &alpha, B, p.a, A, p.b, &beta, C, p.c, C, p.c,
                                &p.algo, g.workspace, g.workspace_bytes, g.stream));
  g.flops += 2.0 * p.M * p.N * p.K;
}

void DestroyLtPlan(LtPlan& p) {
  CUBLASLT_CHECK(cublasLtMatrixLayoutDestroy(p.a));
  CUBLASLT_CHECK(cublasLtMatrixLayoutDestroy(p.b));
  CUBLASLT_CHECK(cublasLtMatrixLayoutDestroy(p.c));
  CUBLASLT_CHECK(cublasLtMatmulDescDestroy(p.desc));
}

// ---------------------------------------------------------------------------------------------
// NCCL unique id through a file
// ---------------------------------------------------------------------------------------------

ncclUniqueId Rendezvous(const Layout& l, int timeout_s) {
  ncclUniqueId id;
  std::string error;
  int code = 1;
  if (!demo::ShareNcclId(l.rank, l.world, timeout_s, &id, &error, &code)) {
    Die(code, "%s", error.c_str());
  }
  return id;
}

// ---------------------------------------------------------------------------------------------
// Model state of this rank: its pipeline stage's layers, split over tp
// ---------------------------------------------------------------------------------------------

constexpr int kTagElems = 64;             // bf16 elements at the end of every p2p message
constexpr int kTagInts = kTagElems / 2;   // the tag as int32
constexpr int kTagMagic = 0x78744d31;     // "xtM1"
constexpr int kCheckElems = 1024;         // fp32 tail of the gradient buffer checked after DP all-reduce
constexpr int kTpCheckElems = 256;        // fp32 values per rank in the TP all-gather check

template <typename T>
T* DeviceAlloc(size_t n) {
  void* p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)));
  return static_cast<T*>(p);
}

struct Dims {
  int B, S, H, heads, hl, d, tp;
  int T;   // tokens per micro-batch: B * S
  int Tl;  // tokens of this rank's sequence shard: T / tp
  int Hl;  // H / tp
  size_t shard_elems() const { return static_cast<size_t>(Tl) * H; }
};

struct LayerWeights {
  bf16 *qkv, *out, *up, *down;        // [H, 3Hl], [Hl, H], [H, 4Hl], [4Hl, H]
  float *d_qkv, *d_out, *d_up, *d_down;  // gradients (views into the flat gradient buffer)
};

struct Saved {  // activations kept for the backward pass, per (micro-batch, layer)
  bf16 *ln1, *q, *k, *v, *probs, *ctx, *ln2, *up, *act;
};

struct Scratch {
  bf16 *qkv, *partial, *full, *shard, *dact, *dctx, *dctx_h, *dprobs, *dq, *dk, *dv, *dqkv;
};

struct Rank {
  Options opt;
  Layout lay;
  Dims dim;
  int layers_per_stage;
  ncclComm_t world = nullptr, tp_comm = nullptr, pp_comm = nullptr, dp_comm = nullptr;
  cudaStream_t compute = nullptr, comm = nullptr;
  cudaEvent_t grads_ready = nullptr, allreduce_done = nullptr, step_begin = nullptr,
              step_end = nullptr;
  Gemms g;
  LtPlan lt_out, lt_down;

  std::vector<LayerWeights> w;
  bf16* weights = nullptr;  // all layer weights, contiguous
  size_t n_weights = 0;
  float* grads = nullptr;  // n_weights + kCheckElems
  bf16* embedding = nullptr;
  int* tokens = nullptr;  // [micro_batches, T] on the device
  std::vector<bf16*> x;   // residual stream per micro-batch: [Tl, H] + tag
  std::vector<bf16*> gx;  // its gradient per micro-batch: [Tl, H] + tag
  std::vector<std::vector<Saved>> saved;  // [micro-batch][layer]
  Scratch s{};
  float *tp_send = nullptr, *tp_recv = nullptr;

  // Pinned host memory.
  int* h_tokens = nullptr;
  float* h_check_fill = nullptr;  // kCheckElems
  float* h_check_out = nullptr;   // kCheckElems
  float* h_tp_send = nullptr;     // kTpCheckElems
  float* h_tp_recv = nullptr;     // tp * kTpCheckElems
  int* h_send_tags = nullptr;     // [micro_batches][2][kTagInts]
  int* h_recv_tags = nullptr;     // [micro_batches][2][kTagInts]
};

void CreateComms(Rank& r) {
  const Layout& l = r.lay;
  ncclUniqueId id = Rendezvous(l, r.opt.rendezvous_timeout_s);
  NCCL_CHECK(ncclCommInitRank(&r.world, l.world, id, l.rank));
  NCCL_CHECK(ncclCommSplit(r.world, l.TpColor(), l.rank, &r.tp_comm, nullptr));
  NCCL_CHECK(ncclCommSplit(r.world, l.PpColor(), l.rank, &r.pp_comm, nullptr));
  NCCL_CHECK(ncclCommSplit(r.world, l.DpColor(), l.rank, &r.dp_comm, nullptr));
  int n = 0, me = 0;
  struct {
    ncclComm_t comm;
    const char* name;
    int size, idx;
  } groups[] = {{r.tp_comm, "TP", l.tp, l.tp_idx},
                {r.pp_comm, "PP", l.pp, l.pp_idx},
                {r.dp_comm, "DP", l.dp, l.dp_idx}};
  for (const auto& gr : groups) {
    NCCL_CHECK(ncclCommCount(gr.comm, &n));
    NCCL_CHECK(ncclCommUserRank(gr.comm, &me));
    if (n != gr.size || me != gr.idx) {
      Die(1, "%s communicator has rank %d of %d, expected %d of %d", gr.name, me, n, gr.idx,
          gr.size);
    }
  }
}

void Allocate(Rank& r) {
  const Dims& d = r.dim;
  const int M = r.opt.micro_batches;
  const size_t H = d.H, Hl = d.Hl, T = d.T;
  const size_t per_layer = H * 3 * Hl + Hl * H + H * 4 * Hl + 4 * Hl * H;
  r.n_weights = per_layer * r.layers_per_stage;
  r.weights = DeviceAlloc<bf16>(r.n_weights);
  r.grads = DeviceAlloc<float>(r.n_weights + kCheckElems);
  r.w.resize(r.layers_per_stage);
  for (int i = 0; i < r.layers_per_stage; ++i) {
    bf16* base = r.weights + per_layer * i;
    float* gbase = r.grads + per_layer * i;
    size_t o1 = H * 3 * Hl, o2 = o1 + Hl * H, o3 = o2 + H * 4 * Hl;
    r.w[i] = {base, base + o1, base + o2, base + o3, gbase, gbase + o1, gbase + o2, gbase + o3};
  }
  r.embedding = DeviceAlloc<bf16>(static_cast<size_t>(r.opt.vocab) * H);
  r.tokens = DeviceAlloc<int>(static_cast<size_t>(M) * T);
  const size_t msg = d.shard_elems() + kTagElems;
  const size_t heads_elems = static_cast<size_t>(d.hl) * d.B * d.S * d.d;  // = T * Hl
  const size_t probs_elems = static_cast<size_t>(d.hl) * d.B * d.S * d.S;
  r.saved.assign(M, std::vector<Saved>(r.layers_per_stage));
  for (int m = 0; m < M; ++m) {
    r.x.push_back(DeviceAlloc<bf16>(msg));
    r.gx.push_back(DeviceAlloc<bf16>(msg));
    for (Saved& sv : r.saved[m]) {
      sv.ln1 = DeviceAlloc<bf16>(T * H);
      sv.q = DeviceAlloc<bf16>(heads_elems);
      sv.k = DeviceAlloc<bf16>(heads_elems);
      sv.v = DeviceAlloc<bf16>(heads_elems);
      sv.probs = DeviceAlloc<bf16>(probs_elems);
      sv.ctx = DeviceAlloc<bf16>(T * Hl);
      sv.ln2 = DeviceAlloc<bf16>(T * H);
      sv.up = DeviceAlloc<bf16>(T * 4 * Hl);
      sv.act = DeviceAlloc<bf16>(T * 4 * Hl);
    }
  }
  Scratch& s = r.s;
  s.qkv = DeviceAlloc<bf16>(T * 3 * Hl);
  s.partial = DeviceAlloc<bf16>(T * H);
  s.full = DeviceAlloc<bf16>(T * H);
  s.shard = DeviceAlloc<bf16>(d.shard_elems());
  s.dact = DeviceAlloc<bf16>(T * 4 * Hl);
  s.dctx = DeviceAlloc<bf16>(T * Hl);
  s.dctx_h = DeviceAlloc<bf16>(heads_elems);
  s.dprobs = DeviceAlloc<bf16>(probs_elems);
  s.dq = DeviceAlloc<bf16>(heads_elems);
  s.dk = DeviceAlloc<bf16>(heads_elems);
  s.dv = DeviceAlloc<bf16>(heads_elems);
  s.dqkv = DeviceAlloc<bf16>(T * 3 * Hl);
  r.tp_send = DeviceAlloc<float>(kTpCheckElems);
  r.tp_recv = DeviceAlloc<float>(static_cast<size_t>(d.tp) * kTpCheckElems);

  CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&r.h_tokens), sizeof(int) * M * T));
  CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&r.h_check_fill), sizeof(float) * kCheckElems));
  CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&r.h_check_out), sizeof(float) * kCheckElems));
  CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&r.h_tp_send), sizeof(float) * kTpCheckElems));
  CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&r.h_tp_recv),
                            sizeof(float) * d.tp * kTpCheckElems));
  CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&r.h_send_tags), sizeof(int) * M * 2 * kTagInts));
  CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&r.h_recv_tags), sizeof(int) * M * 2 * kTagInts));

  // Parameters: random on the device (the same on every DP replica: the seed ignores dp_idx).
  uint32_t seed = 1000u * r.lay.pp_idx + 10u * r.lay.tp_idx + 7u;
  InitUniform<<<Blocks(r.n_weights), kThreads, 0, r.compute>>>(r.weights, r.n_weights, seed,
                                                               0.02f);
  LAUNCH_CHECK();
  InitUniform<<<Blocks(static_cast<size_t>(r.opt.vocab) * H), kThreads, 0, r.compute>>>(
      r.embedding, static_cast<size_t>(r.opt.vocab) * H, 12345u, 1.0f);
  LAUNCH_CHECK();
  CUDA_CHECK(cudaMemsetAsync(r.grads, 0, sizeof(float) * (r.n_weights + kCheckElems), r.compute));
  for (int m = 0; m < M; ++m) {
    CUDA_CHECK(cudaMemsetAsync(r.x[m], 0, sizeof(bf16) * msg, r.compute));
    CUDA_CHECK(cudaMemsetAsync(r.gx[m], 0, sizeof(bf16) * msg, r.compute));
  }
  // The data-parallel replicas read different data; tensor and pipeline peers the same.
  uint32_t state = 2463534242u + 977u * r.lay.dp_idx;
  for (size_t i = 0; i < static_cast<size_t>(M) * T; ++i) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    r.h_tokens[i] = static_cast<int>(state % static_cast<uint32_t>(r.opt.vocab));
  }
  CUDA_CHECK(cudaStreamSynchronize(r.compute));
}

// ---------------------------------------------------------------------------------------------
// One step
// ---------------------------------------------------------------------------------------------

void AllGather(Rank& r, const bf16* shard, bf16* full) {
  NCCL_CHECK(ncclAllGather(shard, full, r.dim.shard_elems(), ncclBfloat16, r.tp_comm, r.compute));
}

void ReduceScatter(Rank& r, const bf16* full, bf16* shard) {
  NCCL_CHECK(ncclReduceScatter(full, shard, r.dim.shard_elems(), ncclBfloat16, ncclSum, r.tp_comm,
                               r.compute));
}

void Forward(Rank& r, int mb) {
  const Dims& d = r.dim;
  const size_t T = d.T, H = d.H, Hl = d.Hl;
  Gemms& g = r.g;
  bf16* x = r.x[mb];
  const float scale = 1.f / sqrtf(static_cast<float>(d.d));
  if (r.lay.pp_idx == 0) {
    Embedding<<<Blocks(d.shard_elems()), kThreads, 0, r.compute>>>(
        r.tokens + mb * T, r.lay.tp_idx * d.Tl, r.embedding, r.opt.vocab, x, d.Tl, d.H);
    LAUNCH_CHECK();
  }
  for (int l = 0; l < r.layers_per_stage; ++l) {
    const LayerWeights& w = r.w[l];
    Saved& sv = r.saved[mb][l];
    // Attention block (sequence parallel: all-gather in, reduce-scatter out).
    LayerNorm<<<d.Tl, kThreads, 0, r.compute>>>(x, r.s.shard, d.H);
    LAUNCH_CHECK();
    AllGather(r, r.s.shard, sv.ln1);
    Gemm(g, false, false, T, 3 * Hl, H, sv.ln1, w.qkv, r.s.qkv, false, 0.f);
    bf16* qkv_parts[3] = {sv.q, sv.k, sv.v};
    for (int i = 0; i < 3; ++i) {
      Heads<false><<<Blocks(T * Hl), kThreads, 0, r.compute>>>(r.s.qkv, 3 * Hl, i * Hl,
                                                                qkv_parts[i], d.B, d.S, d.hl, d.d);
      LAUNCH_CHECK();
    }
    const long long sh = static_cast<long long>(d.S) * d.d, ss = static_cast<long long>(d.S) * d.S;
    const int batch = d.hl * d.B;
    Gemm(g, false, true, d.S, d.S, d.d, sv.q, sv.k, sv.probs, false, 0.f, batch, sh, sh, ss);
    CausalSoftmax<<<batch * d.S, kThreads, 0, r.compute>>>(sv.probs, d.S, scale);
    LAUNCH_CHECK();
    Gemm(g, false, false, d.S, d.d, d.S, sv.probs, sv.v, r.s.dctx_h, false, 0.f, batch, ss, sh, sh);
    Heads<true><<<Blocks(T * Hl), kThreads, 0, r.compute>>>(sv.ctx, Hl, 0, r.s.dctx_h, d.B, d.S,
                                                             d.hl, d.d);
    LAUNCH_CHECK();
    LtMatmul(g, r.lt_out, sv.ctx, w.out, r.s.partial);
    ReduceScatter(r, r.s.partial, r.s.shard);
    AddInPlace<<<Blocks(d.shard_elems()), kThreads, 0, r.compute>>>(x, r.s.shard, d.shard_elems());
    LAUNCH_CHECK();
    // MLP block.
    LayerNorm<<<d.Tl, kThreads, 0, r.compute>>>(x, r.s.shard, d.H);
    LAUNCH_CHECK();
    AllGather(r, r.s.shard, sv.ln2);
    Gemm(g, false, false, T, 4 * Hl, H, sv.ln2, w.up, sv.up, false, 0.f);
    GeluForward<<<Blocks(T * 4 * Hl), kThreads, 0, r.compute>>>(sv.up, sv.act, T * 4 * Hl);
    LAUNCH_CHECK();
    LtMatmul(g, r.lt_down, sv.act, w.down, r.s.partial);
    ReduceScatter(r, r.s.partial, r.s.shard);
    AddInPlace<<<Blocks(d.shard_elems()), kThreads, 0, r.compute>>>(x, r.s.shard, d.shard_elems());
    LAUNCH_CHECK();
  }
}

void Backward(Rank& r, int mb) {
  const Dims& d = r.dim;
  const size_t T = d.T, H = d.H, Hl = d.Hl;
  Gemms& g = r.g;
  bf16* gx = r.gx[mb];
  const float scale = 1.f / sqrtf(static_cast<float>(d.d));
  if (r.lay.pp_idx == r.lay.pp - 1) {
    LossGrad<<<Blocks(d.shard_elems()), kThreads, 0, r.compute>>>(
        r.x[mb], r.tokens + mb * T, r.lay.tp_idx * d.Tl, r.embedding, r.opt.vocab, gx, d.Tl, d.H,
        1.f / static_cast<float>(T * r.opt.micro_batches));
    LAUNCH_CHECK();
  }
  for (int l = r.layers_per_stage - 1; l >= 0; --l) {
    const LayerWeights& w = r.w[l];
    const Saved& sv = r.saved[mb][l];
    // MLP block: all-gather the gradient (backward of the reduce-scatter).
    AllGather(r, gx, r.s.full);
    Gemm(g, false, true, T, 4 * Hl, H, r.s.full, w.down, r.s.dact, false, 0.f);   // dgrad
    Gemm(g, true, false, 4 * Hl, H, T, sv.act, r.s.full, w.d_down, true, 1.f);     // wgrad
    GeluBackward<<<Blocks(T * 4 * Hl), kThreads, 0, r.compute>>>(sv.up, r.s.dact, T * 4 * Hl);
    LAUNCH_CHECK();
    Gemm(g, false, true, T, H, 4 * Hl, r.s.dact, w.up, r.s.partial, false, 0.f);  // dgrad
    Gemm(g, true, false, H, 4 * Hl, T, sv.ln2, r.s.dact, w.d_up, true, 1.f);       // wgrad
    ReduceScatter(r, r.s.partial, r.s.shard);
    AddInPlace<<<Blocks(d.shard_elems()), kThreads, 0, r.compute>>>(gx, r.s.shard, d.shard_elems());
    LAUNCH_CHECK();
    // Attention block.
    AllGather(r, gx, r.s.full);
    Gemm(g, false, true, T, Hl, H, r.s.full, w.out, r.s.dctx, false, 0.f);  // dgrad
    Gemm(g, true, false, Hl, H, T, sv.ctx, r.s.full, w.d_out, true, 1.f);   // wgrad
    Heads<false><<<Blocks(T * Hl), kThreads, 0, r.compute>>>(r.s.dctx, Hl, 0, r.s.dctx_h, d.B,
                                                              d.S, d.hl, d.d);
    LAUNCH_CHECK();
    const long long sh = static_cast<long long>(d.S) * d.d, ss = static_cast<long long>(d.S) * d.S;
    const int batch = d.hl * d.B;
    Gemm(g, false, true, d.S, d.S, d.d, r.s.dctx_h, sv.v, r.s.dprobs, false, 0.f, batch, sh, sh, ss);
    Gemm(g, true, false, d.S, d.d, d.S, sv.probs, r.s.dctx_h, r.s.dv, false, 0.f, batch, ss, sh, sh);
    SoftmaxBackward<<<batch * d.S, kThreads, 0, r.compute>>>(sv.probs, r.s.dprobs, d.S, scale);
    LAUNCH_CHECK();
    Gemm(g, false, false, d.S, d.d, d.S, r.s.dprobs, sv.k, r.s.dq, false, 0.f, batch, ss, sh, sh);
    Gemm(g, true, false, d.S, d.d, d.S, r.s.dprobs, sv.q, r.s.dk, false, 0.f, batch, ss, sh, sh);
    bf16* parts[3] = {r.s.dq, r.s.dk, r.s.dv};
    for (int i = 0; i < 3; ++i) {
      Heads<true><<<Blocks(T * Hl), kThreads, 0, r.compute>>>(r.s.dqkv, 3 * Hl, i * Hl, parts[i],
                                                               d.B, d.S, d.hl, d.d);
      LAUNCH_CHECK();
    }
    Gemm(g, false, true, T, H, 3 * Hl, r.s.dqkv, w.qkv, r.s.partial, false, 0.f);  // dgrad
    Gemm(g, true, false, H, 3 * Hl, T, sv.ln1, r.s.dqkv, w.d_qkv, true, 1.f);      // wgrad
    ReduceScatter(r, r.s.partial, r.s.shard);
    AddInPlace<<<Blocks(d.shard_elems()), kThreads, 0, r.compute>>>(gx, r.s.shard, d.shard_elems());
    LAUNCH_CHECK();
  }
}

// Pipeline point-to-point. dir 0: activations to the next stage; dir 1: gradients to the previous.
int* SendTag(Rank& r, int mb, int dir) { return r.h_send_tags + (mb * 2 + dir) * kTagInts; }
int* RecvTag(Rank& r, int mb, int dir) { return r.h_recv_tags + (mb * 2 + dir) * kTagInts; }

void FillSendTags(Rank& r, int step) {
  for (int mb = 0; mb < r.opt.micro_batches; ++mb) {
    for (int dir = 0; dir < 2; ++dir) {
      int* t = SendTag(r, mb, dir);
      for (int i = 0; i < kTagInts; ++i) t[i] = i;
      t[0] = kTagMagic;
      t[1] = step;
      t[2] = mb;
      t[3] = dir;
      t[4] = r.lay.rank;
      memset(RecvTag(r, mb, dir), 0, sizeof(int) * kTagInts);
    }
  }
}

// Sends and receives of one pipeline exchange, issued as one NCCL group (Megatron's batched
// p2p: e.g. send_forward_recv_backward). mb < 0 means "nothing in that direction".
void PipelineExchange(Rank& r, int send_fwd_mb, int recv_bwd_mb, int send_bwd_mb, int recv_fwd_mb) {
  const Layout& l = r.lay;
  const bool has_next = l.pp_idx < l.pp - 1, has_prev = l.pp_idx > 0;
  const size_t n = r.dim.shard_elems() + kTagElems;
  const size_t tag_bytes = sizeof(int) * kTagInts;
  // The sender writes its tag into the tail of the message (no kernel touches that tail).
  if (send_fwd_mb >= 0 && has_next) {
    CUDA_CHECK(cudaMemcpyAsync(r.x[send_fwd_mb] + r.dim.shard_elems(), SendTag(r, send_fwd_mb, 0),
                               tag_bytes, cudaMemcpyHostToDevice, r.compute));
  }
  if (send_bwd_mb >= 0 && has_prev) {
    CUDA_CHECK(cudaMemcpyAsync(r.gx[send_bwd_mb] + r.dim.shard_elems(), SendTag(r, send_bwd_mb, 1),
                               tag_bytes, cudaMemcpyHostToDevice, r.compute));
  }
  NCCL_CHECK(ncclGroupStart());
  if (send_fwd_mb >= 0 && has_next) {
    NCCL_CHECK(ncclSend(r.x[send_fwd_mb], n, ncclBfloat16, l.pp_idx + 1, r.pp_comm, r.compute));
  }
  if (recv_bwd_mb >= 0 && has_next) {
    NCCL_CHECK(ncclRecv(r.gx[recv_bwd_mb], n, ncclBfloat16, l.pp_idx + 1, r.pp_comm, r.compute));
  }
  if (send_bwd_mb >= 0 && has_prev) {
    NCCL_CHECK(ncclSend(r.gx[send_bwd_mb], n, ncclBfloat16, l.pp_idx - 1, r.pp_comm, r.compute));
  }
  if (recv_fwd_mb >= 0 && has_prev) {
    NCCL_CHECK(ncclRecv(r.x[recv_fwd_mb], n, ncclBfloat16, l.pp_idx - 1, r.pp_comm, r.compute));
  }
  NCCL_CHECK(ncclGroupEnd());
  if (recv_bwd_mb >= 0 && has_next) {
    CUDA_CHECK(cudaMemcpyAsync(RecvTag(r, recv_bwd_mb, 1), r.gx[recv_bwd_mb] + r.dim.shard_elems(),
                               tag_bytes, cudaMemcpyDeviceToHost, r.compute));
  }
  if (recv_fwd_mb >= 0 && has_prev) {
    CUDA_CHECK(cudaMemcpyAsync(RecvTag(r, recv_fwd_mb, 0), r.x[recv_fwd_mb] + r.dim.shard_elems(),
                               tag_bytes, cudaMemcpyDeviceToHost, r.compute));
  }
}

// Megatron's non-interleaved 1F1B schedule.
void PipelineSchedule(Rank& r) {
  const int M = r.opt.micro_batches;
  const int warmup = std::min(r.lay.pp - r.lay.pp_idx - 1, M);
  const int remaining = M - warmup;
  int fwd = 0, bwd = 0;
  for (int i = 0; i < warmup; ++i) {
    PipelineExchange(r, -1, -1, -1, fwd);  // recv_forward
    Forward(r, fwd);
    PipelineExchange(r, fwd, -1, -1, -1);  // send_forward
    ++fwd;
  }
  if (remaining > 0) PipelineExchange(r, -1, -1, -1, fwd);  // recv_forward
  for (int i = 0; i < remaining; ++i) {
    Forward(r, fwd);
    PipelineExchange(r, fwd, bwd, -1, -1);  // send_forward_recv_backward
    ++fwd;
    Backward(r, bwd);
    if (i == remaining - 1) {
      PipelineExchange(r, -1, -1, bwd, -1);  // send_backward
    } else {
      PipelineExchange(r, -1, -1, bwd, fwd);  // send_backward_recv_forward
    }
    ++bwd;
  }
  for (int i = 0; i < warmup; ++i) {
    PipelineExchange(r, -1, bwd, -1, -1);  // recv_backward
    Backward(r, bwd);
    PipelineExchange(r, -1, -1, bwd, -1);  // send_backward
    ++bwd;
  }
}

struct StepResult {
  double host_ms;
  float gpu_ms;
  double flops;
};

float CheckValue(int rank, int step) { return static_cast<float>((rank + 1) * (step + 1)); }

StepResult Step(Rank& r, int step) {
  const Layout& l = r.lay;
  const int M = r.opt.micro_batches;
  auto t0 = std::chrono::steady_clock::now();
  r.g.flops = 0;
  FillSendTags(r, step);
  for (int i = 0; i < kCheckElems; ++i) r.h_check_fill[i] = CheckValue(l.rank, step);
  for (int i = 0; i < kTpCheckElems; ++i) r.h_tp_send[i] = static_cast<float>(l.rank * 1000 + step);

  CUDA_CHECK(cudaEventRecord(r.step_begin, r.compute));
  // Input batch (token ids and labels) from pinned host memory.
  CUDA_CHECK(cudaMemcpyAsync(r.tokens, r.h_tokens, sizeof(int) * M * r.dim.T,
                             cudaMemcpyHostToDevice, r.compute));
  CUDA_CHECK(cudaMemsetAsync(r.grads, 0, sizeof(float) * r.n_weights, r.compute));  // zero_grad
  // The checked tail of the gradient buffer: no GEMM or kernel writes it.
  CUDA_CHECK(cudaMemcpyAsync(r.grads + r.n_weights, r.h_check_fill, sizeof(float) * kCheckElems,
                             cudaMemcpyHostToDevice, r.compute));

  PipelineSchedule(r);

  // Data-parallel gradient all-reduce on the communication stream.
  CUDA_CHECK(cudaEventRecord(r.grads_ready, r.compute));
  CUDA_CHECK(cudaStreamWaitEvent(r.comm, r.grads_ready, 0));
  NCCL_CHECK(ncclAllReduce(r.grads, r.grads, r.n_weights + kCheckElems, ncclFloat32, ncclSum,
                           r.dp_comm, r.comm));
  CUDA_CHECK(cudaEventRecord(r.allreduce_done, r.comm));
  // Meanwhile on the compute stream: the tensor-parallel all-gather check.
  CUDA_CHECK(cudaMemcpyAsync(r.tp_send, r.h_tp_send, sizeof(float) * kTpCheckElems,
                             cudaMemcpyHostToDevice, r.compute));
  NCCL_CHECK(ncclAllGather(r.tp_send, r.tp_recv, kTpCheckElems, ncclFloat32, r.tp_comm, r.compute));
  CUDA_CHECK(cudaMemcpyAsync(r.h_tp_recv, r.tp_recv, sizeof(float) * l.tp * kTpCheckElems,
                             cudaMemcpyDeviceToHost, r.compute));
  CUDA_CHECK(cudaStreamWaitEvent(r.compute, r.allreduce_done, 0));
  SgdUpdate<<<Blocks(r.n_weights), kThreads, 0, r.compute>>>(r.weights, r.grads, r.n_weights,
                                                             1e-3f / l.dp);
  LAUNCH_CHECK();
  CUDA_CHECK(cudaMemcpyAsync(r.h_check_out, r.grads + r.n_weights, sizeof(float) * kCheckElems,
                             cudaMemcpyDeviceToHost, r.compute));
  CUDA_CHECK(cudaEventRecord(r.step_end, r.compute));
  CUDA_CHECK(cudaEventSynchronize(r.step_end));
  ncclComm_t comms[] = {r.world, r.tp_comm, r.pp_comm, r.dp_comm};
  for (ncclComm_t c : comms) {
    ncclResult_t async_err = ncclSuccess;
    NCCL_CHECK(ncclCommGetAsyncError(c, &async_err));
    NCCL_CHECK(async_err);
  }

  // Checks.
  float expected = 0.f;
  for (int i = 0; i < l.dp; ++i) expected += CheckValue(l.RankOf(l.tp_idx, i, l.pp_idx), step);
  for (int i = 0; i < kCheckElems; ++i) {
    if (r.h_check_out[i] != expected) {
      Die(1, "DP all-reduce check failed: element %d is %g, expected %g (the sum of "
             "(rank+1)*(step+1) over the %d ranks of the DP group)", i, r.h_check_out[i],
          expected, l.dp);
    }
  }
  for (int t = 0; t < l.tp; ++t) {
    float want = static_cast<float>(l.RankOf(t, l.dp_idx, l.pp_idx) * 1000 + step);
    for (int i = 0; i < kTpCheckElems; ++i) {
      float got = r.h_tp_recv[t * kTpCheckElems + i];
      if (got != want) {
        Die(1, "TP all-gather check failed: chunk %d element %d is %g, expected %g (from rank %d)",
            t, i, got, want, l.RankOf(t, l.dp_idx, l.pp_idx));
      }
    }
  }
  for (int mb = 0; mb < M; ++mb) {
    for (int dir = 0; dir < 2; ++dir) {
      bool expect = dir == 0 ? l.pp_idx > 0 : l.pp_idx < l.pp - 1;
      if (!expect) continue;
      int src = l.RankOf(l.tp_idx, l.dp_idx, l.pp_idx + (dir == 0 ? -1 : 1));
      const int* t = RecvTag(r, mb, dir);
      if (t[0] != kTagMagic || t[1] != step || t[2] != mb || t[3] != dir || t[4] != src) {
        Die(1, "pipeline %s check failed for micro-batch %d: received tag "
               "{magic %#x, step %d, micro-batch %d, dir %d, from rank %d}, expected {%#x, %d, %d, "
               "%d, %d}", dir == 0 ? "recv_forward" : "recv_backward", mb, t[0],
            t[1], t[2], t[3], t[4], kTagMagic, step, mb, dir, src);
      }
    }
  }

  StepResult res{};
  res.host_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  CUDA_CHECK(cudaEventElapsedTime(&res.gpu_ms, r.step_begin, r.step_end));
  res.flops = r.g.flops;
  return res;
}

std::string GroupList(const Layout& l, int which) {
  // which: 0 TP, 1 DP, 2 PP. Lists every group of that kind.
  std::string out;
  int count = which == 0 ? l.dp * l.pp : which == 1 ? l.tp * l.pp : l.tp * l.dp;
  for (int gi = 0; gi < count; ++gi) {
    out += gi ? " [" : "[";
    int size = which == 0 ? l.tp : which == 1 ? l.dp : l.pp;
    for (int j = 0; j < size; ++j) {
      int rank = 0;
      if (which == 0) rank = l.RankOf(j, gi % l.dp, gi / l.dp);
      if (which == 1) rank = l.RankOf(gi % l.tp, j, gi / l.tp);
      if (which == 2) rank = l.RankOf(gi % l.tp, gi / l.tp, j);
      out += (j ? " " : "") + std::to_string(rank);
    }
    out += "]";
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  demo::ProgramName() = "train_step";
  setvbuf(stdout, nullptr, _IOLBF, 0);
  Rank r;
  r.opt = ParseFlags(argc, argv);
  r.lay = MakeLayout(r.opt);
  ValidateModel(r.opt);
  const Options& o = r.opt;
  const Layout& l = r.lay;
  g_rank = l.rank;
  r.layers_per_stage = o.layers / o.pp;
  r.dim.B = o.micro_batch;
  r.dim.S = o.seq;
  r.dim.H = o.hidden;
  r.dim.heads = o.heads;
  r.dim.tp = o.tp;
  r.dim.hl = o.heads / o.tp;
  r.dim.d = o.hidden / o.heads;
  r.dim.T = o.micro_batch * o.seq;
  r.dim.Tl = r.dim.T / o.tp;
  r.dim.Hl = o.hidden / o.tp;
  if (o.hidden % o.tp != 0) UsageError("--hidden %d is not divisible by --tp %d", o.hidden, o.tp);

  int devices = 0;
  cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess || devices == 0) {
    Die(1, "no usable CUDA device: cudaGetDeviceCount() returned %s (%s), %d devices. This "
           "program needs a GPU, or the GPU simulator (run it through test/gpusim/gpusim-run).",
        cudaGetErrorName(err), cudaGetErrorString(err), devices);
  }
  const int device = l.local_rank % devices;
  CUDA_CHECK(cudaSetDevice(device));
  int nccl_version = 0;
  NCCL_CHECK(ncclGetVersion(&nccl_version));

  if (l.rank == 0) {
    printf("train_step: world %d = tp %d x dp %d x pp %d (Megatron order tp-dp-pp, tp fastest); "
           "NCCL %d.%d.%d; %d layers (%d per stage), hidden %d, heads %d, seq %d, micro-batch %d, "
           "%d micro-batches/step, %d steps\n",
           l.world, l.tp, l.dp, l.pp, nccl_version / 10000, nccl_version / 100 % 100,
           nccl_version % 100, o.layers, r.layers_per_stage, o.hidden,
           o.heads, o.seq, o.micro_batch, o.micro_batches, o.steps);
    printf("train_step: TP groups %s; DP groups %s; PP groups %s\n", GroupList(l, 0).c_str(),
           GroupList(l, 1).c_str(), GroupList(l, 2).c_str());
    std::string p2p;
    for (int p = 0; p < l.pp; ++p) {
      p2p += (p ? ", " : "") + std::string("stage ") + std::to_string(p) + ": " +
             std::to_string(P2pCallsPerStep(o, p));
    }
    printf("train_step: NCCL calls per rank and step: %d collectives (TP communicator %d, DP 1) "
           "and sends+receives (%s); communicators: world (ncclCommInitRank), then TP, PP, DP "
           "(ncclCommSplit)\n", CollectivesPerStep(o), TpCollectivesPerStep(o), p2p.c_str());
  }
  if (o.verbose) {
    printf("train_step: rank %d: local rank %d/%d, device %d of %d, tp %d dp %d pp %d\n", l.rank,
           l.local_rank, l.local_world, device, devices, l.tp_idx, l.dp_idx, l.pp_idx);
  }

  CUDA_CHECK(cudaStreamCreateWithFlags(&r.compute, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&r.comm, cudaStreamNonBlocking));
  CUDA_CHECK(cudaEventCreateWithFlags(&r.grads_ready, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventCreateWithFlags(&r.allreduce_done, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventCreate(&r.step_begin));
  CUDA_CHECK(cudaEventCreate(&r.step_end));

  CreateComms(r);

  CUBLAS_CHECK(cublasCreate(&r.g.blas));
  CUBLAS_CHECK(cublasSetStream(r.g.blas, r.compute));
  CUBLAS_CHECK(cublasSetMathMode(r.g.blas, CUBLAS_DEFAULT_MATH));
  r.g.workspace_bytes = 4u << 20;
  r.g.workspace = DeviceAlloc<char>(r.g.workspace_bytes);
  CUBLAS_CHECK(cublasSetWorkspace(r.g.blas, r.g.workspace, r.g.workspace_bytes));
  CUBLASLT_CHECK(cublasLtCreate(&r.g.lt));
  r.g.stream = r.compute;
  r.lt_out = MakeLtPlan(r.g, r.dim.T, r.dim.H, r.dim.Hl);
  r.lt_down = MakeLtPlan(r.g, r.dim.T, r.dim.H, 4 * r.dim.Hl);

  Allocate(r);

  std::vector<StepResult> results;
  for (int step = 0; step < o.steps; ++step) {
    g_step = step;
    StepResult res = Step(r, step);
    results.push_back(res);
    // The model GEMM rate over the GPU time of the step (on the simulator: the modelled time).
    double tflops = res.gpu_ms > 0 ? res.flops / (res.gpu_ms * 1e-3) / 1e12 : 0.0;
    if (l.rank == 0 || o.verbose) {
      printf("step %d/%d  %.1f ms  (gpu %.1f ms, gemm %.1f GFLOP = %.2f TFLOP/s of gpu time; dp "
             "all-reduce ok, tp all-gather ok, pp send/recv ok)\n",
             step + 1, o.steps, res.host_ms, res.gpu_ms, res.flops * 1e-9, tflops);
    }
  }

  g_step = -1;
  // Summary over the steps after the first (which includes warm-up).
  size_t first = results.size() > 1 ? 1 : 0;
  double sum = 0, gpu_sum = 0, mn = 1e300, mx = 0;
  for (size_t i = first; i < results.size(); ++i) {
    sum += results[i].host_ms;
    gpu_sum += results[i].gpu_ms;
    mn = std::min(mn, results[i].host_ms);
    mx = std::max(mx, results[i].host_ms);
  }
  double mean = sum / static_cast<double>(results.size() - first);
  if (l.rank == 0) {
    double tokens = static_cast<double>(r.dim.T) * o.micro_batches * l.dp;
    double gpu_mean = gpu_sum / static_cast<double>(results.size() - first);
    printf("train_step: done: %d steps on %d ranks; step time mean %.1f ms (gpu %.1f ms), min "
           "%.1f, max %.1f (steps %zu..%zu); %.0f tokens/s; all checks passed\n",
           o.steps, l.world, mean, gpu_mean, mn, mx, first + 1, results.size(),
           tokens / (mean * 1e-3));
  }

  if (o.linger_s > 0) {
    if (l.rank == 0) printf("train_step: lingering %d s\n", o.linger_s);
    fflush(stdout);
    demo::LingerFor(static_cast<unsigned>(o.linger_s));
  }

  DestroyLtPlan(r.lt_out);
  DestroyLtPlan(r.lt_down);
  CUBLASLT_CHECK(cublasLtDestroy(r.g.lt));
  CUBLAS_CHECK(cublasDestroy(r.g.blas));
  NCCL_CHECK(ncclCommDestroy(r.tp_comm));
  NCCL_CHECK(ncclCommDestroy(r.pp_comm));
  NCCL_CHECK(ncclCommDestroy(r.dp_comm));
  NCCL_CHECK(ncclCommDestroy(r.world));
  CUDA_CHECK(cudaStreamSynchronize(r.compute));
  CUDA_CHECK(cudaStreamSynchronize(r.comm));
  return 0;
}
