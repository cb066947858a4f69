// A Report as the stable JSON document of `xtimer analyze --json` (schema in docs/analysis.md).
#ifndef XTIMER_ANALYSIS_REPORT_JSON_H_
#define XTIMER_ANALYSIS_REPORT_JSON_H_

#include <string>
#include <utility>
#include <vector>

#include "analysis/analysis.h"

namespace xtimer {
namespace analysis {

// What the caller read, quoted in the report's "inputs" object.
struct ReportInputs {
  std::vector<std::string> files;      // timeline and summary files read
  std::vector<int32_t> ranks;          // global ranks analysed
  std::vector<int32_t> missing_ranks;  // members of a communicator with no data
  std::vector<std::string> warnings;   // files skipped and why, partial data, ...
  std::string groups;                  // the group layout text ("tp2-pp2-dp2"), "" when none
};

struct ReportContext {
  // Per node: the offset added to its clock to align it with the reference (seconds).
  std::vector<std::pair<std::string, double>> clock_offsets_s;
  ReportInputs inputs;
};

// One JSON object, on one line, ending without a newline.
std::string ReportJson(const Report& report, const ReportContext& context);
// One verdict as the object under "hang" (also used by the daemon's dump summaries).
std::string HangVerdictJson(const HangVerdict& verdict);

}  // namespace analysis
}  // namespace xtimer

#endif  // XTIMER_ANALYSIS_REPORT_JSON_H_
