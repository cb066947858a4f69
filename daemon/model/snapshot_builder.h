// Building a Snapshot (daemon/model/snapshot.h) of the registered processes: one entry per rank
// with its series (and their window statistics), communicators and what blocks a queued
// collective; the registry's and the budget's counters; and which entries are hidden because an
// earlier live process holds their labels. Facts only: absolute times and sequence numbers.
//
// Thread safety: none; call it under the lock that guards the registry.
#ifndef XTIMER_DAEMON_MODEL_SNAPSHOT_BUILDER_H_
#define XTIMER_DAEMON_MODEL_SNAPSHOT_BUILDER_H_

#include <cstdint>

#include "daemon/model/aggregator_options.h"
#include "daemon/model/process_registry.h"
#include "daemon/model/snapshot.h"

namespace xtimer {
namespace daemon {

// `now_ns`: CLOCK_REALTIME (windows, heartbeat ages); `start_ns`: the daemon's start. Without
// `with_series` the op series (and their window statistics, the costly part) are left out. A
// live label conflict is logged once per process (ProcessState::conflict_logged).
Snapshot BuildSnapshot(const ProcessRegistry& registry, const AggregatorOptions& options,
                       int64_t start_ns, int64_t now_ns, bool with_series);

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_MODEL_SNAPSHOT_BUILDER_H_
