// The overhead budget's decision on the hot path (budget.h describes the budget): inline, so that
// an op the budget leaves untimed costs a few tens of instructions (docs/benchmarks.md).
#ifndef XTIMER_HOOK_BUDGET_DECIDE_H_
#define XTIMER_HOOK_BUDGET_DECIDE_H_

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>

#include "format/record.h"
#include "format/ring.h"
#include "hook/budget.h"
#include "hook/recorder.h"
#include "hook/state.h"

namespace xtimer {
namespace hook {
namespace budget {

// An op's signature: what makes two calls the same op (operation, type, shape, bytes, stream,
// kernel).
inline uint64_t SignatureOf(const OpDesc& d) {
  uint64_t h = static_cast<uint64_t>(d.op) * 0x9e3779b97f4a7c15ULL;
  h ^= static_cast<uint64_t>(d.dtype) + (h << 6);
  h ^= static_cast<uint64_t>(d.m) * 0xff51afd7ed558ccdULL;
  h ^= static_cast<uint64_t>(d.n) * 0xc4ceb9fe1a85ec53ULL;
  h ^= static_cast<uint64_t>(d.k) + (h >> 17);
  h ^= d.bytes * 0x94d049bb133111ebULL;
  h ^= reinterpret_cast<uintptr_t>(d.stream) + d.name_id;
  return h ^ (h >> 32);
}

// A kernel launch's signature: the kernel and the stream.
inline uint64_t KernelSignature(const void* kernel, const void* stream) {
  const uint64_t h = (reinterpret_cast<uintptr_t>(kernel) ^
                      reinterpret_cast<uintptr_t>(stream) * 0x9e3779b97f4a7c15ULL);
  return h ^ (h >> 29);
}

// Counts an op the hook considered timing (State::op_calls: every one, timed or not).
inline void CountCall(format::OpKind kind) {
  GetState()->op_calls[static_cast<uint8_t>(kind) & (format::kOpKindSlots - 1)].fetch_add(
      1, std::memory_order_relaxed);
}

// Whether to time an op of `kind` and `signature` (not a collective or send/recv): counts it,
// then applies the thread's period (1 in P calls of the signature), the epoch rule and
// XTIMER_SAMPLE_RATE (DecideSlow).
inline bool Decide(format::OpKind kind, uint64_t signature) {
  CountCall(kind);
  State* s = GetState();
  ThreadBudget& t = t_budget;
  ++t.decisions;
  Slot* slot = &s->budget_slots[signature & (kSlots - 1)];
  const uint32_t count = slot->count.load(std::memory_order_relaxed);
  slot->count.store(count + 1, std::memory_order_relaxed);
  const uint32_t period = t.period;
  if (__builtin_expect(s->config.sample_rate <= 1, 1) &&
      (period <= 1 || (count & (period - 1)) == 0)) {
    ++t.timed;
    return true;
  }
  return DecideSlow(slot, count);
}

inline bool Decide(const OpDesc& d) { return Decide(d.kind, SignatureOf(d)); }

}  // namespace budget
}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_BUDGET_DECIDE_H_
