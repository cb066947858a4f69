// Internal to analysis/: the passes Analyze runs over the indexed communicators.
#ifndef XTIMER_ANALYSIS_PASSES_H_
#define XTIMER_ANALYSIS_PASSES_H_

#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/comm_index.h"
#include "analysis/report_text.h"

namespace xtimer {
namespace analysis {

// Hang verdicts (hang.cc), most severe first; each communicator's threshold into `thresholds`
// when given.
std::vector<HangVerdict> FindHangs(const std::vector<RankInput>& ranks,
                                   const std::vector<CommView>& comms, const Options& options,
                                   std::vector<CommThreshold>* thresholds);

// Stragglers, bus bandwidth, per-rank stats, the bounding stage and the instance count
// (stragglers.cc).
void FindStragglers(const std::vector<RankInput>& ranks, const std::vector<CommView>& comms,
                    const Options& options, Report* report);

// The hang and straggler passes over communicators whose arrivals are folded (Analyze's report).
Report ReportOf(const std::vector<RankInput>& ranks, const std::vector<CommView>& comms,
                const Options& options);

// The median of v (reorders v); 0 when empty (instance_fold.cc).
double Median(std::vector<double>* v);
double Median(std::vector<int64_t>* v);

// CommText, OpText, DurationText: analysis/report_text.h.
std::string RankList(const std::vector<int32_t>& ranks);  // "0, 1 and 3"
// Where a verdict's waiters wait: "AllReduce seq 57 on communicator 0x...", "seq 57 on
// communicator 0x..." (op unknown), "a send/receive on communicator 0x..." (point to point).
std::string VerdictWhere(const HangVerdict& v);

}  // namespace analysis
}  // namespace xtimer

#endif  // XTIMER_ANALYSIS_PASSES_H_
