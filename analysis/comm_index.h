// Internal to analysis/: the communicators of the inputs with their members, and every rank's
// arrivals grouped by communicator and instance (flat vectors, no per-instance allocation) and
// folded into the facts the hang and straggler passes read (instance_fold.h).
#ifndef XTIMER_ANALYSIS_COMM_INDEX_H_
#define XTIMER_ANALYSIS_COMM_INDEX_H_

#include <cstdint>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/instance_fold.h"

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
  // Completed arrivals sorted by seq, then slot (an instance is a run of equal seq), while they
  // are folded; empty after.
  std::vector<CommEntry> entries;
  CommFacts facts;
};

// A communicator a rank has arrivals on, the largest size they give it, and how many there are.
struct ArrivalComm {
  uint64_t comm_id = 0;
  int32_t comm_size = 0;
  size_t count = 0;
};

// The communicators of the inputs in ascending id order, with their members and sizes (no
// entries): those each rank lists, has progress on, or has arrivals on (`arrival_comms[r]`).
std::vector<CommView> CommsOf(const std::vector<RankInput>& ranks,
                              const std::vector<std::vector<ArrivalComm>>& arrival_comms);

// The index of communicator `id` in `comms` (ascending ids), or comms.size().
size_t CommIndexOf(const std::vector<CommView>& comms, uint64_t id);

// CommsOf the ranks' arrivals, each communicator's arrivals folded (CommView::facts).
std::vector<CommView> IndexComms(const std::vector<RankInput>& ranks, const Options& options);

// The global ranks of a communicator's members: known_members when complete, else the given
// members' ranks; ascending.
std::vector<int32_t> MemberRanks(const CommView& comm, const std::vector<RankInput>& ranks);

// The Progress of a rank for a communicator, or nullptr.
const Progress* FindProgress(const RankInput& rank, uint64_t comm_id);

}  // namespace analysis
}  // namespace xtimer

#endif  // XTIMER_ANALYSIS_COMM_INDEX_H_
