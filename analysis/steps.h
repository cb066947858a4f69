// Training steps guessed from the collectives, for when nothing on the host marks them (an NVTX
// range, a Python function: docs/analysis.md "Steps"). A training step issues the same sequence
// of collectives on each communicator every time: per-parameter all-reduces, TP all-reduces per
// layer, one DP all-reduce. The step is the shortest period P (in collectives of one
// communicator, by sequence number) over which both the operations repeat and the time from a
// collective to the one P later is the same all through the window; the time of that period is
// the step. Gaps between the collectives of one step are never reported as steps unless the
// collectives are as evenly spaced as steps are (the guess then says how many it counted).
#ifndef XTIMER_ANALYSIS_STEPS_H_
#define XTIMER_ANALYSIS_STEPS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "analysis/analysis.h"

namespace xtimer {
namespace analysis {

struct StepGuess {
  uint64_t comm_id = 0;     // the communicator whose collectives recur
  size_t per_step = 0;      // its collectives per step (0: no step found)
  size_t periods = 0;       // step-long intervals measured
  double median_s = 0;      // the step time
  double p10_s = 0, p90_s = 0;
  bool found() const { return per_step > 0; }
};

// The fewest step-long intervals a guess needs.
constexpr size_t kMinStepPeriods = 3;
// The longest period tried, in collectives of one communicator.
constexpr size_t kMaxCollectivesPerStep = 512;

// The step of one rank from its completed collectives (any order; those without a GPU start are
// left out). Per communicator the shortest consistent period; of the communicators, the longest
// step (a communicator used per micro-batch repeats within the optimizer step). Not found when
// no communicator repeats consistently at least kMinStepPeriods times.
StepGuess GuessSteps(const std::vector<Arrival>& arrivals);

// A rank's step time, from the best source it has: the steps the job marks (NVTX ranges named
// XTIMER_STEP_RANGE, Python step functions: docs/hook.md), each from its mark's start to the
// next mark's start (an optimizer step's span covers only part of the iteration), where there
// are at least kMinStepPeriods such steps, else the guess from its collectives.
// One step the job marked: from its mark's start to the next mark's start.
struct MarkedStep {
  int64_t begin_ns;
  int64_t end_ns;
};
// The steps of the marks starting at `marked_starts_ns` (any order; equal starts are one mark):
// one fewer than the distinct marks, in time order. The one definition of a marked step, for
// StepsOf and the trace's steps track (docs/perfetto.md).
std::vector<MarkedStep> MarkedSteps(std::vector<int64_t> marked_starts_ns);

// The steps of guess `g` among `arrivals` (those GuessSteps took it from): from the GPU start of
// a collective of g.comm_id to that of the collective g.per_step later, for the collectives whose
// seq is the first one's plus a multiple of per_step and whose successor is there. Where in the
// iteration a guessed step begins is not known: at whichever collective came first.
std::vector<MarkedStep> GuessedSteps(const std::vector<Arrival>& arrivals, const StepGuess& g);

struct RankSteps {
  bool marked = false;  // from marked steps; false: guessed (guess) or unknown
  size_t count = 0;     // marked steps, or the guess's periods
  double median_s = 0, p10_s = 0, p90_s = 0;  // 0: unknown
  StepGuess guess;      // when not marked
};
RankSteps StepsOf(std::vector<int64_t> marked_starts_ns, const std::vector<Arrival>& arrivals);

// The marked steps of the ranks that have at least kMinStepPeriods, ascending rank (the
// Report's `steps`: what `xtimer analyze` prints; the guess needs arrivals, which a streamed
// analysis does not keep).
std::vector<RankStepStats> MarkedStepStats(const std::vector<RankInput>& ranks);

}  // namespace analysis
}  // namespace xtimer

#endif  // XTIMER_ANALYSIS_STEPS_H_
