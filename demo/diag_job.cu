// diag_job: one rank of a small tp/pp/dp training-like job whose faults are injected in the
// program itself: a rank that stops in host code before a collective or a pipeline send, calls
// the wrong collective, count, datatype or root, crashes (SIGSEGV, SIGKILL or exit(1)), computes
// more than its peers or leaves host gaps. The workload that
// xtimer's diagnosis (hang culprits, mismatches, stragglers, slow links) is shown and tested on;
// see docs/demo.md ("The diagnosis job") for what a step does and every flag.
//
// Real CUDA + cuBLAS + NCCL code (nvcc -cudart shared): it runs on GPUs as it is and on the GPU
// simulator (test/gpusim). Start one process per rank with demo/launch.py (or torchrun).
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <nvtx3/nvToolsExt.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdarg>
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

using demo::EnvLong;
using demo::ParseLong;
using demo::UsageError;

int g_rank = -1;

[[noreturn]] void Die(int code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

void Die(int code, const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (g_rank >= 0) {
    fprintf(stderr, "diag_job: rank %d: %s\n", g_rank, msg);
  } else {
    fprintf(stderr, "diag_job: %s\n", msg);
  }
  exit(code);
}

#define CUDA_CHECK(call)                                                                  \
  do {                                                                                    \
    cudaError_t err_ = (call);                                                            \
    if (err_ != cudaSuccess) {                                                            \
      Die(1, "%s:%d: %s failed: %s", __FILE__, __LINE__, #call, cudaGetErrorString(err_)); \
    }                                                                                     \
  } while (0)

#define CUBLAS_CHECK(call)                                                              \
  do {                                                                                  \
    cublasStatus_t st_ = (call);                                                        \
    if (st_ != CUBLAS_STATUS_SUCCESS) {                                                 \
      Die(1, "%s:%d: %s failed: %s", __FILE__, __LINE__, #call, cublasGetStatusString(st_)); \
    }                                                                                   \
  } while (0)

#define NCCL_CHECK(call)                                                                   \
  do {                                                                                     \
    ncclResult_t res_ = (call);                                                            \
    if (res_ != ncclSuccess) {                                                             \
      Die(1, "%s:%d: %s failed: %s", __FILE__, __LINE__, #call, ncclGetErrorString(res_)); \
    }                                                                                      \
  } while (0)

const char kUsage[] =
    "usage: diag_job [FLAGS]\n"
    "\n"
    "One rank of a training-like job with tensor, pipeline and data parallel groups (made with\n"
    "ncclCommSplit; Megatron order, tp fastest: rank = tp_idx + tp * (dp_idx + dp * pp_idx)).\n"
    "Per step: forward bf16 GEMMs, a TP all-reduce, the activation sent to the next pipeline\n"
    "stage, backward GEMMs, a TP all-reduce, the gradient sent back, a DP all-reduce of the\n"
    "gradients, an all-reduce of the embedding gradients over the pipeline group and a loss\n"
    "all-reduce over the tensor-and-data-parallel group of the stage (tp * dp ranks); then one\n"
    "event recorded; the host runs at most --queue-steps steps ahead of the GPU (it waits for\n"
    "the event of the step that many steps back). Faults are injected by the program itself.\n"
    "See docs/demo.md.\n"
    "\n"
    "Layout and work:\n"
    "  --tp N, --pp N      tensor- and pipeline-parallel sizes (default 2, 2); dp is\n"
    "                      WORLD_SIZE / (tp * pp)\n"
    "  --steps N           steps (default 10)\n"
    "  --gemm-dim D        every GEMM is D x D x D, bf16 (default 8192)\n"
    "  --gemms N           GEMMs per step, half forward, half backward (default 8, even)\n"
    "  --tp-count N        bf16 elements of each TP all-reduce (default 262144)\n"
    "  --dp-count N        fp32 elements of the DP all-reduce (default 262144)\n"
    "  --pp-count N        bf16 elements of each pipeline send/recv and of the embedding\n"
    "                      all-reduce (default 131072)\n"
    "  --queue-steps N     steps the host may queue ahead of the GPU (default 2; 1: wait for\n"
    "                      each step to finish before the next)\n"
    "  --linger S          stay alive S seconds after the last step (default 0)\n"
    "  --rendezvous-timeout S  seconds a rank waits for rank 0's NCCL id (default 120)\n"
    "  --verbose           every rank prints a line per step (default: rank 0 only)\n"
    "Faults (RANK is a global rank, STEP is 1-based; each flag may be repeated):\n"
    "  --stop-before-collective RANK:STEP  the rank stops in host code (sleeps forever) just\n"
    "                      before the first TP all-reduce of that step\n"
    "  --stop-before-dp-allreduce RANK:STEP  the rank stops in host code (in StopInHostCode,\n"
    "                      called by DpAllReduce) just before the DP all-reduce of that step,\n"
    "                      after the step's TP all-reduces and pipeline sends\n"
    "  --stop-before-send RANK:STEP  the rank stops in host code just before its first pipeline\n"
    "                      send of that step (send_forward; send_backward on the last stage);\n"
    "                      needs --pp >= 2\n"
    "  --mismatch-op RANK:STEP  the rank calls ncclAllGather (count / (tp*dp) per rank, the same\n"
    "                      bytes received) where its peers call the step's loss ncclAllReduce\n"
    "  --mismatch-count RANK:STEP  the rank passes half the count to the loss all-reduce\n"
    "  --mismatch-dtype RANK:STEP  the rank passes ncclInt32 (the same bytes) where its peers\n"
    "                      pass ncclFloat32 to the loss all-reduce\n"
    "  --mismatch-root RANK:STEP  at that step every rank's loss collective is an ncclBroadcast\n"
    "                      from the group's rank 0; this rank names root 1 (needs tp*dp >= 2)\n"
    "  --crash RANK:STEP[:HOW]  the rank dies just before the step's first TP all-reduce; HOW:\n"
    "                      segv (raise SIGSEGV, the default), kill (raise SIGKILL) or exit\n"
    "                      (exit(1))\n"
    "  --compute-factor RANK:F  the rank's GEMMs do F times more work (k = F * D), F >= 1\n"
    "  --host-gap RANK:MS  the rank sleeps MS milliseconds before its launches of every step,\n"
    "                      in LoadBatch (a slow data loader), inside the NVTX range\n"
    "                      load_batch\n"
    "  --help              print this help and exit\n"
    "Flags take their value as '--flag V' or '--flag=V'.\n"
    "\n"
    "Environment (torchrun convention): RANK, WORLD_SIZE, LOCAL_RANK; XTIMER_DEMO_RENDEZVOUS, a\n"
    "directory shared by all ranks (demo/launch.py sets it).\n"
    "Exit status: 0 success, 1 a failed CUDA/cuBLAS/NCCL call (or --crash ...:exit), 2 bad\n"
    "usage.\n";

// A "RANK:VALUE" fault argument.
struct Fault {
  int rank;
  double value;
  int how = 0;  // index into the flag's HOW words (--crash), 0 without one
};

// --crash's HOW words, in the order of CrashHow.
const char* const kCrashHows[] = {"segv", "kill", "exit", nullptr};
enum CrashHow { kCrashSegv = 0, kCrashKill = 1, kCrashExit = 2 };

struct Options {
  long tp = 2, pp = 2, steps = 10, gemm_dim = 8192, gemms = 8;
  long tp_count = 1 << 18, dp_count = 1 << 18, pp_count = 1 << 17;
  long loss_count = 1024;  // fp32 elements of the loss all-reduce (tp * dp divides it)
  long queue_steps = 2;
  long linger_s = 0, rendezvous_timeout_s = 120;
  bool verbose = false;
  std::vector<Fault> stop, stop_dp, stop_send, mismatch_op, mismatch_count, mismatch_dtype, mismatch_root,
      crash, compute_factor, host_gap;
};

// The index of `word` in the null-terminated list `hows`, or -1.
int HowIndex(const char* const* hows, const std::string& word) {
  for (int i = 0; hows != nullptr && hows[i] != nullptr; ++i) {
    if (word == hows[i]) return i;
  }
  return -1;
}

// "RANK:VALUE", or "RANK:VALUE:HOW" when the flag has HOW words (`hows`, null-terminated).
Fault ParseFault(const std::string& flag, const char* v, double min, double max, bool integer,
                 const char* const* hows) {
  const char* colon = strchr(v, ':');
  long rank = 0;
  if (colon != nullptr) {
    std::string r(v, static_cast<size_t>(colon - v));
    std::string rest(colon + 1), how;
    const size_t second = rest.find(':');
    if (hows != nullptr && second != std::string::npos) {
      how = rest.substr(second + 1);
      rest.resize(second);
    }
    const int how_index = how.empty() ? 0 : HowIndex(hows, how);
    if (ParseLong(r.c_str(), 0, INT_MAX, &rank) && how_index >= 0) {
      char* end = nullptr;
      errno = 0;
      double x = strtod(rest.c_str(), &end);
      bool ok = errno == 0 && !rest.empty() && *end == '\0' && std::isfinite(x) && x >= min &&
                x <= max && (!integer || x == std::floor(x));
      if (ok) return Fault{static_cast<int>(rank), x, how_index};
    }
  }
  std::string hows_text;
  for (int i = 0; hows != nullptr && hows[i] != nullptr; ++i) {
    hows_text += (i == 0 ? "[:" : "|") + std::string(hows[i]);
  }
  if (!hows_text.empty()) hows_text += "]";
  UsageError("flag %s: '%s' is not RANK:%s%s with a value in [%g, %g]", flag.c_str(), v,
             integer ? "N" : "F", hows_text.c_str(), min, max);
}

Options ParseFlags(int argc, char** argv) {
  Options o;
  struct IntFlag {
    const char* name;
    long* value;
    long min, max;
  };
  const IntFlag ints[] = {
      {"--tp", &o.tp, 1, 1024},          {"--pp", &o.pp, 1, 1024},
      {"--steps", &o.steps, 1, 1L << 30}, {"--gemm-dim", &o.gemm_dim, 1, 1 << 16},
      {"--gemms", &o.gemms, 0, 1 << 16},   {"--tp-count", &o.tp_count, 1, 1L << 28},
      {"--dp-count", &o.dp_count, 1, 1L << 28}, {"--pp-count", &o.pp_count, 1, 1L << 28},
      {"--linger", &o.linger_s, 0, 1 << 20},
      {"--queue-steps", &o.queue_steps, 1, 64},
      {"--rendezvous-timeout", &o.rendezvous_timeout_s, 1, 1 << 20},
  };
  struct FaultFlag {
    const char* name;
    std::vector<Fault>* list;
    double min, max;
    bool integer;
    const char* const* hows;  // the words allowed after a second colon, or null
  };
  const FaultFlag faults[] = {
      {"--stop-before-collective", &o.stop, 1, 1e9, true, nullptr},
      {"--stop-before-dp-allreduce", &o.stop_dp, 1, 1e9, true, nullptr},
      {"--stop-before-send", &o.stop_send, 1, 1e9, true, nullptr},
      {"--mismatch-op", &o.mismatch_op, 1, 1e9, true, nullptr},
      {"--mismatch-count", &o.mismatch_count, 1, 1e9, true, nullptr},
      {"--mismatch-dtype", &o.mismatch_dtype, 1, 1e9, true, nullptr},
      {"--mismatch-root", &o.mismatch_root, 1, 1e9, true, nullptr},
      {"--crash", &o.crash, 1, 1e9, true, kCrashHows},
      {"--compute-factor", &o.compute_factor, 1, 100, false, nullptr},
      {"--host-gap", &o.host_gap, 0, 1e6, true, nullptr},
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
    const IntFlag* int_flag = nullptr;
    const FaultFlag* fault_flag = nullptr;
    for (const IntFlag& f : ints) {
      if (name == f.name) int_flag = &f;
    }
    for (const FaultFlag& f : faults) {
      if (name == f.name) fault_flag = &f;
    }
    if (int_flag == nullptr && fault_flag == nullptr) demo::UnknownArgument(argv[i]);
    value = demo::FlagValue(argc, argv, &i, name, value);
    if (int_flag != nullptr) {
      if (!ParseLong(value, int_flag->min, int_flag->max, int_flag->value)) {
        UsageError("flag %s: '%s' is not an integer in [%ld, %ld]", name.c_str(), value,
                   int_flag->min, int_flag->max);
      }
    } else {
      fault_flag->list->push_back(ParseFault(name, value, fault_flag->min, fault_flag->max,
                                             fault_flag->integer, fault_flag->hows));
    }
  }
  if (o.gemms % 2 != 0) UsageError("--gemms %ld is not even", o.gemms);
  if (!o.stop_send.empty() && o.pp < 2) UsageError("--stop-before-send needs --pp 2 or more");
  return o;
}

// True when `faults` names (rank, step); step is 1-based.
bool Names(const std::vector<Fault>& faults, int rank, long step) {
  for (const Fault& f : faults) {
    if (f.rank == rank && static_cast<long>(f.value) == step) return true;
  }
  return false;
}

// The fault of `faults` naming (rank, step), or null; step is 1-based.
const Fault* Find(const std::vector<Fault>& faults, int rank, long step) {
  for (const Fault& f : faults) {
    if (f.rank == rank && static_cast<long>(f.value) == step) return &f;
  }
  return nullptr;
}

// True when `faults` names `step` for any rank.
bool NamesStep(const std::vector<Fault>& faults, long step) {
  for (const Fault& f : faults) {
    if (static_cast<long>(f.value) == step) return true;
  }
  return false;
}

// The value a fault list gives this rank (the last one), else `def`.
double ValueFor(const std::vector<Fault>& faults, int rank, double def) {
  for (const Fault& f : faults) {
    if (f.rank == rank) def = f.value;
  }
  return def;
}

struct Rank {
  Options opt;
  int rank = 0, world = 1, tp_idx = 0, dp_idx = 0, pp_idx = 0, dp = 1;
  ncclComm_t world_comm = nullptr, tp_comm = nullptr, pp_comm = nullptr, dp_comm = nullptr,
             tpdp_comm = nullptr;
  cudaStream_t stream = nullptr;
  std::vector<cudaEvent_t> step_done;  // one per queued step, reused round robin
  cublasHandle_t blas = nullptr;
  long gemm_k = 0;  // D * compute factor
  int host_gap_ms = 0;
  __nv_bfloat16 *a = nullptr, *b = nullptr, *c = nullptr;
  __nv_bfloat16 *tp_buf = nullptr, *act = nullptr, *grad_in = nullptr, *emb = nullptr;
  float *dp_buf = nullptr, *loss = nullptr;
};

// Device memory of n elements, zeroed when `zero` (the GEMM operands are left as they are: their
// values matter to nothing, and on the simulator untouched memory costs no host memory).
template <typename T>
T* DeviceAlloc(size_t n, bool zero = true) {
  void* p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)));
  if (zero) CUDA_CHECK(cudaMemset(p, 0, std::max<size_t>(n, 1) * sizeof(T)));
  return static_cast<T*>(p);
}

void Setup(Rank& r) {
  const Options& o = r.opt;
  r.world = static_cast<int>(EnvLong("WORLD_SIZE", 1, 1));
  r.rank = static_cast<int>(EnvLong("RANK", 0, 0));
  g_rank = r.rank;
  if (r.rank >= r.world) UsageError("RANK=%d is not below WORLD_SIZE=%d", r.rank, r.world);
  if (r.world % (o.tp * o.pp) != 0) {
    UsageError("WORLD_SIZE=%d is not divisible by tp*pp=%ld", r.world, o.tp * o.pp);
  }
  const int tp = static_cast<int>(o.tp);
  r.dp = r.world / tp / static_cast<int>(o.pp);
  if (!o.mismatch_root.empty() && tp * r.dp < 2) {
    UsageError("--mismatch-root needs tp * dp >= 2 (the loss group has %d rank)", tp * r.dp);
  }
  if (o.loss_count % (tp * r.dp) != 0) {
    UsageError("tp * dp = %d does not divide the loss all-reduce's %ld elements", tp * r.dp,
               o.loss_count);
  }
  r.tp_idx = r.rank % tp;
  r.dp_idx = (r.rank / tp) % r.dp;
  r.pp_idx = r.rank / (tp * r.dp);
  const double factor = ValueFor(o.compute_factor, r.rank, 1.0);
  r.gemm_k = std::max(1L, std::lround(static_cast<double>(o.gemm_dim) * factor));
  r.host_gap_ms = static_cast<int>(ValueFor(o.host_gap, r.rank, 0));

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    Die(1, "no usable CUDA device (run it on a GPU, or through test/gpusim/gpusim-run)");
  }
  CUDA_CHECK(cudaSetDevice(static_cast<int>(EnvLong("LOCAL_RANK", r.rank, 0)) % devices));
  CUDA_CHECK(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking));
  r.step_done.resize(static_cast<size_t>(o.queue_steps));
  for (cudaEvent_t& e : r.step_done) {
    CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  CUBLAS_CHECK(cublasCreate(&r.blas));
  CUBLAS_CHECK(cublasSetStream(r.blas, r.stream));

  ncclUniqueId id;
  std::string error;
  int code = 1;
  if (!demo::ShareNcclId(r.rank, r.world, static_cast<int>(o.rendezvous_timeout_s), &id, &error,
                         &code)) {
    Die(code, "%s", error.c_str());
  }
  NCCL_CHECK(ncclCommInitRank(&r.world_comm, r.world, id, r.rank));
  // Colors: the index of the group among groups of its kind; key: the global rank.
  NCCL_CHECK(ncclCommSplit(r.world_comm, r.pp_idx * r.dp + r.dp_idx, r.rank, &r.tp_comm, nullptr));
  NCCL_CHECK(ncclCommSplit(r.world_comm, r.dp_idx * tp + r.tp_idx, r.rank, &r.pp_comm, nullptr));
  NCCL_CHECK(ncclCommSplit(r.world_comm, r.pp_idx * tp + r.tp_idx, r.rank, &r.dp_comm, nullptr));
  NCCL_CHECK(ncclCommSplit(r.world_comm, r.pp_idx, r.rank, &r.tpdp_comm, nullptr));

  const size_t d = static_cast<size_t>(o.gemm_dim);
  r.a = DeviceAlloc<__nv_bfloat16>(d * static_cast<size_t>(r.gemm_k), false);
  r.b = DeviceAlloc<__nv_bfloat16>(static_cast<size_t>(r.gemm_k) * d, false);
  r.c = DeviceAlloc<__nv_bfloat16>(d * d, false);
  r.tp_buf = DeviceAlloc<__nv_bfloat16>(static_cast<size_t>(o.tp_count));
  r.act = DeviceAlloc<__nv_bfloat16>(static_cast<size_t>(o.pp_count));
  r.grad_in = DeviceAlloc<__nv_bfloat16>(static_cast<size_t>(o.pp_count));
  r.emb = DeviceAlloc<__nv_bfloat16>(static_cast<size_t>(o.pp_count));
  r.dp_buf = DeviceAlloc<float>(static_cast<size_t>(o.dp_count));
  r.loss = DeviceAlloc<float>(static_cast<size_t>(o.loss_count));
}

