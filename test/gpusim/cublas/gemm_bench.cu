// gemm_bench: cuBLAS and cuBLASLt GEMM throughput on the matrix shapes of a 7B transformer layer.
//
// Written the way a stand-alone GPU benchmark is: plain CUDA runtime, cuBLAS and cuBLASLt calls,
// matrices filled by a kernel, CUDA events around N timed iterations after a warm-up, one line
// of results per case. It knows nothing about the simulator; test/gpusim runs it unmodified.
//
//   gemm_bench [--iters N] [--warmup N] [--tokens N]
//
// Output: a header, then one row per case:
//   api  dtype  shape  m  n  k  batch  ms/iter  TFLOPS
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK_CUDA(call)                                                   \
  do {                                                                     \
    cudaError_t err_ = (call);                                             \
    if (err_ != cudaSuccess) {                                             \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, \
              cudaGetErrorString(err_));                                   \
      exit(1);                                                             \
    }                                                                      \
  } while (0)

#define CHECK_CUBLAS(call)                                                 \
  do {                                                                     \
    cublasStatus_t st_ = (call);                                           \
    if (st_ != CUBLAS_STATUS_SUCCESS) {                                    \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, \
              cublasGetStatusName(st_));                                   \
      exit(1);                                                             \
    }                                                                      \
  } while (0)

namespace {

struct Options {
  int iters = 20;
  int warmup = 3;
  int tokens = 4096;  // batch × sequence length
};

// One GEMM: C (m×n) = op(A) (m×k) · op(B) (k×n), column-major, A transposed ("TN"), as the
// linear layers of a transformer call it (weights [out, in] row-major = column-major k×m).
struct Shape {
  const char* name;
  int m, n, k;
  int batch;
};

constexpr int kHidden = 4096, kFfn = 11008, kHeads = 32, kHeadDim = 128, kSeq = 2048;

std::vector<Shape> LinearShapes(int tokens) {
  return {
      {"qkv_proj", 3 * kHidden, tokens, kHidden, 1},
      {"attn_out", kHidden, tokens, kHidden, 1},
      {"mlp_up", 2 * kFfn, tokens, kHidden, 1},
      {"mlp_down", kHidden, tokens, kFfn, 1},
  };
}

// Attention scores per head: S (seq×seq) = Q·K^T over head_dim, batched over heads.
Shape AttentionScores(int tokens) {
  int batch = kHeads * (tokens / kSeq > 0 ? tokens / kSeq : 1);
  return {"attn_scores", kSeq, kSeq, kHeadDim, batch};
}

// Keeps the GPU busy for about `ns` nanoseconds (at the 1.98 GHz clock of an H100), so that the
// timed launches queue up behind it and host launch overhead stays out of the measurement. On
// the simulator its duration comes from XTIMER_SIM_KERNEL_TIMES.
__global__ void DelayKernel(long long ns) {
  long long start = clock64();
  while (clock64() - start < ns * 2) {
  }
}

__global__ void FillKernel(unsigned char* p, size_t bytes, unsigned seed) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < bytes; i += gridDim.x * blockDim.x) {
    p[i] = static_cast<unsigned char>((i * 2654435761u + seed) >> 24) & 0x3f;
  }
}

void* DeviceBuffer(size_t bytes, unsigned seed) {
  void* p = nullptr;
  CHECK_CUDA(cudaMalloc(&p, bytes));
  FillKernel<<<1024, 256>>>(static_cast<unsigned char*>(p), bytes, seed);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  return p;
}

class Timer {
 public:
  explicit Timer(cudaStream_t stream) : stream_(stream) {
    CHECK_CUDA(cudaEventCreate(&start_));
    CHECK_CUDA(cudaEventCreate(&stop_));
  }
  ~Timer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  // Runs `op` warmup + iters times; returns milliseconds per timed iteration.
  template <typename Op>
  double MsPerIter(const Options& opt, Op op) {
    for (int i = 0; i < opt.warmup; ++i) op();
    DelayKernel<<<1, 1, 0, stream_>>>(20 * 1000 * 1000);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaEventRecord(start_, stream_));
    for (int i = 0; i < opt.iters; ++i) op();
    CHECK_CUDA(cudaEventRecord(stop_, stream_));
    CHECK_CUDA(cudaEventSynchronize(stop_));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
    return ms / opt.iters;
  }

 private:
  cudaStream_t stream_;
  cudaEvent_t start_, stop_;
};

