// Internal to analysis/: every rank's arrivals grouped by communicator and instance, with flat
// vectors (no per-instance allocation), shared by the hang and straggler passes.
#ifndef XTIMER_ANALYSIS_COMM_INDEX_H_
#define XTIMER_ANALYSIS_COMM_INDEX_H_

#include <cstdint>
#include <vector>

#include "analysis/analysis.h"

namespace xtimer {
namespace analysis {

// One member's completed arrival in one instance: the fields the passes read on every entry are
// copied here, so that a pass over an instance reads contiguous memory.
struct CommEntry {
  uint64_t seq;
  int64_t start_ns;
  int64_t end_ns;
  int64_t busy_ns;
  int64_t idle_ns;
  uint64_t signature;  // SignatureHash: equal when op, dtype, count and root are
  const Arrival* arrival;
  uint32_t slot;  // the member's index in CommView::inputs
};

// A 64-bit hash of what members must agree on (op, dtype, count, root).
uint64_t SignatureHash(const Arrival& a);

struct CommView {
  uint64_t id = 0;
  int32_t size = 0;  // the largest size any member reported (arrivals, Communicator)
  // Members present in the inputs: indices into the RankInput vector, ascending. A member's
  // "slot" is its position here.
  std::vector<uint32_t> inputs;
  // Global ranks of every member when a Communicator listed them (-1 where unknown); else empty.
  std::vector<int32_t> known_members;
  // Completed arrivals sorted by seq, then slot. An instance is a run of equal seq.
  std::vector<CommEntry> entries;
};

// Communicators in ascending id order.
std::vector<CommView> IndexComms(const std::vector<RankInput>& ranks);

// The global ranks of a communicator's members: known_members when complete, else the given
// members' ranks; ascending.
std::vector<int32_t> MemberRanks(const CommView& comm, const std::vector<RankInput>& ranks);

// The Progress of a rank for a communicator, or nullptr.
const Progress* FindProgress(const RankInput& rank, uint64_t comm_id);

}  // namespace analysis
}  // namespace xtimer

#endif  // XTIMER_ANALYSIS_COMM_INDEX_H_
