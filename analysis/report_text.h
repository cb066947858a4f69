// A Report as readable text: the hang verdict first, in a sentence naming culprits and their
// evidence, then stragglers, then a bus bandwidth table.
#ifndef XTIMER_ANALYSIS_REPORT_TEXT_H_
#define XTIMER_ANALYSIS_REPORT_TEXT_H_

#include <cstdint>
#include <string>

#include "analysis/analysis.h"

namespace xtimer {
namespace analysis {

// Text shared by evidence sentences and reports: "0x00000000000000ab", "AllReduce", "1.5 s",
// "12.3 ms".
std::string CommText(uint64_t id);
std::string OpText(uint16_t op);
std::string DurationText(double seconds);

// One sentence for a verdict: "Hang (never_issued): rank 2 never issued AllReduce seq 57 on
// communicator 0x... that ranks 0, 1 and 3 wait in (stalled 42.0 s, threshold 10.0 s)."
std::string VerdictSentence(const HangVerdict& verdict);

// One sentence for a straggler or a slow link: "Rank 3 on communicator 0x... (dp): cause compute;
// arrived last in 100% of instances, 600 us late on average, caused 84.0 ms of waiting."
std::string StragglerSentence(const Straggler& straggler);

// The whole report; lines end with '\n'.
std::string ReportText(const Report& report);

}  // namespace analysis
}  // namespace xtimer

#endif  // XTIMER_ANALYSIS_REPORT_TEXT_H_
