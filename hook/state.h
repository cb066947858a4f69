// Process-wide state of libxtimer.so shared by the recorder (hot path) and the poller. Internal.
#ifndef XTIMER_HOOK_STATE_H_
#define XTIMER_HOOK_STATE_H_

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <mutex>

#include "format/ring.h"
#include "hook/bounded_queue.h"
#include "hook/budget.h"
#include "hook/comm_registry.h"
#include "hook/config.h"
#include "hook/kernel_table.h"
#include "hook/nvtx_strings.h"
#include "hook/recorder.h"

namespace xtimer {
namespace hook {

class Poller;

constexpr int kMaxDevices = 64;
// A device's event pool starts with kInitialEvents, made on the application's thread at its first
// timed op on the device (kept small: that op waits for them). The poller then grows it,
// kEventGrowStep at a time, to kSteadyEvents at once and beyond whenever fewer than a quarter of
// its events are free, up to kMaxEvents (32768 timed ops in flight per device). Growth happens off
// the hot path; the pool's slots are allocated once.
constexpr size_t kInitialEvents = 2048;
constexpr size_t kSteadyEvents = 8192;
constexpr size_t kEventGrowStep = 2048;
constexpr size_t kMaxEvents = 65536;
// Completion marks (cudaEventDisableTiming events, 628 ns to record on an H200 against 1,932 for
// a timing event) for the collectives the budget leaves untimed: kInitialMarks made with the
// device's first events, grown by the poller like the timing events up to kMaxMarks.
constexpr size_t kInitialMarks = 256;
constexpr size_t kSteadyMarks = 1024;
constexpr size_t kMaxMarks = 16384;
constexpr size_t kQueueCapacity = 16384;

struct DeviceState {
  explicit DeviceState(int id) : device(id), pool(kMaxEvents), marks(kMaxMarks) {}
  const int device;
  bool ok = false;
  BoundedQueue<cudaEvent_t> pool;
  std::atomic<size_t> created{0};  // events made for the pool (grown by the poller only)
  BoundedQueue<cudaEvent_t> marks;  // completion marks
  std::atomic<size_t> marks_created{0};
  // Host-clock alignment: ref_event completed at host time ref_host_ns. Only the poller reads or
  // moves them after initialisation.
  cudaEvent_t ref_event = nullptr;
  int64_t ref_host_ns = 0;
};

struct State {
  State() : queue(kQueueCapacity) {}
  Config config;
  int pid = 0;
  BoundedQueue<Pending> queue;
  std::atomic<DeviceState*> devices[kMaxDevices] = {};
  // One past the highest index in `devices` set so far (raised under device_mu): the poller's
  // walks over devices stop there instead of at kMaxDevices.
  std::atomic<int> device_end{0};
  std::mutex device_mu;
  CommRegistry comms;
  KernelTable kernels;
  NvtxStrings nvtx_strings;  // the NVTX injection's messages and domain names
  std::atomic<uint64_t> nvtx_dropped{0};  // NVTX records the full queue dropped
  std::atomic<uint32_t> group_counter{0};
  std::atomic<uint64_t> initall_counter{0};
  budget::Slot budget_slots[budget::kSlots];
  std::atomic<uint32_t> budget_epoch{0};  // advanced by the poller every budget::kEpochNs
  // Ops considered for timing and ops timed, by OpKind (the ring header's op_calls / op_timed).
  std::atomic<uint64_t> op_calls[format::kOpKindSlots] = {};
  std::atomic<uint64_t> op_timed[format::kOpKindSlots] = {};
  // Untimed collectives and send/recv completed, by a mark or by NCCL's report (the poller's).
  std::atomic<uint64_t> tracked_by_mark{0};
  std::atomic<uint64_t> tracked_by_nccl{0};
  // Stream captures under way in the process (begun through a hooked call, not yet ended); while
  // none is, no stream can be capturing and the hot path skips cudaStreamIsCapturing. A capture
  // the hook cannot account for (an end it saw no begin of) sets capture_unknown for good.
  std::atomic<int> captures{0};
  std::atomic<bool> capture_unknown{false};
  // Statistics.
  std::atomic<uint64_t> queued{0};
  std::atomic<uint64_t> queue_dropped{0};
  std::atomic<uint64_t> own_ns{0};  // the hook's own time on application threads (OwnTimer)
  std::atomic<uint64_t> untimed[format::kUntimedSlots] = {};  // by format::UntimedCause
  std::atomic<int> socket_fd{-1};  // the daemon connection, closed in a forked child
  Poller* poller = nullptr;
};

// The process state: null until InitSlow ran (recorder.cc owns it).
extern State* g_state __attribute__((visibility("hidden")));
inline State* GetState() { return g_state; }
// Tests: makes `s` the process state as InitSlow would, without reading the environment or
// starting a poller (g_mode is left to the caller). Cold.
void SetStateForTesting(State* s);
// Queues an entry for the poller; false (counted) when the queue is full.
bool Enqueue(const Pending& p);
// Counts an op that is not timed.
inline void CountUntimed(format::UntimedCause cause) {
  GetState()->untimed[static_cast<int>(cause)].fetch_add(1, std::memory_order_relaxed);
}
// Adds up to `n` events to `ds`'s pool (creating them on its device from the calling thread);
// returns how many were added. Cold: the poller calls it.
size_t GrowEventPool(DeviceState* ds, size_t n);
// The same for the completion marks (ds->marks).
size_t GrowMarkPool(DeviceState* ds, size_t n);

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_STATE_H_
