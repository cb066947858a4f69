// Which parallel group a communicator's members form, and a rank's pipeline stage, in the layout
// of --groups (util/parallel_groups.h: Megatron's rank order).
#include <algorithm>

#include "analysis/analysis.h"

namespace xtimer {
namespace analysis {

std::string GroupKindOf(const Groups& groups, const std::vector<int32_t>& members) {
  if (members.size() < 2) return "";
  for (int32_t r : members) {
    if (r < 0 || r >= groups.world()) return "";
  }
  for (int dim = 0; dim < kParallelDims; ++dim) {
    int n = ParallelDimSize(groups, dim);
    if (n != static_cast<int>(members.size())) continue;
    int first[kParallelDims];
    ParallelCoordinates(groups, members[0], first);
    std::vector<bool> covered(n, false);
    bool ok = true;
    for (int32_t r : members) {
      int c[kParallelDims];
      ParallelCoordinates(groups, r, c);
      for (int i = 0; i < kParallelDims && ok; ++i) {
        if (i != dim && c[i] != first[i]) ok = false;
      }
      if (!ok || covered[c[dim]]) {
        ok = false;
        break;
      }
      covered[c[dim]] = true;
    }
    if (ok) return kParallelDimNames[dim];
  }
  return "";
}

int PipelineStage(const Groups& groups, int32_t rank) {
  if (rank < 0) return 0;
  int c[kParallelDims];
  ParallelCoordinates(groups, rank, c);
  return c[4];
}

}  // namespace analysis
}  // namespace xtimer
