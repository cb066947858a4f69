// Flow ids that link slices across ranks in the trace (docs/perfetto.md#flows). Ids of different
// kinds never collide: the top two bits say which kind an id is (launch flows: 01, collectives:
// 10, send/recv: 11; host slice -> GPU flows: 00 with bit 61 set, rank_encoder.cc).
#ifndef XTIMER_TIMELINE_FLOWS_H_
#define XTIMER_TIMELINE_FLOWS_H_

#include <cstdint>
#include <map>
#include <tuple>
#include <utility>
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

// A direction of point-to-point traffic: (communicator, sender's comm rank, receiver's).
using P2PPair = std::tuple<uint64_t, int32_t, int32_t>;

// One send or receive as pass 1 keeps it, ordered by pair, then sends before receives, then seq.
struct P2POp {
  P2PPair pair;
  bool recv;
  uint64_t seq;
  int64_t start;  // in the file's clock
  int64_t end;
  bool operator<(const P2POp& o) const {
    return std::tie(pair, recv, seq) < std::tie(o.pair, o.recv, o.seq);
  }
};

// The sends and receives among one rank's events whose communicator this rank's metadata names
// (its rank there) and whose peer is known: (event index, op), sorted.
std::vector<std::pair<uint32_t, P2POp>> P2POps(const std::vector<EventRecord>& events,
                                               const std::vector<CommInfo>& comms);

// Per pair, the number to add to a receive's position (among that pair's receives in the
// receiver's file) to get its send's position in the sender's file. The files of a dump can
// begin at different operations (a dump of the last N operations per rank), so the n-th receive
// in one need not be the n-th send in the other. The shift is the one under which matched sends
// and receives end closest together (median over the pairs both files hold), among the shifts
// that pair one of the first sends with the receive ending nearest to it. 0 where one side is
// missing.
using P2PShifts = std::map<P2PPair, int64_t>;
// `sends` and `receives`: per pair, end times (on one clock) in position order.
P2PShifts MatchP2P(const std::map<P2PPair, std::vector<int64_t>>& sends,
                   const std::map<P2PPair, std::vector<int64_t>>& receives);

// The flow id of each of one file's sorted P2POps (index into `ops`, id). Sends are numbered
// per pair in issue order (seq); a receive takes the number of its send (`shifts`), and has none
// when its send lies outside the sender's file.
std::vector<std::pair<size_t, uint64_t>> P2PNumbered(const std::vector<P2POp>& ops,
                                                     const P2PShifts& shifts);

// For one rank's events: event index -> the flow id of each send and receive of P2POps.
std::unordered_map<uint32_t, uint64_t> P2PFlowIds(const std::vector<EventRecord>& events,
                                                  const std::vector<CommInfo>& comms,
                                                  const P2PShifts& shifts);

}  // namespace timeline
}  // namespace xtimer

#endif  // XTIMER_TIMELINE_FLOWS_H_
