// Analyze: index the inputs once, then run the hang and straggler passes.
#include <cstdio>

#include "analysis/comm_index.h"
#include "analysis/passes.h"
#include "analysis/steps.h"
#include "format/record.h"

namespace xtimer {
namespace analysis {

std::string CommText(uint64_t id) {
  char buf[format::kCommIdTextSize];
  return format::CommIdText(id, buf);
}

std::string OpText(uint16_t op) {
  return format::OperationName(static_cast<format::Operation>(op));
}

std::string DurationText(double seconds) {
  char buf[48];
  double a = seconds < 0 ? -seconds : seconds;
  if (a >= 1 || a == 0) {
    std::snprintf(buf, sizeof buf, "%.1f s", seconds);
  } else if (a >= 1e-3) {
    std::snprintf(buf, sizeof buf, "%.1f ms", seconds * 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f us", seconds * 1e6);
  }
  return buf;
}

std::string RankList(const std::vector<int32_t>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) s += i + 1 == ranks.size() ? " and " : ", ";
    s += std::to_string(ranks[i]);
  }
  return s;
}

std::string VerdictWhere(const HangVerdict& v) {
  const std::string comm = "communicator " + CommText(v.comm_id);
  if (v.point_to_point) return "a send/receive on " + comm;
  if (v.seq == 0) return comm;
  return (v.op != 0 ? OpText(v.op) + " " : std::string()) + "seq " + std::to_string(v.seq) +
         " on " + comm;
}

Report ReportOf(const std::vector<RankInput>& ranks, const std::vector<CommView>& comms,
                const Options& options) {
  Report report;
  report.hangs = FindHangs(ranks, comms, options, &report.thresholds);
  FindStragglers(ranks, comms, options, &report);
  report.steps = MarkedStepStats(ranks);
  return report;
}

Report Analyze(const std::vector<RankInput>& ranks, const Options& options) {
  return ReportOf(ranks, IndexComms(ranks, options), options);
}

}  // namespace analysis
}  // namespace xtimer
