// The comparison of two dumps' op tables (`xtimer diff`): what got slower, and whose own work
// grew. docs/analyze-cli.md#xtimer-diff-a-b.
#ifndef XTIMER_CLI_OP_DIFF_H_
#define XTIMER_CLI_OP_DIFF_H_

#include <cstdint>
#include <vector>

#include "cli/readers/op_table.h"

namespace xtimer {
namespace cli {

// A rank is named when its own work grew beyond the other ranks' by at least this share
// (docs/analyze-cli.md#xtimer-diff-a-b).
constexpr double kRankGrowthFloor = 0.02;
// An op's change on a rank stands out when it exceeds the median rank's change by more than this
// many robust standard deviations (1.4826 x the median absolute deviation) of the ranks' changes.
constexpr double kOutlierSigmas = 3.0;
// ... and the rank made at least this many calls of it in each dump: one start-up call is one
// sample, whose noise cannot be told from a slowdown.
constexpr uint64_t kMinCallsPerRank = 5;

struct OpStats {
  uint64_t count = 0;
  double mean_s = 0;
  double median_s = 0;
  double p90_s = 0;
  double throughput = 0;  // at the mean, in the row's unit; 0 when the op has none
};

// The throughput unit of a signature's kind: "TFLOPS", "GB/s bus", "GB/s" or "".
const char* UnitOf(const OpSignature& signature);
// The statistics of one signature's durations in `table` (count 0 when it has none); the
// throughput is taken at the mean, in UnitOf's unit.
OpStats StatsOf(const OpSignature& signature, const OpTable& table);

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
  double median_change = 0;  // the median over the ranks with this op in both; NaN if none
  // (mean_b - mean_a) x count_b; only in B: its time; only in A: minus its time scaled to B's
  // window (x the rank's communication calls in B / in A: a GEMM whose shape changed is gone
  // and new, over windows of different lengths).
  double impact_s = 0;
  // The part of the impact that is this rank's alone: (change - median_change) x mean_a x
  // count_b when the change stands out (>= kRankGrowthFloor and kOutlierSigmas above the
  // median, kMinCallsPerRank calls in each dump); an op new or gone on at most half the ranks, its whole impact; else 0.
  double excess_s = 0;
};

struct RankDiff {
  int32_t rank = -1;
  double growth_s = 0;  // the sum of the ops' impact
  double excess_s = 0;  // the sum of the ops' excess
  // excess_s over what the rank's calls in B took at A's speed (plus the scaled time of ops
  // gone): how much more the rank's own work grew than the other ranks'.
  double change = 0;
  bool grew = false;  // change >= kRankGrowthFloor
  std::vector<RankOpDiff> ops;  // the largest excess first, then the largest impact
};

// Every rank with own work in both tables, the largest change first.
std::vector<RankDiff> DiffRanks(const OpTable& a, const OpTable& b);

}  // namespace cli
}  // namespace xtimer

#endif  // XTIMER_CLI_OP_DIFF_H_
