// Analyze for inputs too large to hold at once: the ranks come without their arrivals, which a
// reader then adds a few at a time (each rank's in completion order, the ranks advancing
// together); every collective instance is folded (instance_fold.h) as soon as each of its
// members has passed it, and its arrivals freed. Memory is the instances not yet folded, not the
// input. The report is Analyze's on the same ranks with their arrivals (stream_test pins it).
#ifndef XTIMER_ANALYSIS_STREAM_H_
#define XTIMER_ANALYSIS_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "analysis/analysis.h"

namespace xtimer {
namespace analysis {

// What a first pass over a rank's ops knows of its arrivals: per communicator it has arrivals
// on, the largest size they give and the highest seq among them.
struct RankPlan {
  struct Comm {
    uint64_t comm_id = 0;
    int32_t comm_size = 0;
    uint64_t last_seq = 0;
  };
  std::vector<Comm> comms;
  // Adds an arrival on `comm_id` of that size and seq to the plan.
  void Add(uint64_t comm_id, int32_t comm_size, uint64_t seq);
};

class AnalysisStream {
 public:
  // `ranks` as Analyze takes them, but with no arrivals; plans[i] is ranks[i]'s.
  AnalysisStream(std::vector<RankInput> ranks, const std::vector<RankPlan>& plans,
                 const Options& options);
  ~AnalysisStream();
  AnalysisStream(const AnalysisStream&) = delete;
  AnalysisStream& operator=(const AnalysisStream&) = delete;

  // Rank `rank`'s next arrivals, in the order its summary produced them. Returns false when they
  // cannot be streamed (on a communicator a seq not above the rank's previous one there, one
  // beyond its plan, a gap of over 2^22 seqs): the stream is then unusable, and the caller
  // gives Analyze the whole input instead.
  bool Add(size_t rank, const std::vector<Arrival>& arrivals);
  // Folds every instance each member has passed (or will never reach).
  void Fold();
  // Arrivals added and not folded yet.
  size_t held() const;
  // Folds the rest and judges: Analyze's report.
  Report Finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace analysis
}  // namespace xtimer

#endif  // XTIMER_ANALYSIS_STREAM_H_
