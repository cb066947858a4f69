#include "hook/budget.h"

#include <algorithm>

#include "hook/recorder.h"
#include "hook/state.h"

namespace xtimer {
namespace hook {
namespace budget {

__thread ThreadBudget t_budget __attribute__((tls_model("initial-exec"), visibility("hidden")));
// The thread's own time not yet added to State::own_ns (AddToOwnNs).
__thread uint64_t t_own_unpublished
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

void AddToOwnNs(State* s, uint64_t ns) {
  const uint64_t total = t_own_unpublished + ns;
  if (total < kOwnFlushNs) {
    t_own_unpublished = total;
    return;
  }
  s->own_ns.fetch_add(total, std::memory_order_relaxed);
  t_own_unpublished = 0;
}

namespace {

inline uint32_t RoundUpToPowerOfTwo(uint64_t v) {
  uint32_t p = 1;
  while (p < v && p < kMaxPeriod) p <<= 1;
  return p;
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

void ResetThreadForTesting() {
  t_budget = ThreadBudget();
  t_own_unpublished = 0;
}

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

void AddFixedOwnTime(uint64_t ns) {
  State* s = GetState();
  if (s == nullptr) return;
  AddToOwnNs(s, ns);
  t_budget.other_ns += ns;
}

bool DecideSlow(Slot* slot, uint32_t count) {
  State* s = GetState();
  ThreadBudget& t = t_budget;
  const uint32_t rate = s->config.sample_rate;
  if (rate > 1) {
    if (count % rate != 0) return false;  // XTIMER_SAMPLE_RATE's: not counted
    count /= rate;
    if (t.period <= 1 || (count & (t.period - 1)) == 0) {
      ++t.timed;
      return true;
    }
  }
  const uint32_t epoch = s->budget_epoch.load(std::memory_order_relaxed);
  if (slot->epoch.load(std::memory_order_relaxed) != epoch) {
    slot->epoch.store(epoch, std::memory_order_relaxed);
    ++t.timed;
    return true;
  }
  CountUntimed(format::UntimedCause::kBudget);
  return false;
}

bool DecideCollective(uint64_t seq) {
  // Not the thread's period: neither a decision of its controller nor one of its timed ops (the
  // controller counts a collective's whole cost as fixed, OwnTimer::set_timed(false)).
  if (GetState()->config.budget_ppm >= kFullBudgetPpm || seq < kCollectiveWarmup ||
      ((seq >> kBlockShift) & (kCollectivePeriod - 1)) == 0) {
    return true;
  }
  CountUntimed(format::UntimedCause::kBudget);
  return false;
}

}  // namespace budget

OwnTimer::~OwnTimer() {
  const int64_t now = MonotonicNs();
  const uint64_t ns = static_cast<uint64_t>(now - start_);
  budget::AddToOwnNs(GetState(), ns);
  budget::AddOwnTime(ns, timed_, now);
}

}  // namespace hook
}  // namespace xtimer
