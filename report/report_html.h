// The HTML report of `xtimer report` (docs/report.md): one self-contained file (inline CSS and
// SVG charts, no script, nothing fetched at view time) with per-rank step time and matmul FLOP/s,
// observed and true bus bandwidth per communicator, the slowest operations by signature, the
// diagnosis (the verdicts and evidence of `xtimer analyze`, in its own sentences) and relative
// links to a Perfetto trace and flame graphs found beside the dump. Every string that comes from
// input files is escaped.
#ifndef XTIMER_REPORT_REPORT_HTML_H_
#define XTIMER_REPORT_REPORT_HTML_H_

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/steps.h"

namespace xtimer {
namespace report {

struct RankRow {
  int32_t rank = -1;
  std::string node;
  double step_s = 0;        // analysis::StepsOf's median; 0: not known
  double matmul_flops = 0;  // FLOP per second over the rank's matmuls; 0: none timed
  bool step_marked = false;         // the job marked its steps (NVTX): not a guess
  size_t collectives_per_step = 0;  // else what the guess from its collectives counted
};

// One operation signature of the dump (cli/readers/op_table.h), waiting removed.
struct OpRow {
  std::string name;   // operation or kernel name (a kernel's short name, util/kernel_name.h)
  std::string signature;  // the kernel's full name where `name` is shorter, else ""
  std::string shape;  // "4096x4096x4096", "64 MiB", ""
  std::string dtype;
  std::string unit;   // of `throughput`: "TFLOPS", "GB/s bus", "GB/s", ""
  uint64_t count = 0;
  double mean_s = 0, median_s = 0, p90_s = 0;
  double total_s = 0;     // count x mean
  double throughput = 0;  // at the mean; 0 when the op has none
};

struct Link {
  std::string label;  // "Perfetto trace", "flame graph"
  std::string path;   // relative to the report's folder
};

// What xtimer cost one process up to the dump (the timeline files' hook cost, docs/report.md).
struct CostRow {
  int32_t rank = -1;
  std::string node;
  double own_share = 0;  // the hook's own time on application threads / the time since it started
  double budget = 0;     // XTIMER_OVERHEAD_BUDGET as a ratio (0: a hook before it)
  uint64_t calls = 0;    // ops it considered timing
  uint64_t timed = 0;    // ... and timed
};

struct ReportPage {
  std::string job;
  std::string version;
  std::string summary;                // what was read, one line
  std::vector<std::string> problems;  // partial input, one line each
  std::vector<RankRow> ranks;         // by rank
  std::vector<OpRow> ops;             // the slowest first, as many as shown
  size_t ops_total = 0;               // signatures in the dump
  analysis::Report analysis;
  std::vector<Link> links;
  std::vector<CostRow> cost;  // by rank; one per process
  int cost_unknown = 0;       // timeline files that do not say (written before it existed)
};

// Bus bandwidth per communicator, operation and size: the report's rows summed over ranks (sums
// added, never rates; rank -1), in the report's order of first appearance.
std::vector<analysis::BusBandwidth> PerCommunicator(
    const std::vector<analysis::BusBandwidth>& rows);

// Charts hold at most this many rows; beyond, the highlighted (straggler) rows and the most
// extreme values are kept and the chart says how many were left out.
constexpr size_t kMaxChartRows = 128;

// The whole document.
std::string ReportHtml(const ReportPage& page);

// `path` as an href relative to the report: each segment percent-encoded, "./" in front of a
// path that does not start with "../" (so no segment reads as a URL scheme).
std::string RelativeHref(const std::string& path);

}  // namespace report
}  // namespace xtimer

#endif  // XTIMER_REPORT_REPORT_HTML_H_
