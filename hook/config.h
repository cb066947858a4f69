// Settings of libxtimer.so, read once from XTIMER_* (and launcher / scheduler) environment
// variables at the first hooked CUDA call. docs/hook.md lists every variable.
#ifndef XTIMER_HOOK_CONFIG_H_
#define XTIMER_HOOK_CONFIG_H_

#include <cstdint>
#include <string>

#include "format/ring.h"

namespace xtimer {
namespace hook {

constexpr uint32_t kDefaultBudgetPpm = 10000;  // 1%
constexpr uint32_t kFullBudgetPpm = 1000000;   // 100%: every op timed

struct Config {
  bool disabled = false;            // XTIMER_DISABLE=1: pure pass-through
  std::string socket_path;          // XTIMER_DAEMON_SOCKET, else $XTIMER_RUN_DIR/xtimerd.sock
  int64_t daemon_uid = -1;          // XTIMER_DAEMON_UID: a daemon uid trusted besides root and ours
  std::string job_token;            // XTIMER_JOB_TOKEN (xtimer-launch): sent with the ring
  std::string job, host, pod;       // ring identity; job: util/job_identity.h
  uint32_t ring_capacity = 65536;   // XTIMER_RING_CAPACITY (records)
  uint32_t sample_rate = 1;         // XTIMER_SAMPLE_RATE: time 1 in N calls per op signature
  // XTIMER_OVERHEAD_BUDGET: the share of each application thread's time the hook may spend on
  // its own work, in parts per million (a percentage: "1%", "1" or "0.5"; 100% times every op).
  uint32_t budget_ppm = kDefaultBudgetPpm;
  // XTIMER_LOG=jsonl|csv: the daemon writes this rank's operation log (docs/oplog.md)
  format::OpLogRequest op_log = format::OpLogRequest::kNone;
  // XTIMER_KERNEL_FILTER: an ECMAScript regex that narrows the kernels timed (empty: every one);
  // `off`, `0` or an empty value turn kernel timing off (kernels = false).
  bool kernels = true;
  std::string kernel_filter;
  // XTIMER_NCCL_PROFILER=off|0: do not take NCCL's collective and p2p completion from its
  // profiler plugin interface even where NCCL loaded libxtimer.so as its plugin (completion
  // marks instead; hook/nccl_profiler.h). `on`: xtimer-launch sets NCCL_PROFILER_PLUGIN to
  // libxtimer.so (opt-in until measured on a GPU: docs/hook.md "Collective completion").
  bool nccl_profiler = true;
  // XTIMER_PY_TRACE: the Python functions traced (hook/python_trace.h); "" when off.
  std::string python_trace = "default";
  bool python_trace_explicit = false;  // XTIMER_PY_TRACE was set
  int rank = -1, local_rank = -1, world_size = -1;  // from torchrun / MPI / PMI / Slurm
  int exit_flush_ms = 1000;         // XTIMER_EXIT_FLUSH_MS: wait at exit for ops still in flight
  bool verbose = false;             // XTIMER_VERBOSE=1: log hook decisions to stderr
  // XTIMER_STACK_SIGNAL: the real-time signal that interrupts threads for a stack capture
  // (docs/stacks.md "Capture in the process"); 0 turns native capture off. ReadConfig's default: SIGRTMIN+3.
  int stack_signal = -1;
};

// `get` is getenv or a test double. Malformed numbers are ignored (the default stays) with a
// message through `warn` (may be null).
using GetEnvFn = const char* (*)(const char*);
using WarnFn = void (*)(const char* message);
Config ReadConfig(GetEnvFn get, WarnFn warn);

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_CONFIG_H_
