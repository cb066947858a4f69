#include "hook/nccl_profiler.h"

#include <cstdint>

#include "hook/recorder.h"

namespace xtimer {
namespace hook {
namespace nccl_profiler {

// The launch the calling thread's real NCCL call joins events to; null when not armed. Plain
// zero-initialised initial-exec TLS, as every thread-local of the hook (nccl_handlers.cc).
__thread Launch* t_armed __attribute__((tls_model("initial-exec"), visibility("hidden")));

namespace {

Launch g_launches[kLaunches];
std::atomic<uint32_t> g_next{0};
std::atomic<bool> g_active{false};

// Handles are launch addresses with a tag in the low bits (a Launch is 4-aligned).
constexpr uintptr_t kOpTag = 1;       // a collective's or p2p's event
constexpr uintptr_t kChannelTag = 2;  // one of its kernel channels
constexpr uintptr_t kTagMask = 3;
static_assert(alignof(Launch) >= 4, "handle tags need two free bits");

void* Tagged(Launch* l, uintptr_t tag) {
  return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(l) | tag);
}
Launch* Untagged(void* handle, uintptr_t tag) {
  const uintptr_t h = reinterpret_cast<uintptr_t>(handle);
  return (h & kTagMask) == tag ? reinterpret_cast<Launch*>(h & ~kTagMask) : nullptr;
}

void Drop(Launch* l, uint32_t n) { l->refs.fetch_sub(n, std::memory_order_acq_rel); }

// One running channel (or the seal) less, never below none: a stop NCCL reported twice, or for a
// channel it did not count in nChannels, must not take a queue entry's reference.
void DropOne(Launch* l) {
  uint32_t refs = l->refs.load(std::memory_order_relaxed);
  while ((refs & (kUserUnit - 1)) != 0) {
    if (l->refs.compare_exchange_weak(refs, refs - 1, std::memory_order_acq_rel)) return;
  }
}

}  // namespace

bool Active() { return g_active.load(std::memory_order_relaxed); }

bool EnableForComm() {
  if (g_mode.load(std::memory_order_acquire) != kOn || !GetConfig().nccl_profiler) return false;
  g_active.store(true, std::memory_order_relaxed);
  return true;
}

Launch* Arm() {
  if (!Active()) return nullptr;
  constexpr int kProbes = 4;  // launches end in order: a taken entry means many in flight
  for (int i = 0; i < kProbes; ++i) {
    Launch& l = g_launches[g_next.fetch_add(1, std::memory_order_relaxed) % kLaunches];
    uint32_t free = 0;
    if (l.refs.compare_exchange_strong(free, 1, std::memory_order_acquire)) {  // the seal
      l.events = 0;
      l.unusable = false;
      t_armed = &l;
      return &l;
    }
  }
  return nullptr;
}

bool Seal(Launch* l, int users) {
  t_armed = nullptr;
  const bool usable = l->events > 0 && !l->unusable && users > 0;
  if (usable) l->refs.fetch_add(static_cast<uint32_t>(users) * kUserUnit, std::memory_order_relaxed);
  DropOne(l);  // the seal: from now on only channels and users hold it
  return usable;
}

bool Done(const Launch* l) {
  return (l->refs.load(std::memory_order_acquire) & (kUserUnit - 1)) == 0;
}

void Release(Launch* l) { Drop(l, kUserUnit); }

void* JoinEvent(uint32_t channels, bool trusted, const void* comm) {
  Launch* l = t_armed;
  if (l == nullptr) return nullptr;
  ++l->events;
  l->comm.store(comm, std::memory_order_relaxed);
  if (channels == 0 || !trusted) {
    l->unusable = true;  // nothing would ever report its end
    return nullptr;
  }
  l->refs.fetch_add(channels, std::memory_order_relaxed);
  return Tagged(l, kOpTag);
}

void* StartChannel(void* parent) {
  Launch* l = Untagged(parent, kOpTag);
  return l == nullptr ? nullptr : Tagged(l, kChannelTag);
}

void StopEvent(void* handle) {
  Launch* l = Untagged(handle, kChannelTag);
  if (l != nullptr) DropOne(l);
}

void EndComm(const void* comm) {  // cold: a communicator's end
  if (comm == nullptr) return;
  for (Launch& l : g_launches) {
    if (l.comm.load(std::memory_order_relaxed) != comm) continue;
    uint32_t refs = l.refs.load(std::memory_order_relaxed);
    while ((refs & (kUserUnit - 1)) != 0 &&
           !l.refs.compare_exchange_weak(refs, refs & ~(kUserUnit - 1),
                                         std::memory_order_acq_rel)) {
    }
  }
}

void ResetForTesting() {
  for (Launch& l : g_launches) {
    l.refs.store(0, std::memory_order_relaxed);
    l.comm.store(nullptr, std::memory_order_relaxed);
  }
  g_active.store(false, std::memory_order_relaxed);
  t_armed = nullptr;
}

}  // namespace nccl_profiler
}  // namespace hook
}  // namespace xtimer
