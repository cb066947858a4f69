// A rank's communicators as the aggregator tracks them: progress from completed op records, the
// ring's in-flight row (rows of several devices of one process merged), and the communicator's
// rank, size and parent from kComm records. Plain data and free functions; the owner's lock
// guards them.
#ifndef XTIMER_DAEMON_COMM_PROGRESS_H_
#define XTIMER_DAEMON_COMM_PROGRESS_H_

#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "format/ring.h"

namespace xtimer {
namespace daemon {

struct CommState {
  uint64_t completed_seq = 0;  // from completed records
  int64_t last_completed_ns = 0;
  int64_t last_activity_ns = 0;
  bool has_row = false;  // listed in the ring's in-flight table now
  format::InflightRow row;
  int comm_rank = -1;
  int comm_size = 0;
  uint64_t parent_id = 0;
};

using CommTable = std::unordered_map<uint64_t, CommState>;

// A second row of the same communicator id: another device of the process (one process driving
// several GPUs). Row 0 counts ops, so its counts add up; a communicator's row keeps the lagging
// device's progress and the oldest op in flight, with that op's detail.
void MergeRow(const format::InflightRow& row, format::InflightRow* into);

// The communicator `comm_id`, added when missing. With `max` held, the least recently active one
// that the in-flight table no longer lists makes room; null when none can.
CommState* FindOrAddComm(CommTable* comms, uint64_t comm_id, size_t max);

// The communicator that names a device rank: the largest, then one made by an init call (no
// parent), then the lowest id (in *id). Null when the rank knows no communicator's size.
const CommState* NamingComm(const CommTable& comms, uint64_t* id);

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_COMM_PROGRESS_H_