void Gemms(Rank& r, long n) {
  const int d = static_cast<int>(r.opt.gemm_dim), k = static_cast<int>(r.gemm_k);
  const float alpha = 1.f, beta = 0.f;
  for (long i = 0; i < n; ++i) {
    CUBLAS_CHECK(cublasGemmEx(r.blas, CUBLAS_OP_N, CUBLAS_OP_N, d, d, k, &alpha, r.a, CUDA_R_16BF,
                              d, r.b, CUDA_R_16BF, k, &beta, r.c, CUDA_R_16BF, d,
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
}

// Stops this rank in host code for good, after saying so on stderr. Never inlined: a stopped
// rank's stack names it (xtimer stacks; test/e2e/hang_agreement_e2e.py looks for it).
[[noreturn]] __attribute__((noinline)) void StopInHostCode(const Rank& r, const char* where, long step) {
  fprintf(stderr, "diag_job: rank %d stops in host code before its %s of step %ld\n", r.rank,
          where, step);
  fflush(stderr);
  while (true) pause();
}

// Kills this rank the way `crash` says (SIGSEGV, SIGKILL or exit(1)), after saying so on stderr.
[[noreturn]] void Crash(const Rank& r, const Fault& crash, long step) {
  static const char* const kWhat[] = {"raises SIGSEGV", "raises SIGKILL", "calls exit(1)"};
  fprintf(stderr, "diag_job: rank %d %s before its TP all-reduce of step %ld\n", r.rank,
          kWhat[crash.how], step);
  fflush(stderr);
  if (crash.how == kCrashExit) exit(1);
  raise(crash.how == kCrashKill ? SIGKILL : SIGSEGV);
  abort();  // a handler returned from SIGSEGV
}

// The step's first TP all-reduce, where a rank stops or crashes in host code.
void FirstTpAllReduce(Rank& r, long step) {
  const Options& o = r.opt;
  if (Names(o.stop, r.rank, step)) StopInHostCode(r, "TP all-reduce", step);
  if (const Fault* crash = Find(o.crash, r.rank, step)) Crash(r, *crash, step);
  NCCL_CHECK(ncclAllReduce(r.tp_buf, r.tp_buf, static_cast<size_t>(o.tp_count), ncclBfloat16,
                           ncclSum, r.tp_comm, r.stream));
}

// The DP all-reduce of the gradients, where a rank named by --stop-before-dp-allreduce stops in
// host code. Never inlined, so that the stopped rank's stack shows which collective it stopped
// before.
__attribute__((noinline)) void DpAllReduce(Rank& r, long step) {
  const Options& o = r.opt;
  if (Names(o.stop_dp, r.rank, step)) StopInHostCode(r, "DP all-reduce", step);
  NCCL_CHECK(ncclAllReduce(r.dp_buf, r.dp_buf, static_cast<size_t>(o.dp_count), ncclFloat32,
                           ncclSum, r.dp_comm, r.stream));
}

// The loss all-reduce over the stage's tp * dp ranks, where a rank calls the wrong collective,
// count or datatype; at a --mismatch-root step, a broadcast where a rank names the wrong root.
void LossAllReduce(Rank& r, long step) {
  const Options& o = r.opt;
  size_t count = static_cast<size_t>(o.loss_count);
  if (NamesStep(o.mismatch_root, step)) {
    int root = 0;
    if (Names(o.mismatch_root, r.rank, step)) {
      root = 1;
      fprintf(stderr, "diag_job: rank %d broadcasts the loss from root 1 where its peers name "
              "root 0 (step %ld)\n", r.rank, step);
    }
    NCCL_CHECK(ncclBroadcast(r.loss, r.loss, count, ncclFloat32, root, r.tpdp_comm, r.stream));
    return;
  }
  ncclDataType_t dtype = ncclFloat32;
  if (Names(o.mismatch_dtype, r.rank, step)) {
    dtype = ncclInt32;
    fprintf(stderr, "diag_job: rank %d passes ncclInt32 to the loss all-reduce of step %ld (its "
            "peers ncclFloat32)\n", r.rank, step);
  }
  if (Names(o.mismatch_op, r.rank, step)) {
    fprintf(stderr, "diag_job: rank %d calls ncclAllGather where its peers call the loss "
            "ncclAllReduce (step %ld)\n", r.rank, step);
    NCCL_CHECK(ncclAllGather(r.loss, r.loss, count / static_cast<size_t>(o.tp * r.dp),
                             ncclFloat32, r.tpdp_comm, r.stream));
    return;
  }
  if (Names(o.mismatch_count, r.rank, step)) {
    count /= 2;
    fprintf(stderr, "diag_job: rank %d passes count %zu to the loss all-reduce of step %ld (its "
            "peers %ld)\n", r.rank, count, step, o.loss_count);
  }
  NCCL_CHECK(ncclAllReduce(r.loss, r.loss, count, dtype, ncclSum, r.tpdp_comm, r.stream));
}

// Send `buf` to pipeline stage peer_stage or receive from it into `buf`; a rank named by
// --stop-before-send stops before its first send of `step` (send_forward, or send_backward on the
// last stage).
void PipelineP2p(Rank& r, __nv_bfloat16* buf, int peer_stage, bool send, long step = 0) {
  const size_t n = static_cast<size_t>(r.opt.pp_count);
  if (peer_stage < 0 || peer_stage >= r.opt.pp) return;
  const bool first_send = peer_stage == (r.pp_idx + 1 < r.opt.pp ? r.pp_idx + 1 : r.pp_idx - 1);
  if (send && first_send && Names(r.opt.stop_send, r.rank, step)) {
    StopInHostCode(r, peer_stage > r.pp_idx ? "send_forward" : "send_backward", step);
  }
  NCCL_CHECK(ncclGroupStart());
  if (send) {
    NCCL_CHECK(ncclSend(buf, n, ncclBfloat16, peer_stage, r.pp_comm, r.stream));
  } else {
    NCCL_CHECK(ncclRecv(buf, n, ncclBfloat16, peer_stage, r.pp_comm, r.stream));
  }
  NCCL_CHECK(ncclGroupEnd());
}

// Waits until the GPU finished step `step` (1-based), then checks every communicator's
// asynchronous error.
void WaitForStep(Rank& r, long step) {
  CUDA_CHECK(cudaEventSynchronize(r.step_done[static_cast<size_t>(step) % r.step_done.size()]));
  ncclComm_t comms[] = {r.tp_comm, r.pp_comm, r.dp_comm, r.tpdp_comm};
  for (ncclComm_t c : comms) {
    ncclResult_t async_err = ncclSuccess;
    NCCL_CHECK(ncclCommGetAsyncError(c, &async_err));
    NCCL_CHECK(async_err);
  }
}

// The step's data loading on the host, where a rank named by --host-gap spends its gap: a slow
// data loader (the GPU idles meanwhile once the gap exceeds the work queued), inside the NVTX
// range "load_batch" that a host straggler's verdict names (docs/analysis.md "Host spans"). Never
// inlined, so that a stack taken meanwhile names it.
__attribute__((noinline)) void LoadBatch(const Rank& r) {
  if (r.host_gap_ms <= 0) return;
  nvtxRangePushA("load_batch");
  std::this_thread::sleep_for(std::chrono::milliseconds(r.host_gap_ms));
  nvtxRangePop();
}

// Queues step `step`; returns the host milliseconds since the previous step was queued.
double Step(Rank& r, long step) {
  const Options& o = r.opt;
  auto t0 = std::chrono::steady_clock::now();
  if (step > o.queue_steps) WaitForStep(r, step - o.queue_steps);
  LoadBatch(r);
  const int prev = r.pp_idx - 1, next = r.pp_idx + 1;
  PipelineP2p(r, r.act, prev, false);  // recv_forward
  Gemms(r, o.gemms / 2);               // forward
  FirstTpAllReduce(r, step);
  PipelineP2p(r, r.act, next, true, step);  // send_forward
  PipelineP2p(r, r.grad_in, next, false);  // recv_backward
  Gemms(r, o.gemms / 2);                   // backward
  NCCL_CHECK(ncclAllReduce(r.tp_buf, r.tp_buf, static_cast<size_t>(o.tp_count), ncclBfloat16,
                           ncclSum, r.tp_comm, r.stream));
  PipelineP2p(r, r.grad_in, prev, true, step);  // send_backward
  DpAllReduce(r, step);
  if (o.pp > 1) {
    NCCL_CHECK(ncclAllReduce(r.emb, r.emb, static_cast<size_t>(o.pp_count), ncclBfloat16, ncclSum,
                             r.pp_comm, r.stream));
  }
  LossAllReduce(r, step);
  CUDA_CHECK(cudaEventRecord(r.step_done[static_cast<size_t>(step) % r.step_done.size()],
                             r.stream));
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  demo::ProgramName() = "diag_job";
  setvbuf(stdout, nullptr, _IOLBF, 0);
  Rank r;
  r.opt = ParseFlags(argc, argv);
  Setup(r);
  const Options& o = r.opt;
  if (r.rank == 0) {
    printf("diag_job: world %d = tp %ld x dp %d x pp %ld; %ld GEMMs of %ld^3 per step; TP "
           "all-reduce %ld bf16, DP all-reduce %ld fp32, pipeline send/recv and embedding "
           "all-reduce %ld bf16\n",
           r.world, o.tp, r.dp, o.pp, o.gemms, o.gemm_dim, o.tp_count, o.dp_count, o.pp_count);
  }
  if (r.gemm_k != o.gemm_dim || r.host_gap_ms > 0) {
    printf("diag_job: rank %d: GEMM k %ld (compute factor %.3g), host gap %d ms per step\n",
           r.rank, r.gemm_k, static_cast<double>(r.gemm_k) / o.gemm_dim, r.host_gap_ms);
  }
  for (long step = 1; step <= o.steps; ++step) {
    double ms = Step(r, step);
    if (r.rank == 0 || o.verbose) printf("step %ld/%ld %.1f ms\n", step, o.steps, ms);
  }
  for (long step = std::max(1L, o.steps - o.queue_steps + 1); step <= o.steps; ++step) {
    WaitForStep(r, step);
  }
  if (r.rank == 0) printf("diag_job: done: %ld steps on %d ranks\n", o.steps, r.world);
  if (o.linger_s > 0) demo::LingerFor(static_cast<unsigned>(o.linger_s));
  for (cudaEvent_t e : r.step_done) CUDA_CHECK(cudaEventDestroy(e));
  CUBLAS_CHECK(cublasDestroy(r.blas));
  ncclComm_t comms[] = {r.tp_comm, r.pp_comm, r.dp_comm, r.tpdp_comm, r.world_comm};
  for (ncclComm_t c : comms) NCCL_CHECK(ncclCommDestroy(c));
  return 0;
}
