// A Report as readable text: the hang verdict first, in a sentence naming culprits and their
// evidence, then stragglers, then a bus bandwidth table.
#ifndef XTIMER_ANALYSIS_REPORT_TEXT_H_
#define XTIMER_ANALYSIS_REPORT_TEXT_H_

#include <string>

#include "analysis/analysis.h"

namespace xtimer {
namespace analysis {

// One sentence for a verdict: "Hang (never_issued): rank 2 never issued AllReduce seq 57 on
// communicator 0x... that ranks 0, 1 and 3 wait in (stalled 42.0 s, threshold 10.0 s)."
std::string VerdictSentence(const HangVerdict& verdict);

// The whole report; lines end with '\n'.
std::string ReportText(const Report& report);

}  // namespace analysis
}  // namespace xtimer

#endif  // XTIMER_ANALYSIS_REPORT_TEXT_H_
