// The recorder: the plain C++ API the shims call (and the unit tests drive). It decides whether a
// call is timed, puts an event pair from a per-device pool around it on the call's stream, and
// hands the pending op to the poller (poller.h) through a lock-free bounded queue.
//
// Hot path of a timed op (BeginTimed + EndTimed): no allocation, no lock, no system call; a few
// real CUDA calls (peek last error, is-capturing, get device, two event records). The application's
// CUDA last-error state is never changed: when it already holds an error we make no CUDA call of
// our own for the op; when one of ours fails we clear it with the real cudaGetLastError.
#ifndef XTIMER_HOOK_RECORDER_H_
#define XTIMER_HOOK_RECORDER_H_

#include <cuda_runtime_api.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <ctime>

#include "format/record.h"
#include "hook/bounded_queue.h"
#include "hook/budget.h"
#include "hook/comm_registry.h"
#include "hook/config.h"
#include "hook/kernel_table.h"
#include "hook/nccl_profiler.h"
#include "util/clock.h"

namespace xtimer {
namespace hook {

// ---------------------------------------------------------------- process state and the guard

enum Mode : int { kUninit = 0, kOn = 1, kOff = 2 };
extern std::atomic<int> g_mode;

// Set while this thread is inside a hook (so calls the real libraries make are passed through).
extern __thread bool t_in_hook
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

// First hooked call of the process: reads the configuration, starts the poller. Returns whether
// timing is on. Thread-safe; cold.
bool InitSlow();

// True when the caller should intercept (timing on, not reentrant).
inline bool Enter() {
  if (__builtin_expect(t_in_hook, 0)) return false;
  int m = g_mode.load(std::memory_order_acquire);  // pairs with InitSlow's store
  if (__builtin_expect(m == kOn, 1)) return true;
  if (m == kOff) return false;
  return InitSlow();
}

class HookScope {
 public:
  HookScope() { t_in_hook = true; }
  ~HookScope() { t_in_hook = false; }
  HookScope(const HookScope&) = delete;
  HookScope& operator=(const HookScope&) = delete;
};

class ErrnoSaver {
 public:
  ErrnoSaver() : saved_(errno) {}
  ~ErrnoSaver() { errno = saved_; }
  ErrnoSaver(const ErrnoSaver&) = delete;
  ErrnoSaver& operator=(const ErrnoSaver&) = delete;

 private:
  int saved_;
};

// ---------------------------------------------------------------------------- describing ops

// What a shim knows about a call. Filled by the shim's describe step, copied into the record.
struct OpDesc {
  format::OpKind kind = format::OpKind::kKernel;
  format::Operation op = format::Operation::kUnknown;
  format::DType dtype = format::DType::kUnknown;
  uint8_t flags = 0;
  cudaStream_t stream = nullptr;
  uint64_t bytes = 0;
  int64_t m = 0, n = 0, k = 0, batch = 0;
  uint64_t count = 0;
  int32_t peer = -1, root = -1;
  uint32_t name_id = 0;
  CommEntry* comm = nullptr;
  uint64_t seq = 0;
};

// An event pair taken from the pool for one timed op.
struct Timing {
  cudaEvent_t start = nullptr;
  cudaEvent_t end = nullptr;
  int device = -1;
  int64_t cpu_launch_ns = 0;
};

// One entry of the queue between the hot path and the poller.
struct Pending {
  // kTracked: a collective or send/recv left untimed, with only a completion mark (`end`).
  // kProfiled: the same, its completion reported by NCCL (`launch`, hook/nccl_profiler.h).
  enum State : uint8_t { kReady = 0, kTimed = 1, kFollower = 2, kTracked = 3, kProfiled = 4 };
  format::RecordSlot rec;  // an OpRecord (GPU times filled by the poller) or a CommRecord
  cudaEvent_t start;
  cudaEvent_t end;
  nccl_profiler::Launch* launch;  // kProfiled only
  int32_t device;
  uint8_t state;
  bool mark_from_pool;  // kTracked: `end` is a timing event (no mark was free), not a mark
};

// ------------------------------------------------------------------------------ recorder API

// Peeks the app's last error and the stream's capture status. False: do not time (and make no
// further CUDA call of ours for this op). *capturing tells why when known.
bool CanTime(cudaStream_t stream, bool* capturing);
// Takes an event pair and records the start event on d.stream. False: not timed (nothing to undo).
// Call CanTime first.
bool BeginTimed(const OpDesc& d, Timing* t);
// After the real call: records the end event (only if `call_ok`) and queues the op; else returns
// the events to the pool.
void EndTimed(const OpDesc& d, Timing* t, bool call_ok, uint32_t group_id);
// After the real call of a collective or send/recv the budget left untimed: records a completion
// mark on d.stream (a timing event when no mark is free) and queues the op (kTracked) with
// t->cpu_launch_ns (taken before the call); sets t->device. False: not tracked (counted as
// untimed with its cause: no event free at all, or a failed record).
bool TrackCompletion(const OpDesc& d, Timing* t, uint32_t group_id);
// The same for an op whose completion NCCL reports (a sealed launch holding a reference for this
// entry): queues it (kProfiled) without a CUDA call. False: not queued (the caller releases).
bool TrackByNccl(const OpDesc& d, Timing* t, uint32_t group_id, nccl_profiler::Launch* launch);
// Queues an op that shares the timing (or, `timed` false, the completion mark) of the previous
// op of its group on the same stream.
void QueueFollower(const OpDesc& d, int device, int64_t cpu_launch_ns, uint32_t group_id,
                   bool timed);
// Host time blocked in a synchronising call (kHostSync).
void RecordHostSync(format::Operation op, cudaStream_t stream, int64_t begin_ns, int64_t end_ns);

// Kernel launches, cold path: whether the kernel `key` (a host function, or a cudaKernel_t handle
// when `is_handle`) is timed (every kernel, or XTIMER_KERNEL_FILTER's), with its name id; caches
// the answer for `key`.
bool KernelTimed(const void* key, bool is_handle, uint32_t* name_id);
extern KernelTable* g_kernels __attribute__((visibility("hidden")));  // set before timing starts
inline KernelTable& Kernels() { return *g_kernels; }

// Communicators.
CommRegistry& Comms();
// Tries to learn rank/size/device of `entry` (hints >= 0 are used as given); emits the
// CommRecord the first time it succeeds.
void ResolveComm(const void* comm, CommEntry* entry, int rank_hint, int size_hint);
// Retries every unresolved communicator (after a group ends).
void ResolvePendingComms();
uint32_t NextGroupId();
uint64_t NextInitAllCounter();

// Waits until every op queued before the call is written to the ring (or timeout). True on
// success.
bool Flush(int timeout_ms);

struct Stats {
  uint64_t queued;          // ops handed to the poller
  uint64_t written;         // records the poller wrote to the ring
  uint64_t ring_dropped;    // records dropped because the ring was full
  uint64_t queue_dropped;   // ops dropped because the poller's queue was full
  uint64_t untimed;         // ops not timed: no pool event, app error pending, capture, ...
};
Stats GetStats();

// Init helpers shared with the poller.
const Config& GetConfig();

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_RECORDER_H_
