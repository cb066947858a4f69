// `xtimer diff`'s output: the table of signatures and the ranks whose own work grew, as text or
// JSON (docs/analyze-cli.md#xtimer-diff-a-b).
#ifndef XTIMER_CLI_DIFF_REPORT_H_
#define XTIMER_CLI_DIFF_REPORT_H_

#include <cstddef>
#include <string>
#include <vector>

#include "cli/op_diff.h"
#include "cli/readers/op_table.h"

namespace xtimer {
namespace cli {

struct DiffReport {
  const OpTable* a = nullptr;
  const OpTable* b = nullptr;
  std::vector<DiffRow> rows;
  std::vector<RankDiff> ranks;
  size_t top = static_cast<size_t>(-1);  // rows printed
};

std::string DiffText(const DiffReport& r);
std::string DiffJson(const DiffReport& r);

}  // namespace cli
}  // namespace xtimer

#endif  // XTIMER_CLI_DIFF_REPORT_H_