void Report(const char* api, const char* dtype, const Shape& s, double ms) {
  double flops = 2.0 * s.m * s.n * s.k * s.batch;
  printf("%-28s %-5s %-12s %6d %6d %6d %5d %10.4f %9.2f\n", api, dtype, s.name, s.m, s.n, s.k,
         s.batch, ms, flops / (ms * 1e-3) / 1e12);
  fflush(stdout);
}

struct Buffers {
  void* a;
  void* b;
  void* c;
};

Buffers Allocate(const Shape& s, size_t ab_bytes, size_t c_bytes) {
  size_t batch = static_cast<size_t>(s.batch);
  return {DeviceBuffer(ab_bytes * s.m * s.k * batch, 1),
          DeviceBuffer(ab_bytes * s.k * s.n * batch, 2),
          DeviceBuffer(c_bytes * s.m * s.n * batch, 3)};
}

void Free(const Buffers& b) {
  CHECK_CUDA(cudaFree(b.a));
  CHECK_CUDA(cudaFree(b.b));
  CHECK_CUDA(cudaFree(b.c));
}

void BenchCublas(const Options& opt, cudaStream_t stream) {
  cublasHandle_t handle;
  CHECK_CUBLAS(cublasCreate(&handle));
  CHECK_CUBLAS(cublasSetStream(handle, stream));
  Timer timer(stream);
  const float one = 1.0f, zero = 0.0f;

  for (const Shape& s : LinearShapes(opt.tokens)) {
    Buffers buf = Allocate(s, sizeof(__nv_bfloat16), sizeof(__nv_bfloat16));
    double ms = timer.MsPerIter(opt, [&] {
      CHECK_CUBLAS(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, s.m, s.n, s.k, &one, buf.a,
                                CUDA_R_16BF, s.k, buf.b, CUDA_R_16BF, s.k, &zero, buf.c,
                                CUDA_R_16BF, s.m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    });
    Report("cublasGemmEx", "bf16", s, ms);
    Free(buf);
  }

  {
    Shape s = AttentionScores(opt.tokens);
    Buffers buf = Allocate(s, sizeof(__half), sizeof(__half));
    double ms = timer.MsPerIter(opt, [&] {
      CHECK_CUBLAS(cublasGemmStridedBatchedEx(
          handle, CUBLAS_OP_T, CUBLAS_OP_N, s.m, s.n, s.k, &one, buf.a, CUDA_R_16F, s.k,
          static_cast<long long>(s.m) * s.k, buf.b, CUDA_R_16F, s.k,
          static_cast<long long>(s.k) * s.n, &zero, buf.c, CUDA_R_16F, s.m,
          static_cast<long long>(s.m) * s.n, s.batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    });
    Report("cublasGemmStridedBatchedEx", "fp16", s, ms);
    Free(buf);
  }

  // FP32 with TF32 tensor cores, as frameworks enable it, on a smaller layer.
  {
    Shape s = {"attn_out", kHidden, 1024, kHidden, 1};
    Buffers buf = Allocate(s, sizeof(float), sizeof(float));
    CHECK_CUBLAS(cublasSetMathMode(handle, CUBLAS_TF32_TENSOR_OP_MATH));
    double ms = timer.MsPerIter(opt, [&] {
      CHECK_CUBLAS(cublasSgemm(
          handle, CUBLAS_OP_T, CUBLAS_OP_N, s.m, s.n, s.k, &one, static_cast<const float*>(buf.a),
          s.k, static_cast<const float*>(buf.b), s.k, &zero, static_cast<float*>(buf.c), s.m));
    });
    Report("cublasSgemm", "tf32", s, ms);
    CHECK_CUBLAS(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
    ms = timer.MsPerIter(opt, [&] {
      CHECK_CUBLAS(cublasSgemm(
          handle, CUBLAS_OP_T, CUBLAS_OP_N, s.m, s.n, s.k, &one, static_cast<const float*>(buf.a),
          s.k, static_cast<const float*>(buf.b), s.k, &zero, static_cast<float*>(buf.c), s.m));
    });
    Report("cublasSgemm", "fp32", s, ms);
    Free(buf);
  }
  CHECK_CUBLAS(cublasDestroy(handle));
}

// cublasLt matmul with a bias epilogue (bf16) or with per-tensor scales (fp8, E4M3 in, bf16 out).
void BenchLt(const Options& opt, cudaStream_t stream, bool fp8) {
  cublasLtHandle_t lt;
  CHECK_CUBLAS(cublasLtCreate(&lt));
  const size_t workspace_bytes = 32u << 20;
  void* workspace = DeviceBuffer(workspace_bytes, 4);
  float* scales = static_cast<float*>(DeviceBuffer(4 * sizeof(float), 5));
  Timer timer(stream);
  const float one = 1.0f, zero = 0.0f;
  cudaDataType_t ab_type = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;

  for (const Shape& s : LinearShapes(opt.tokens)) {
    Buffers buf = Allocate(s, fp8 ? 1 : 2, 2);
    void* bias = DeviceBuffer(sizeof(__nv_bfloat16) * s.m, 6);

    cublasLtMatmulDesc_t op;
    CHECK_CUBLAS(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
    CHECK_CUBLAS(
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof(transa)));
    CHECK_CUBLAS(
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof(transb)));
    if (fp8) {
      const float* a_scale = scales;
      const float* b_scale = scales + 1;
      CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                                  &a_scale, sizeof(a_scale)));
      CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                                                  &b_scale, sizeof(b_scale)));
      int8_t fast_accum = 1;
      CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast_accum,
                                                  sizeof(fast_accum)));
    } else {
      cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
      CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                                  sizeof(epilogue)));
      CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                  sizeof(bias)));
    }
    cublasLtMatrixLayout_t a, b, c;
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&a, ab_type, s.k, s.m, s.k));
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&b, ab_type, s.k, s.n, s.k));
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&c, CUDA_R_16BF, s.m, s.n, s.m));

    cublasLtMatmulPreference_t pref;
    CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    uint64_t max_workspace = workspace_bytes;
    CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_workspace, sizeof(max_workspace)));
    cublasLtMatmulHeuristicResult_t heuristic[4] = {};
    int found = 0;
    CHECK_CUBLAS(cublasLtMatmulAlgoGetHeuristic(lt, op, a, b, c, c, pref, 4, heuristic, &found));
    if (found == 0) {
      fprintf(stderr, "no cublasLt algorithm for %s\n", s.name);
      exit(1);
    }

    double ms = timer.MsPerIter(opt, [&] {
      CHECK_CUBLAS(cublasLtMatmul(lt, op, &one, buf.a, a, buf.b, b, &zero, buf.c, c, buf.c, c,
                                  &heuristic[0].algo, workspace, workspace_bytes, stream));
    });
    Report("cublasLtMatmul", fp8 ? "fp8" : "bf16", s, ms);

    CHECK_CUBLAS(cublasLtMatmulPreferenceDestroy(pref));
    CHECK_CUBLAS(cublasLtMatrixLayoutDestroy(a));
    CHECK_CUBLAS(cublasLtMatrixLayoutDestroy(b));
    CHECK_CUBLAS(cublasLtMatrixLayoutDestroy(c));
    CHECK_CUBLAS(cublasLtMatmulDescDestroy(op));
    CHECK_CUDA(cudaFree(bias));
    Free(buf);
  }
  CHECK_CUDA(cudaFree(scales));
  CHECK_CUDA(cudaFree(workspace));
  CHECK_CUBLAS(cublasLtDestroy(lt));
}

