// Internal to the converter: which host slice launched which GPU op, where the trace can tell
// (docs/perfetto.md "Flows"). A GPU op's event has its launch time (EventRecord::cpu_launch_ns)
// but not the thread that launched it: the hook's op record (format/record.h OpRecord) has no
// byte to spare for a thread id. So an op is linked only where its thread is unambiguous: at its
// launch time exactly one thread of the rank has an NVTX push/pop range open (Python spans are
// such ranges), and the op is linked to the innermost range open there (the latest to begin, the
// deepest of those). Start/end ranges belong to no thread and are left out.
#ifndef XTIMER_TIMELINE_HOST_LINKS_H_
#define XTIMER_TIMELINE_HOST_LINKS_H_

#include <cstdint>
#include <vector>

#include "timeline/timeline_io.h"

namespace xtimer {
namespace timeline {

struct HostLink {
  uint32_t event;  // index in the rank's events: a GPU op (not a host synchronisation)
  uint32_t entry;  // index in Metadata::nvtx: the push/pop range it was launched in
};

// The links of one rank's events, in the file's clock. An op's launch time is the earlier of its
// cpu_launch_ns and its GPU start (as its launch instant on the host track); ops without a
// launch time are not linked. Ascending event index.
std::vector<HostLink> HostLinks(const std::vector<EventRecord>& events, const Metadata& m);

}  // namespace timeline
}  // namespace xtimer

#endif  // XTIMER_TIMELINE_HOST_LINKS_H_
