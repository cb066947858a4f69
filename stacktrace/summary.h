// The rank-grouped summary of `xtimer stacks` (docs/stacks.md "summary.txt"): ranks grouped by
// identical main-thread stacks, the biggest group first; every other group is an outlier. Each
// group is named by the innermost frame of the application's (stacktrace/frame_owner.h) and its
// callers, then what that frame is in, after "via", e.g.
//   ranks 0-2,4-7 (7) in train_step (train.py:88) <- main (train.py:120) via ncclAllReduce
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
  // The text, and the JSON, hold at most this many bytes: groups (then problems) that do not fit
  // are left out and counted ("... N more stacks left out", "groups_left_out").
  size_t max_bytes = kMaxSummaryBytes;
};

// "ranks 0-2,4-7 (7)" / "rank 3 (1)".
std::string RankCount(const std::vector<int32_t>& ranks);
// The index in `stack` (innermost first, indices into `table`) of its innermost frame of the
// application's (stacktrace/frame_owner.h), or -1 when it has none.
int InnermostApplicationFrame(const std::vector<Frame>& table,
                              const std::vector<uint32_t>& stack);

// Where a group's ranks are, in one line (docs/stacks.md "summary.txt"):
// "app_fn (app.cc:42) <- main (app.cc:80) via clock_nanosleep <- nanosleep <- sleep_for<...>":
// the innermost `top` frames of the application's from its innermost one outward, then after
// "via" the named frames inward of it that are not the interpreter's (at most `top`: the
// innermost, "<- ... <-", the outermost), C++ names shortened (cxx_name.h). A stack with
// no application frame: its innermost `top` frames that are not the interpreter's. "no stack
// (why)" without frames.
std::string TopFrames(const StackTree& tree, const RankGroup& group, int top);

std::string SummaryText(const SummaryInput& in);
std::string SummaryJson(const SummaryInput& in);

}  // namespace stacktrace
}  // namespace xtimer

#endif  // XTIMER_STACKTRACE_SUMMARY_H_
