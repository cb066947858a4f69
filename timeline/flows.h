// Flow ids that link slices across ranks in the trace (docs/perfetto.md#flows). Ids of different
// kinds never collide: the top two bits say which kind an id is (launch flows: 01, collectives:
// 10, send/recv: 11).
#ifndef XTIMER_TIMELINE_FLOWS_H_
#define XTIMER_TIMELINE_FLOWS_H_

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "timeline/format.h"
#include "timeline/timeline_io.h"

namespace xtimer {
namespace timeline {

// The same id on every rank's slice of collective (comm, seq).
uint64_t CollectiveFlowId(uint64_t comm, uint64_t seq);

// The id of the n-th (0-based) send on communicator `comm` from communicator rank `sender` to
// `receiver`, which is also the id of the n-th receive at `receiver` from `sender`.
uint64_t P2PFlowId(uint64_t comm, int32_t sender, int32_t receiver, uint64_t n);

// For one rank's events: event index -> the flow id of each send and receive whose communicator
// this rank's metadata names (its rank there) and whose peer is known. Sends and receives are
// numbered per (communicator, direction, peer) in the order they were issued (seq).
std::unordered_map<uint32_t, uint64_t> P2PFlowIds(const std::vector<EventRecord>& events,
                                                  const std::vector<CommInfo>& comms);

}  // namespace timeline
}  // namespace xtimer

#endif  // XTIMER_TIMELINE_FLOWS_H_
