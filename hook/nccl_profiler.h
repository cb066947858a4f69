// Collective completion from NCCL itself (docs/hook.md "Collective completion"): libxtimer.so
// is also an NCCL profiler plugin (nccl_profiler_plugin.cc; xtimer-launch names it in
// NCCL_PROFILER_PLUGIN), and NCCL's proxy thread reports when each kernel channel of a
// collective or send/recv has finished. A collective the budget leaves untimed then needs no
// CUDA call of ours at all, where it needed a completion mark (a cudaEventDisableTiming record,
// 628 ns of the application's thread on an H200, and a query on the poller's).
//
// One real NCCL call that launches (an ungrouped collective or send/recv) is a Launch. The hook arms the calling thread before the call; the collective
// and p2p events NCCL starts on that thread during the call join the launch, each with its
// kernel channels; after the call the hook seals it. The launch is done when every channel of
// every event has stopped. A launch NCCL started no event for (the plugin not loaded, another
// plugin chosen, a nonblocking communicator launching on its own thread, an operation without
// a kernel) is refused at the seal, and the hook records a completion mark as before. Groups
// are never armed: a member NCCL runs without a kernel (a copy-engine or symmetric-memory
// collective) reports nothing, and the others' channels would let the group read as done first.
//
// Launches live in a fixed table (no allocation): refs counts the seal, the channels still
// running and, in units of kUserUnit, the queue entries that wait for it; a launch is free at 0.
// Lock-free: arming takes a free entry by compare-and-swap, the proxy thread and the poller only
// subtract.
#ifndef XTIMER_HOOK_NCCL_PROFILER_H_
#define XTIMER_HOOK_NCCL_PROFILER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace xtimer {
namespace hook {
namespace nccl_profiler {

constexpr size_t kLaunches = 4096;       // launches waiting for their kernels, per process
constexpr uint32_t kUserUnit = 1u << 16;  // one queue entry's reference

struct Launch {
  std::atomic<uint32_t> refs{0};  // 0: free
  uint32_t events = 0;            // collective and p2p events joined (the armed thread only)
  std::atomic<const void*> comm{nullptr};  // the plugin context of its communicator (EndComm)
  bool unusable = false;          // one of them had no kernel channel to report its end
};

// Whether NCCL loaded libxtimer.so as its profiler and enabled it on a communicator.
bool Active();
// NCCL's init of a communicator for our plugin: whether to ask for the events (the hook on and
// XTIMER_NCCL_PROFILER not off); marks the plugin active when so.
bool EnableForComm();

// Before the real call: arms the calling thread with a free launch; null when the plugin is not
// active or every launch is taken (the caller then falls back to a completion mark).
Launch* Arm();
// After the real call: disarms the thread. True when the launch stands for the completion of
// what the call launched; it then holds `users` references, one per queue entry that will wait
// on it (Done) and Release it. False: the caller falls back to a mark (the launch frees itself).
bool Seal(Launch* launch, int users);
// Whether every kernel channel of every event of the launch has stopped.
bool Done(const Launch* launch);
// Drops one queue entry's reference.
void Release(Launch* launch);

// The plugin's event handling (nccl_profiler_plugin.cc), on NCCL's threads. A collective or p2p
// event started on an armed thread with `channels` kernel channels: its handle, or null when the
// thread is not armed. `trusted` false: its channels' reports cannot be relied on (a send/recv
// to the rank itself, or anything later on its communicator: see the plugin); the launch is
// then refused, as for an event without channels.
void* JoinEvent(uint32_t channels, bool trusted = true, const void* comm = nullptr);
// NCCL finalizes the communicator whose plugin context is `comm` (ncclCommDestroy, or
// ncclCommAbort with operations still running, whose channels NCCL then never stops): its
// launches are done, as a completion mark behind an aborted kernel completes.
void EndComm(const void* comm);
// A kernel channel of the event whose handle is `parent`: its handle (null when the parent is
// not ours).
void* StartChannel(void* parent);
// An event of ours stopped: a channel's stop counts down its launch; an operation's is ignored
// (NCCL stops it when the operation is enqueued, not when it ends).
void StopEvent(void* handle);

// Tests: every launch free again and the plugin inactive.
void ResetForTesting();

}  // namespace nccl_profiler
}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_NCCL_PROFILER_H_
