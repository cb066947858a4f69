#include "daemon/diagnosis/step_tracker.h"

#include <map>
#include <utility>

namespace xtimer {
namespace daemon {
namespace {

// Steps counted between two timed marks at most (their mean each): beyond, the gap is left out.
constexpr uint64_t kMaxStepsBetweenMarks = 16;

}  // namespace

const StepHistogram& StepTracker::Update(const RankKey& key,
                                         const std::vector<analysis::Arrival>& arrivals) {
  Rank& rank = ranks_[key];
  analysis::StepGuess guess = analysis::GuessSteps(arrivals);
  // Past a communicator's first 1,024 collectives the budget times them in blocks (16 of every
  // 64: docs/hook.md), so the newest 256 may hold no two collectives one step apart, and the guess
  // then reads a multiple of the step. A multiple of the step already known, on its
  // communicator, is that step.
  const analysis::StepGuess& known = rank.histogram.guess;
  if (guess.found() && known.found() && guess.comm_id == known.comm_id &&
      guess.per_step > known.per_step && guess.per_step % known.per_step == 0) {
    guess = known;
  }
  if (guess.found()) {
    rank.histogram.guess = guess;
    Observe(&rank, arrivals);
  }
  return rank.histogram;
}

void StepTracker::Observe(Rank* rank, const std::vector<analysis::Arrival>& arrivals) {
  const analysis::StepGuess& guess = rank->histogram.guess;
  const uint64_t per_step = guess.per_step;
  std::map<uint64_t, int64_t> start;  // seq -> GPU start, on the guessed communicator
  for (const analysis::Arrival& a : arrivals) {
    if (a.comm_id == guess.comm_id && a.start_ns > 0) start[a.seq] = a.start_ns;
  }
  if (start.empty()) return;
  const uint64_t newest = start.rbegin()->first;
  if (rank->comm_id != guess.comm_id || rank->per_step != per_step) {
    rank->comm_id = guess.comm_id;
    rank->per_step = per_step;
    rank->phase = newest % per_step;
  }
  // The marks: collectives at the phase, one a step. Between two present marks k steps apart,
  // k steps of their mean (k > 1 where the budget left the marks between untimed). Only steps
  // after those observed before count, whichever communicator measured them: a step that begins
  // more than half a step before the end of the last one observed is that one again (the next
  // step measured on another communicator begins a little earlier or later: its phase).
  const std::pair<const uint64_t, int64_t>* previous = nullptr;
  for (const auto& s : start) {
    if (s.first % per_step != rank->phase) continue;
    if (previous != nullptr && s.second > previous->second) {
      const uint64_t k = (s.first - previous->first) / per_step;
      const int64_t each_ns = (s.second - previous->second) / static_cast<int64_t>(k);
      if (k <= kMaxStepsBetweenMarks &&
          previous->second + each_ns / 2 >= rank->observed_until_ns) {
        const double each_s = static_cast<double>(each_ns) * 1e-9;
        for (uint64_t i = 0; i < k; ++i) rank->histogram.Observe(each_s);
        rank->observed_until_ns = s.second;
      }
    }
    previous = &s;
  }
}

void StepTracker::Retain(const std::set<RankKey>& keep) {
  for (auto it = ranks_.begin(); it != ranks_.end();) {
    it = keep.count(it->first) ? std::next(it) : ranks_.erase(it);
  }
}

}  // namespace daemon
}  // namespace xtimer
