// HangCheck's per-rank progress (proto/hosting.proto RankProgress) as the analysis library's
// input: used for the hang-summary.json of an automatic dump (`xtimer analyze DIR`) and for the
// live answers of `xtimer analyze --hosts`. The messages give ages (seconds before the answer's
// `now`); they come out as times on the caller's clock: now_ns - age.
#ifndef XTIMER_CLI_READERS_RANK_PROGRESS_H_
#define XTIMER_CLI_READERS_RANK_PROGRESS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analysis/analysis.h"
#include "proto/hosting.pb.h"

namespace xtimer {
namespace cli {

// Sets the rank's identity (when unset), exit, last activity, communicators (adding those it
// does not know yet) and progress from `p`.
void ApplyRankProgress(const RankProgress& p, int64_t now_ns, analysis::RankInput* in);

// Every node's answer combined: one RankInput per rank of `job` (every job when empty; more than
// one job is an error then). Each answer's ages are taken from its own `now` (its daemon's latest
// pass, on its node's clock); when the answers carry recent collectives
// (HangCheckRequest.arrivals), the nodes' clocks are aligned on the collectives' ends
// (DomainOffsets), as the dump reader aligns timelines, so that `offsets` are the clocks' own
// offsets, not the moments of the passes. A node sharing no collective with the others, and every
// node of answers without collectives, is taken as of the latest pass (they are asked in
// parallel): its ages are taken from that instant, which is the analysis's `now_ns`.
struct LiveInput {
  std::vector<analysis::RankInput> ranks;  // by rank
  int64_t now_ns = 0;
  int world = 0;                          // the world size most ranks report (AgreedWorld)
  std::vector<int32_t> missing;           // ranks of the world no node reported
  // The smallest adaptive threshold the daemons report for a communicator with an op in flight
  // (0: none in flight).
  double threshold_s = 0;
  std::vector<std::string> warnings;      // duplicate ranks, nodes whose clock is not aligned
  // Node -> ns added to its times on its own clock (empty when no answer carries collectives).
  std::vector<std::pair<std::string, int64_t>> offsets;
};
bool CombineHangChecks(const std::vector<HangCheckResponse>& answers, const std::string& job,
                       LiveInput* out, std::string* error);

}  // namespace cli
}  // namespace xtimer

#endif  // XTIMER_CLI_READERS_RANK_PROGRESS_H_
