// The rank-grouped summary of `xtimer stacks` (docs/stacks.md "summary.txt"): ranks grouped by
// identical main-thread stacks, the biggest group first; every other group is an outlier and
// is named with its top frames, e.g.
//   ranks 0-2,4-7 (7) in ncclAllReduce <- train_step (train.py:88) <- main (train.py:120)
//   rank 3 (1) in load_batch (data.py:42) <- train_step (train.py:80) <- main (train.py:120)
#ifndef XTIMER_STACKTRACE_SUMMARY_H_
#define XTIMER_STACKTRACE_SUMMARY_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "stacktrace/merge.h"

namespace xtimer {
namespace stacktrace {

struct SummaryInput {
  const StackTree* tree = nullptr;
  int32_t world_size = 0;                // 0: unknown
  std::vector<int32_t> missing_ranks;    // ranks of the world with no readable file
  std::vector<std::string> problems;     // "path: why" for files left out
  int top_frames = 3;                    // frames named per group
  // Notes on an outlier group's ranks (e.g. their parallel groups); may be empty.
  std::function<std::string(const std::vector<int32_t>&)> describe;
};

// "ranks 0-2,4-7 (7)" / "rank 3 (1)".
std::string RankCount(const std::vector<int32_t>& ranks);
// "ncclAllReduce <- train_step (train.py:88)": the innermost `top` frames of a group's stack
// that are not interpreter frames (_PyEval_*, libpython*), or "no stack (why)".
std::string TopFrames(const StackTree& tree, const RankGroup& group, int top);

std::string SummaryText(const SummaryInput& in);
std::string SummaryJson(const SummaryInput& in);

}  // namespace stacktrace
}  // namespace xtimer

#endif  // XTIMER_STACKTRACE_SUMMARY_H_
