// Node clocks of analysis inputs: each rank's collective end times (what clock alignment compares
// across nodes), shifting a rank's times by its node's offset, and each clock domain's offset
// from those ends (timeline::AlignClocks). Shared by the dump reader and `xtimer analyze --hosts`.
#ifndef XTIMER_CLI_READERS_RANK_CLOCK_H_
#define XTIMER_CLI_READERS_RANK_CLOCK_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "analysis/analysis.h"
#include "timeline/clock_align.h"

namespace xtimer {
namespace cli {

// The rank's collectives' end times, sorted by key, one per collective.
std::vector<timeline::CollectiveEnd> EndsOf(const analysis::RankInput& in);
// The same from a rank's ends in any order, several per key (the earliest is kept).
std::vector<timeline::CollectiveEnd> SortedEnds(std::vector<timeline::CollectiveEnd> ends);

// Adds `offset` to the arrival's times that are set (non-zero).
void ShiftArrival(int64_t offset, analysis::Arrival* a);

// Adds `offset` to every time of the rank that is set (non-zero): arrivals, send/receive
// completions, progress, exit and last activity.
void ShiftTimes(int64_t offset, analysis::RankInput* in);

// Each clock domain's offset (ns to add to its times) from its collectives' ends, merged per
// domain with timeline::MergeEnds, in the order of the map. *notes (when not null) gets one line
// per domain that shares no collective with the others; *aligned (when not null) says, in the
// same order, which domains were aligned (the reference and those sharing collectives with it;
// the others get offset 0).
std::vector<std::pair<std::string, int64_t>> DomainOffsets(
    std::map<std::string, std::vector<timeline::CollectiveEnd>> ends_by_domain,
    std::vector<std::string>* notes, std::vector<bool>* aligned = nullptr);

}  // namespace cli
}  // namespace xtimer

#endif  // XTIMER_CLI_READERS_RANK_CLOCK_H_
