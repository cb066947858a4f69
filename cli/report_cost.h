// What xtimer cost each process of a dump, from its timeline files' metadata (the hook cost field,
// docs/timeline-format.md): `xtimer report`'s "What xtimer cost" section.
#ifndef XTIMER_CLI_REPORT_COST_H_
#define XTIMER_CLI_REPORT_COST_H_

#include <string>
#include <vector>

#include "report/report_html.h"
#include "timeline/timeline_io.h"

namespace xtimer {
namespace cli {

// One row per process (node and pid: a process driving several devices writes one file per
// device, each with the process's figures), by rank, from the metadata of the dump's timeline
// files (DumpInput::metadata: the dump reader read them). *unknown: files that do not carry the
// field.
std::vector<report::CostRow> HookCostRows(const std::vector<timeline::Metadata>& files,
                                          int* unknown);

}  // namespace cli
}  // namespace xtimer

#endif  // XTIMER_CLI_REPORT_COST_H_
