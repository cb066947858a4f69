// The debug annotations of a slice (docs/perfetto.md): shapes, communicators, sizes and the rates
// derived from them, with opmath's arithmetic, so traces and metrics agree.
#ifndef XTIMER_TIMELINE_SLICE_ARGS_H_
#define XTIMER_TIMELINE_SLICE_ARGS_H_

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>

#include "timeline/format.h"
#include "timeline/packet_sequence.h"

namespace xtimer {
namespace timeline {

// Communicators of the whole job, merged over every file: a node's daemon knows the global ranks
// of its own members only; the files of all nodes together name every member.
struct CommMembers {
  int32_t size = 0;
  std::map<int32_t, int32_t> global;  // communicator rank -> global rank, as far as files say
};
using CommTable = std::unordered_map<uint64_t, CommMembers>;

// A communicator id as text (format::CommIdText, as in the metrics' `comm` label).
std::string CommHex(uint64_t id);

// "0x… (4 ranks: 0 2 4 6)": the communicator and its members' global ranks ('?' where no file
// says; past 16 members, the first 16 and a count).
std::string CommLabel(uint64_t id, const CommTable& comms);

// Adds the arguments of `e` to the next event of `s`.
void AddArgs(Sequence* s, const EventRecord& e, const CommTable& comms);

}  // namespace timeline
}  // namespace xtimer

#endif  // XTIMER_TIMELINE_SLICE_ARGS_H_
