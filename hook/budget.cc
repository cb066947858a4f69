#include "hook/budget.h"

#include <algorithm>

#include "hook/recorder.h"
#include "hook/state.h"

namespace xtimer {
namespace hook {
namespace budget {
namespace {

__thread ThreadBudget t_budget __attribute__((tls_model("initial-exec"), visibility("hidden")));

inline uint32_t RoundUpToPowerOfTwo(uint64_t v) {
  uint32_t p = 1;
  while (p < v && p < kMaxPeriod) p <<= 1;
  return p;
}

// The op's signature: what makes two calls the same op (operation, type, shape, bytes, stream,
// kernel).
inline uint64_t Signature(const OpDesc& d) {
  uint64_t h = static_cast<uint64_t>(d.op) * 0x9e3779b97f4a7c15ULL;
  h ^= static_cast<uint64_t>(d.dtype) + (h << 6);
  h ^= static_cast<uint64_t>(d.m) * 0xff51afd7ed558ccdULL;
  h ^= static_cast<uint64_t>(d.n) * 0xc4ceb9fe1a85ec53ULL;
  h ^= static_cast<uint64_t>(d.k) + (h >> 17);
  h ^= d.bytes * 0x94d049bb133111ebULL;
  h ^= reinterpret_cast<uintptr_t>(d.stream) + d.name_id;
  return h ^ (h >> 32);
}

void EndWindow(ThreadBudget* t, int64_t now_ns) {
  const uint32_t budget_ppm = GetState()->config.budget_ppm;
  if (t->window_start_ns != 0) {
    const uint32_t period = NextPeriod(t->decisions, t->timed, t->timed_ns, t->other_ns,
                                       now_ns - t->window_start_ns, budget_ppm);
    if (period != 0) t->period = period;
  }
  t->decisions = t->timed = t->timed_ns = t->other_ns = 0;
  t->window_start_ns = now_ns;
}

}  // namespace

uint32_t NextPeriod(uint64_t decisions, uint64_t timed, uint64_t timed_ns, uint64_t other_ns,
                    int64_t wall_ns, uint32_t budget_ppm) {
  if (budget_ppm >= kFullBudgetPpm) return 1;
  if (timed == 0 || wall_ns <= 0) return 0;  // nothing learned: the period stays
  const double allowed = static_cast<double>(wall_ns) * budget_ppm * 1e-6 -
                         static_cast<double>(other_ns);
  if (allowed <= 0) return kMaxPeriod;
  const double cost = static_cast<double>(timed_ns) / static_cast<double>(timed);
  const double affordable = allowed / std::max(cost, 1.0);  // timed ops per window
  if (affordable >= static_cast<double>(decisions)) return 1;
  return RoundUpToPowerOfTwo(static_cast<uint64_t>(static_cast<double>(decisions) / affordable) +
                             1);
}

void ResetThreadForTesting() { t_budget = ThreadBudget(); }

void AddOwnTime(uint64_t ns, bool timed, int64_t now_ns) {
  ThreadBudget& t = t_budget;
  if (timed) {
    t.timed_ns += ns;
  } else {
    t.other_ns += ns;
  }
  if (now_ns - t.window_start_ns >= (t.period == 0 ? kFirstWindowNs : kWindowNs)) {
    EndWindow(&t, now_ns);
  }
}

bool Decide(const OpDesc& d) {
  State* s = GetState();
  s->op_calls[static_cast<uint8_t>(d.kind) & (format::kOpKindSlots - 1)].fetch_add(
      1, std::memory_order_relaxed);
  ThreadBudget& t = t_budget;
  ++t.decisions;
  Slot& slot = s->budget_slots[Signature(d) & (kSlots - 1)];
  uint32_t c = slot.count.load(std::memory_order_relaxed);
  slot.count.store(c + 1, std::memory_order_relaxed);
  const uint32_t rate = s->config.sample_rate;
  if (rate > 1) {
    if (c % rate != 0) return false;  // XTIMER_SAMPLE_RATE's: not counted
    c /= rate;
  }
  const uint32_t period = t.period;
  if (period <= 1 || (c & (period - 1)) == 0) {
    ++t.timed;
    return true;
  }
  const uint32_t epoch = s->budget_epoch.load(std::memory_order_relaxed);
  if (slot.epoch.load(std::memory_order_relaxed) != epoch) {
    slot.epoch.store(epoch, std::memory_order_relaxed);
    ++t.timed;
    return true;
  }
  CountUntimed(format::UntimedCause::kBudget);
  return false;
}

bool DecideCollective(uint64_t seq) {
  ThreadBudget& t = t_budget;
  ++t.decisions;
  if (GetState()->config.budget_ppm >= kFullBudgetPpm || seq < kCollectiveWarmup ||
      ((seq >> kBlockShift) & (kCollectivePeriod - 1)) == 0) {
    ++t.timed;
    return true;
  }
  CountUntimed(format::UntimedCause::kBudget);
  return false;
}

void CountMandatory(format::OpKind kind) {
  GetState()->op_calls[static_cast<uint8_t>(kind) & (format::kOpKindSlots - 1)].fetch_add(
      1, std::memory_order_relaxed);
}

}  // namespace budget

OwnTimer::~OwnTimer() {
  const int64_t now = MonotonicNs();
  const uint64_t ns = static_cast<uint64_t>(now - start_);
  GetState()->own_ns.fetch_add(ns, std::memory_order_relaxed);
  budget::AddOwnTime(ns, timed_, now);
}

}  // namespace hook
}  // namespace xtimer
