// What the aggregator keeps and within which bounds (the daemon's flags, docs/daemon.md).
#ifndef XTIMER_DAEMON_MODEL_AGGREGATOR_OPTIONS_H_
#define XTIMER_DAEMON_MODEL_AGGREGATOR_OPTIONS_H_

#include <cstddef>
#include <cstdint>

namespace xtimer {
namespace daemon {

struct AggregatorOptions {
  int64_t window_ns = int64_t{60} * 1000000000;  // --window
  int window_buckets = 60;                          // expiry steps per window
  size_t window_samples = 4096;                     // raw samples kept per series for p99
  size_t history = 100000;                          // --history: OpRecords kept per process
  size_t nvtx_history = 16384;  // NVTX records kept per process (for dumps)
  int64_t stale_heartbeat_ns = int64_t{60} * 1000000000;  // rank_up is 0 past this
  size_t max_series_per_process = 512;  // op series; records beyond are counted, not aggregated
  size_t max_comms_per_process = 64;    // communicators tracked per process
  size_t max_names_per_process = 4096;  // kernel names kept per process
  size_t max_ranks_per_process = 64;    // device ranks of one process; ops of more go to its first
  // Exited processes (connection closed) are kept this long, with rank_up 0 and their exit
  // cause, so that short jobs and crashed ranks stay visible and dumpable. 0: dropped at once.
  int64_t exited_grace_ns = int64_t{600} * 1000000000;  // --exited-grace
  size_t max_exited = 64;                                // --exited-max: oldest dropped first
  size_t max_exited_bytes = size_t{1} << 30;             // --exited-memory-mb, estimated
  // Memory (estimated, see docs/daemon.md "Memory budget") that all processes' state may hold,
  // exited ones included; nothing grows past it. Above 3/4 of it (the high-water mark) exited
  // processes go oldest first, then the longest histories are halved (oldest records first),
  // and only processes within their share, budget / (4 * max(64, live)), may still grow.
  size_t memory_budget_bytes = size_t{512} << 20;  // --memory-budget-mb
  size_t max_process_bytes = size_t{64} << 20;     // --process-memory-mb: one process at most
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_MODEL_AGGREGATOR_OPTIONS_H_
