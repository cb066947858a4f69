// The comparison of two dumps' op tables (`xtimer diff`): what got slower, and whose own work
// grew. docs/analyze-cli.md#xtimer-diff-a-b.
#ifndef XTIMER_CLI_OP_DIFF_H_
#define XTIMER_CLI_OP_DIFF_H_

#include <cstdint>
#include <vector>

#include "cli/op_table.h"

namespace xtimer {
namespace cli {

// A rank's own work "grew" when it takes at least this much longer in B than the same calls took
// it in A, and this much more than the median rank's grew: the rank stands out (one-off ops such
// as start-up memsets move every rank's own work by a few percent between two runs; a slowdown
// of every rank is the op table's to show, not a rank's).
constexpr double kRankGrowthFloor = 0.02;

struct OpStats {
  uint64_t count = 0;
  double mean_s = 0;
  double median_s = 0;
  double p90_s = 0;
  double throughput = 0;  // at the mean, in the row's unit; 0 when the op has none
};

struct DiffRow {
  OpSignature signature;
  const char* unit = "";  // "TFLOPS", "GB/s bus" (collectives, send/recv), "GB/s" (copies, sets)
  OpStats a, b;           // count 0: not in that dump
  // mean_b / mean_a - 1: the statistic the impact is made of (one slow rank in 8 moves the mean,
  // not the median). NaN when the op is in one dump only.
  double change = 0;
  // The change in time per rank: (mean_b - mean_a) x count_b / ranks_b; an op only in A counts
  // as -mean_a x count_a / ranks_a (time no longer spent).
  double impact_s = 0;
};

// Every signature of either table, the largest slowdown first.
std::vector<DiffRow> DiffTables(const OpTable& a, const OpTable& b);

// One signature of one rank's own work.
struct RankOpDiff {
  OpSignature signature;
  RankWork a, b;
  double change = 0;  // mean_b / mean_a - 1; NaN when in one dump only
  // (mean_b - mean_a) x count_b; only in B: its time; only in A: minus its time scaled to B's
  // window (x the rank's communication calls in B / in A: a GEMM whose shape changed is gone
  // and new, over windows of different lengths).
  double impact_s = 0;
};

struct RankDiff {
  int32_t rank = -1;
  // Sum of the ops' impact over what B's calls took at A's speed (plus the scaled time of ops
  // gone): how much longer the rank's own work took.
  double change = 0;
  double growth_s = 0;  // the sum of the ops' impact
  bool grew = false;  // change >= floor and change - the median rank's change >= floor
  std::vector<RankOpDiff> ops;  // the largest impact first
};

struct RankDiffs {
  double median_change = 0;  // the median over `ranks` of their change
  std::vector<RankDiff> ranks;  // every rank with own work in both tables, the largest change first
};

RankDiffs DiffRanks(const OpTable& a, const OpTable& b);

}  // namespace cli
}  // namespace xtimer

#endif  // XTIMER_CLI_OP_DIFF_H_
