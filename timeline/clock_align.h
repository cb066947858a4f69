// Clock alignment for `xtimer timeline` (docs/perfetto.md#clock-alignment): each node's offset,
// estimated from the end times of the collectives its ranks share with other nodes' ranks.
#ifndef XTIMER_TIMELINE_CLOCK_ALIGN_H_
#define XTIMER_TIMELINE_CLOCK_ALIGN_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace xtimer {
namespace timeline {

// (comm_id, seq) of a collective -> its end time on one node.
using CollectiveEnd = std::pair<std::pair<uint64_t, uint64_t>, int64_t>;

// One node's collective end times, sorted by key, one per key (the earliest of its ranks').
struct NodeEnds {
  std::string node;
  std::vector<CollectiveEnd> ends;
};

// Merges a rank's sorted ends into a node's sorted ends, keeping the earliest per key. Linear in
// the two sizes.
void MergeEnds(std::vector<CollectiveEnd>* node, const std::vector<CollectiveEnd>& rank);

struct ClockAlignment {
  std::vector<int64_t> offset;  // ns to add to each node's times
  // The aligned node whose times most of a node's estimate came from; the node itself for the
  // reference; -1 for a node that shares no collective with the others (offset 0).
  std::vector<int> reference_of;
  std::vector<size_t> shared;  // collectives each estimate is the median over
};

// The node with the most collectives is the reference (offset 0). Then, repeatedly, the unaligned
// node sharing the most collectives with the aligned ones gets the median over those collectives
// of (end time on the aligned nodes, in reference time) - (its end time). Each (node, collective)
// entry is handled a bounded number of times: O(E log E) time and O(E) memory for E entries, for
// any number of nodes.
ClockAlignment AlignClocks(const std::vector<NodeEnds>& nodes);

}  // namespace timeline
}  // namespace xtimer

#endif  // XTIMER_TIMELINE_CLOCK_ALIGN_H_