Options Parse(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    auto value = [&](const char* flag) {
      if (i + 1 >= argc) {
        fprintf(stderr, "%s needs a value\n", flag);
        exit(2);
      }
      return atoi(argv[++i]);
    };
    if (strcmp(argv[i], "--iters") == 0) {
      opt.iters = value("--iters");
    } else if (strcmp(argv[i], "--warmup") == 0) {
      opt.warmup = value("--warmup");
    } else if (strcmp(argv[i], "--tokens") == 0) {
      opt.tokens = value("--tokens");
    } else {
      fprintf(stderr, "usage: %s [--iters N] [--warmup N] [--tokens N]\n", argv[0]);
      exit(2);
    }
  }
  if (opt.iters < 1 || opt.warmup < 0 || opt.tokens < 1) {
    fprintf(stderr, "bad options\n");
    exit(2);
  }
  return opt;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt = Parse(argc, argv);
  int device = 0;
  CHECK_CUDA(cudaGetDevice(&device));
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  int cublas_version = 0;
  CHECK_CUBLAS(cublasGetVersion(nullptr, &cublas_version));
  printf("# device %d: %s, cuBLAS %d, cuBLASLt %zu, %d iterations after %d warm-up\n", device,
         prop.name, cublas_version, cublasLtGetVersion(), opt.iters, opt.warmup);
  printf("%-28s %-5s %-12s %6s %6s %6s %5s %10s %9s\n", "api", "dtype", "shape", "m", "n", "k",
         "batch", "ms/iter", "TFLOPS");

  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  BenchCublas(opt, stream);
  BenchLt(opt, stream, /*fp8=*/false);
  BenchLt(opt, stream, /*fp8=*/true);
  CHECK_CUDA(cudaStreamDestroy(stream));
  return 0;
}
