#include "test/gpusim/nccl/faults.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <vector>

#include "test/gpusim/common/sim_env.h"

namespace xtsim {
namespace nccl {
namespace {

struct Knobs {
  std::vector<RankSpec> hang;   // R:N[:C]
  std::vector<RankSpec> error;  // R:N[:CODE]
  std::vector<RankSpec> crash;  // R:N
  std::vector<RankSpec> stuck;  // R:N[:C]
};

void CheckCommIndex(const char* name, const RankSpec& s) {
  if (!std::isnan(s.b) && (s.b < 0 || s.b != std::floor(s.b))) {
    Fatal("%s: communicator index %g of rank %d must be a non-negative integer", name, s.b,
          s.rank);
  }
}

void CheckCount(const char* name, const RankSpec& s) {
  if (!(s.a >= 1) || s.a != std::floor(s.a)) {
    Fatal("%s: call number %g of rank %d must be a positive integer", name, s.a, s.rank);
  }
}

const Knobs& GetKnobs() {
  static const Knobs* knobs = [] {
    auto* k = new Knobs;
    k->hang = ParseRankSpecs("XTIMER_SIM_HANG", 1, 2);
    k->error = ParseRankSpecs("XTIMER_SIM_NCCL_ERROR", 1, 2);
    k->crash = ParseRankSpecs("XTIMER_SIM_CRASH", 1, 1);
    k->stuck = ParseRankSpecs("XTIMER_SIM_STUCK", 1, 2);
    for (const RankSpec& s : k->hang) {
      CheckCount("XTIMER_SIM_HANG", s);
      CheckCommIndex("XTIMER_SIM_HANG", s);
    }
    for (const RankSpec& s : k->stuck) {
      CheckCount("XTIMER_SIM_STUCK", s);
      CheckCommIndex("XTIMER_SIM_STUCK", s);
    }
    for (const RankSpec& s : k->error) {
      CheckCount("XTIMER_SIM_NCCL_ERROR", s);
      if (!std::isnan(s.b) &&
          (s.b <= ncclSuccess || s.b >= ncclNumResults || s.b != std::floor(s.b))) {
        Fatal("XTIMER_SIM_NCCL_ERROR: code %g of rank %d is not an ncclResult_t error (1..%d)", s.b,
              s.rank, ncclNumResults - 1);
      }
    }
    for (const RankSpec& s : k->crash) CheckCount("XTIMER_SIM_CRASH", s);
    return k;
  }();
  return *knobs;
}

// Collective calls per global rank, over all communicators of this process.
int64_t CountCall(int global_rank) {
  static std::mutex* mu = new std::mutex;
  static auto* counts = new std::map<int, int64_t>;
  std::lock_guard<std::mutex> lock(*mu);
  return ++(*counts)[global_rank];
}

// Not instrumented: a sanitizer build must die of the signal too, not of a sanitizer's report of
// the null store.
[[noreturn]] __attribute__((noinline, no_sanitize("address", "thread", "undefined"))) void Crash(
    int global_rank, int64_t call) {
  Warn("XTIMER_SIM_CRASH: rank %d crashes (SIGSEGV) at its collective call %lld", global_rank,
       static_cast<long long>(call));
  // A real invalid write, so that signal handlers (a crash reporter's, the sanitizers') see a
  // genuine SIGSEGV in this function. The volatile pointer keeps the compiler from proving it
  // null; the volatile store keeps it from deleting the write before __builtin_unreachable (it
  // did: the process then ran off the function's end and faulted somewhere on the heap).
  volatile int* volatile target = nullptr;
  *target = 1;
  __builtin_unreachable();
}

[[noreturn]] void Hang(int global_rank, int comm_index, int64_t call) {
  Warn("XTIMER_SIM_HANG: rank %d hangs in its collective call %lld on communicator #%d",
       global_rank, static_cast<long long>(call), comm_index);
  for (;;) pause();
}

}  // namespace

ncclResult_t OnCollectiveCall(int global_rank, int comm_index, int64_t comm_call) {
  const Knobs& k = GetKnobs();
  const int64_t call = CountCall(global_rank);
  // A rank may appear in several entries of a knob ("1:3,1:5"): every entry is checked.
  auto at = [&](const RankSpec& s, int64_t n) {
    return s.rank == global_rank && n == static_cast<int64_t>(s.a);
  };
  for (const RankSpec& s : k.crash) {
    if (at(s, call)) Crash(global_rank, call);
  }
  for (const RankSpec& s : k.hang) {
    if (at(s, comm_call) && (std::isnan(s.b) || comm_index == static_cast<int>(s.b))) {
      Hang(global_rank, comm_index, comm_call);
    }
  }
  for (const RankSpec& s : k.error) {
    if (!at(s, call)) continue;
    auto code =
        std::isnan(s.b) ? ncclSystemError : static_cast<ncclResult_t>(static_cast<int>(s.b));
    Warn("XTIMER_SIM_NCCL_ERROR: rank %d's collective call %lld fails with %d", global_rank,
         static_cast<long long>(call), static_cast<int>(code));
    return code;
  }
  return ncclSuccess;
}

bool StuckCollective(const std::vector<int>& members, int comm_index, uint64_t seq) {
  for (const RankSpec& s : GetKnobs().stuck) {
    if (seq + 1 == static_cast<uint64_t>(s.a) &&
        (std::isnan(s.b) || comm_index == static_cast<int>(s.b)) &&
        std::find(members.begin(), members.end(), s.rank) != members.end()) {
      return true;
    }
  }
  return false;
}

}  // namespace nccl
}  // namespace xtsim
