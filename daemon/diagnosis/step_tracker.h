// Each rank's training steps, live: the step guessed from its collectives (analysis/steps.h,
// GuessSteps) over the arrivals the live diagnosis holds (the newest 256 per communicator), and
// every step completed since the previous pass observed once into a histogram
// (docs/metrics.md "Steps": xtimer_step_seconds).
//
// A step is observed at one collective per period: with the guess "P collectives per step on
// communicator C", the arrivals on C whose seq is congruent to a fixed phase modulo P (the
// marks), each measured from the GPU start of the previous mark present; where the budget left
// the marks between untimed (k steps apart), k steps of their mean. A rank's counts only grow;
// a new guess (another communicator or period) picks a new phase and goes on from the end of the
// newest step observed, in GPU time, so no step is counted twice. A new guess that is a multiple
// of the known step on the same communicator keeps the known step: past a communicator's first
// 1,024 collectives the budget times them in blocks (16 of every 64), and the newest 256 may then
// hold no pair one step apart (a daemon that first sees a job then can read such a multiple:
// docs/analysis.md).
//
// Thread safety: none; the diagnosis pass (one thread) owns it.
#ifndef XTIMER_DAEMON_DIAGNOSIS_STEP_TRACKER_H_
#define XTIMER_DAEMON_DIAGNOSIS_STEP_TRACKER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/steps.h"
#include "daemon/model/rank_key.h"
#include "daemon/model/snapshot.h"

namespace xtimer {
namespace daemon {

// The steps of a rank guessed from its collectives (StepCounts: kStepBucketsS, shared with the
// NVTX steps) and the guess they follow.
struct StepHistogram : StepCounts {
  analysis::StepGuess guess;  // the guess of the latest pass that found one
};

class StepTracker {
 public:
  // Observes the steps rank `key` completed since the previous call, from its arrivals (any
  // order); returns its histogram.
  const StepHistogram& Update(const RankKey& key, const std::vector<analysis::Arrival>& arrivals);
  // Forgets every rank not in `keep`.
  void Retain(const std::set<RankKey>& keep);

 private:
  struct Rank {
    StepHistogram histogram;
    uint64_t comm_id = 0;
    size_t per_step = 0;
    uint64_t phase = 0;                   // seq modulo per_step at which a step is observed
    // GPU start of the newest mark that ended an observed step: later steps begin at or after
    // it, on any communicator (a guess that moves to another communicator and back counts no
    // step twice).
    int64_t observed_until_ns = 0;
  };
  void Observe(Rank* rank, const std::vector<analysis::Arrival>& arrivals);

  std::map<RankKey, Rank> ranks_;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_DIAGNOSIS_STEP_TRACKER_H_
