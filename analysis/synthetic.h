// Synthetic jobs for the analysis tests and bench: ranks in a Megatron layout (tp innermost, then
// dp, then pp) running steps of compute, a tp AllReduce and a dp AllReduce, with jitter and
// optional faults, summarised straight to Arrivals.
#ifndef XTIMER_ANALYSIS_SYNTHETIC_H_
#define XTIMER_ANALYSIS_SYNTHETIC_H_

#include <cstdint>
#include <vector>

#include "analysis/analysis.h"

namespace xtimer {
namespace analysis {

struct SyntheticJob {
  Groups groups;  // tp and dp used; pp stages run the same steps independently
  int steps = 300;
  uint32_t seed = 1;
  int64_t compute_ns = 10000000;  // GPU work per step before the tp collective
  int64_t jitter_ns = 200000;     // uniform +- on compute, host gaps and transfers
  int64_t host_gap_ns = 50000;    // GPU idle before each step's compute (launch latency)
  int64_t transfer_ns = 2000000;  // transfer time of each collective at full link speed
  uint64_t bytes = 64u << 20;     // send buffer of every collective
  int slow_rank = -1;             // compute slowed by slow_factor
  double slow_factor = 1.3;
  int host_rank = -1;             // extra host gap before every step
  int64_t extra_host_gap_ns = 3000000;
  int slow_dp_group = -1;         // the dp communicator (by index) whose transfers are slow
  double link_factor = 3.0;       // its transfer time multiplier
};

// Communicator ids: tp group g is kTpCommBase + g, dp group g is kDpCommBase + g.
constexpr uint64_t kTpCommBase = 0x1000;
constexpr uint64_t kDpCommBase = 0x2000;

// One RankInput per rank (rank = index), completed arrivals only, no progress. Times start at
// 1e12 ns.
std::vector<RankInput> MakeJob(const SyntheticJob& job);
// The end of the latest arrival of the job: a "now" at which nothing is in flight.
int64_t JobEnd(const std::vector<RankInput>& ranks);

}  // namespace analysis
}  // namespace xtimer

#endif  // XTIMER_ANALYSIS_SYNTHETIC_H_
