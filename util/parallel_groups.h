// A job's parallel layout as `--groups` gives it (tp2-pp2-dp2: the size of each dimension), and
// where a rank sits in it. Ranks follow Megatron's order tp-cp-ep-dp-pp whatever order the text
// names the dimensions in: tp varies fastest, pp slowest. The one parser and the one rank order
// of every command that takes --groups (xtimer analyze, report, stacks and timeline).
#ifndef XTIMER_UTIL_PARALLEL_GROUPS_H_
#define XTIMER_UTIL_PARALLEL_GROUPS_H_

#include <cstdint>
#include <string>

namespace xtimer {

struct ParallelGroups {
  int tp = 1, cp = 1, ep = 1, dp = 1, pp = 1;
  int world() const { return tp * cp * ep * dp * pp; }
};

// The dimensions, fastest first, and their names ("tp", "cp", "ep", "dp", "pp").
constexpr int kParallelDims = 5;
extern const char* const kParallelDimNames[kParallelDims];

// The size of dimension `dim` (0 = tp ... 4 = pp).
int ParallelDimSize(const ParallelGroups& groups, int dim);

// The rank's coordinate in each dimension, fastest first.
void ParallelCoordinates(const ParallelGroups& groups, int32_t rank, int out[kParallelDims]);

// "pp1 dp0 tp1": the rank's coordinates, slowest first, in the dimensions larger than 1.
std::string ParallelLabel(const ParallelGroups& groups, int32_t rank);

// Reads "tp2-pp2-dp2": dimensions tp, cp, ep, dp, pp, each at most once, in any order, each with
// a size from 1 to 999999; those not named have size 1; at most 2^24 ranks. False with *error
// naming the bad part (and *groups unchanged).
bool ParseParallelGroups(const std::string& text, ParallelGroups* groups, std::string* error);

}  // namespace xtimer

#endif  // XTIMER_UTIL_PARALLEL_GROUPS_H_
