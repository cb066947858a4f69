#include "daemon/diagnosis/step_tracker.h"

#include <algorithm>
#include <unordered_map>

namespace xtimer {
namespace daemon {

const StepHistogram& StepTracker::Update(const RankKey& key,
                                         const std::vector<analysis::Arrival>& arrivals) {
  Rank& rank = ranks_[key];
  const analysis::StepGuess guess = analysis::GuessSteps(arrivals);
  if (guess.found()) {
    rank.histogram.guess = guess;
    Observe(&rank, arrivals);
  }
  return rank.histogram;
}

void StepTracker::Observe(Rank* rank, const std::vector<analysis::Arrival>& arrivals) {
  const analysis::StepGuess& guess = rank->histogram.guess;
  std::unordered_map<uint64_t, int64_t> start;  // seq -> GPU start, on the guessed communicator
  uint64_t newest = 0;
  for (const analysis::Arrival& a : arrivals) {
    if (a.comm_id != guess.comm_id || a.start_ns <= 0) continue;
    start[a.seq] = a.start_ns;
    newest = std::max(newest, a.seq);
  }
  if (rank->comm_id != guess.comm_id || rank->per_step != guess.per_step) {
    rank->comm_id = guess.comm_id;
    rank->per_step = guess.per_step;
    rank->phase = newest % guess.per_step;
  }
  uint64_t& seen = rank->newest[guess.comm_id];
  for (const auto& s : start) {
    if (s.first <= seen || s.first % guess.per_step != rank->phase || s.first < guess.per_step) {
      continue;
    }
    auto before = start.find(s.first - guess.per_step);
    if (before != start.end() && s.second > before->second) {
      rank->histogram.Observe(static_cast<double>(s.second - before->second) * 1e-9);
    }
  }
  seen = std::max(seen, newest);
}

void StepTracker::Retain(const std::set<RankKey>& keep) {
  for (auto it = ranks_.begin(); it != ranks_.end();) {
    it = keep.count(it->first) ? std::next(it) : ranks_.erase(it);
  }
}

}  // namespace daemon
}  // namespace xtimer
