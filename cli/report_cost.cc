#include "cli/report_cost.h"

#include <algorithm>
#include <set>
#include <utility>

#include "timeline/timeline_io.h"

namespace xtimer {
namespace cli {
namespace {

report::CostRow RowOf(const timeline::Metadata& m) {
  report::CostRow row;
  row.rank = m.rank;
  row.node = m.node.empty() ? m.host : m.node;
  const timeline::HookCost& h = m.hook;
  const int64_t since = m.dump_time_ns - h.start_ns;
  row.own_share = since > 0 ? static_cast<double>(h.own_ns) / static_cast<double>(since) : 0;
  row.budget = h.budget_ppm * 1e-6;
  for (size_t k = 0; k < h.calls.size() && k < h.timed.size(); ++k) {
    row.calls += h.calls[k];
    row.timed += h.timed[k];
  }
  return row;
}

}  // namespace

std::vector<report::CostRow> HookCostRows(const std::vector<timeline::Metadata>& files,
                                          int* unknown) {
  std::vector<report::CostRow> rows;
  std::set<std::pair<std::string, int32_t>> seen;  // (node, pid)
  *unknown = 0;
  for (const timeline::Metadata& m : files) {
    if (!m.hook.present) {
      ++*unknown;
      continue;
    }
    const std::string node = m.node.empty() ? m.host : m.node;
    if (!seen.insert({node, m.pid}).second) continue;
    rows.push_back(RowOf(m));
  }
  std::stable_sort(rows.begin(), rows.end(), [](const report::CostRow& a,
                                                const report::CostRow& b) {
    return a.rank < b.rank;
  });
  return rows;
}

}  // namespace cli
}  // namespace xtimer
