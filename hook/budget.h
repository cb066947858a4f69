// The overhead budget (XTIMER_OVERHEAD_BUDGET, docs/hook.md "The overhead budget"): which of the
// ops the hook intercepts it times, so that its own time on each application thread stays under
// a share of that thread's time (1% by default).
//
// Every op that would be timed at 100% is counted (State::op_calls, by kind). Timing one costs
// the calling thread microseconds of real CUDA calls (two event records, ~1.9 us each on an
// H200); deciding not to costs a hash and a few loads. Each application thread keeps its own
// controller in thread-local storage: per window of kWindowNs it measures its own time per timed
// op (OwnTimer), how many ops it decided on and how long the window was, and picks the period
// (time 1 op in P per op signature, P a power of two) that spends at most the budget. Every
// signature is still timed at least once per epoch (kEpochNs, advanced by the poller), so rare
// ops are never invisible. At 100% every op is timed, as before the budget existed. The NVTX
// callbacks and the Python tracer's run on the same threads without an op: their time is the
// hook's own time too, a fixed cost of the thread's (AddFixedOwnTime).
//
// Collectives and send/recv are always tracked to their completion: hang verdicts and the
// in-flight table depend on it. Those the budget leaves untimed get a completion mark (one
// cudaEventDisableTiming event recorded after the call: 628 ns on an H200, a third of a timed
// pair's 3.9 us), whose cost the budget counts as fixed and takes out of what timing may spend.
// Which collectives are timed is decided by sequence number alone, never by the thread's period:
// under a budget below 100%, every one of a communicator's first 1,024 (about 3 ms of timing,
// once), then the first block of 16 consecutive numbers in every 64 blocks (1 in 64
// collectives; timing one instead of tracking it costs ~3.3 us more on an H200, ~50 ns per
// collective on average). Every rank of a communicator (with the same budget setting) so times
// the same instances, which is what comparing ranks needs: the true bus bandwidth, who arrived
// last.
#ifndef XTIMER_HOOK_BUDGET_H_
#define XTIMER_HOOK_BUDGET_H_

#include <atomic>
#include <cstdint>

#include "format/record.h"
#include "util/clock.h"

namespace xtimer {
namespace hook {

struct OpDesc;
struct State;

namespace budget {

constexpr int64_t kWindowNs = 50000000;   // a thread's controller re-decides every 50 ms
constexpr int64_t kFirstWindowNs = 5000000;  // ... and first after 5 ms (it times all until then)
constexpr int64_t kEpochNs = 1000000000;  // every signature timed at least once a second
constexpr uint32_t kMaxPeriod = 1u << 20;
constexpr size_t kSlots = 1024;           // signatures share slots when they collide
constexpr int kBlockShift = 4;            // collectives are timed in blocks of 16 sequence numbers
constexpr uint32_t kCollectivePeriod = 64;  // ... 1 block in 64 under a budget below 100%
constexpr uint64_t kCollectiveWarmup = 1024;  // ... after the first 1,024 of a communicator
// A thread adds its own time to State::own_ns once it holds this much (one shared atomic add per
// ~100 NVTX pairs rather than two per pair: threads no longer contend on its cache line). At
// most this much per thread is not yet counted, and what a thread holds when it ends is lost.
constexpr uint64_t kOwnFlushNs = 20000;

// One signature slot: calls seen, and the epoch of its last timed call. Updated with relaxed
// loads and stores, not read-modify-writes: two threads racing on a slot may lose a count, which
// only shifts which call is timed.
struct Slot {
  std::atomic<uint32_t> count{0};
  std::atomic<uint32_t> epoch{0};
};

// A thread's controller (plain zero-initialised TLS: no init wrapper on the hot path).
struct ThreadBudget {
  uint32_t period;          // time 1 in `period` per signature; 0 until the first window ends
  uint64_t decisions;       // ops decided on in this window
  uint64_t timed;           // ... of which timed
  uint64_t timed_ns;        // own time of the timed ops in this window
  uint64_t other_ns;        // own time of the rest (ops that must be timed count here too)
  int64_t window_start_ns;  // 0: no window yet
};

// The period for a window in which `decisions` ops were decided on, `timed` of them timed at a
// cost of `timed_ns`, `other_ns` went to ops the budget cannot leave out, over `wall_ns`, with a
// budget of `budget_ppm` of the thread's time; 0 when the window taught nothing (no op timed),
// which keeps the period. Pure: the controller's one formula.
uint32_t NextPeriod(uint64_t decisions, uint64_t timed, uint64_t timed_ns, uint64_t other_ns,
                    int64_t wall_ns, uint32_t budget_ppm);

// Adds `ns` of the hook's own time on this thread (timed op or not) and re-decides the period
// when the thread's window is over. Called by OwnTimer.
void AddOwnTime(uint64_t ns, bool timed, int64_t now_ns);

// Adds `ns` of the hook's own time on this thread to `s`->own_ns (batched: kOwnFlushNs).
void AddToOwnNs(State* s, uint64_t ns);

// Adds `ns` of the hook's own time spent outside any op on this thread (an NVTX callback, the
// Python tracer's) to State::own_ns and to the thread's controller as fixed cost, as a
// collective's: the budget cannot leave it out, so it comes out of what timing may spend. No
// window ends here (the thread's next op ends it, counting this time in it); a thread that never
// launches an op only adds up. No-op before the hook has a state. Initial-exec TLS and one
// relaxed atomic add per kOwnFlushNs: safe on any thread, in any callback, holding the GIL or not.
void AddFixedOwnTime(uint64_t ns);

// A callback's own time: from `start_ns`, the CLOCK_REALTIME read the callback took first (its
// record's timestamp), to now, one more vDSO read; times `scale` for a callback timed 1 in
// `scale` (AddFixedOwnTime). A clock stepped back in between counts nothing.
inline void ChargeSince(int64_t start_ns, uint32_t scale = 1) {
  const int64_t ns = RealtimeNs() - start_ns;
  if (ns > 0) AddFixedOwnTime(static_cast<uint64_t>(ns) * scale);
}

// Tests: forgets the calling thread's controller.
void ResetThreadForTesting();

// The calling thread's controller (budget_decide.h reads it on the hot path).
extern __thread ThreadBudget t_budget
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

// Decide's colder half (budget_decide.h): a call the thread's period skips is still timed when it
// is its signature's first in this epoch (the slot's `count` before this call is `count`);
// otherwise it is counted as untimed (cause "budget"). With XTIMER_SAMPLE_RATE set, the sample
// rate is applied first.
bool DecideSlow(Slot* slot, uint32_t count);
// Whether to time the collective or send/recv that will get sequence number `seq` (else it is
// only tracked); counts one left untimed under cause "budget". XTIMER_SAMPLE_RATE does not apply.
bool DecideCollective(uint64_t seq);

}  // namespace budget

// Adds the host time from its construction to its destruction to the hook's own time on the
// application's threads (State::own_ns, published as the ring header's hook_own_ns and exported
// as xtimer_hook_overhead_seconds_total) and to the thread's budget. Put around the work a timed
// op costs the caller (the capture check, the event records, the queue); two vDSO clock reads.
class OwnTimer {
 public:
  OwnTimer() : start_(MonotonicNs()) {}
  ~OwnTimer();
  OwnTimer(const OwnTimer&) = delete;
  OwnTimer& operator=(const OwnTimer&) = delete;
  // The time was spent on an op that ended up timed (the controller's cost per timed op).
  void set_timed(bool timed) { timed_ = timed; }

 private:
  const int64_t start_;
  bool timed_ = true;
};

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_BUDGET_H_
