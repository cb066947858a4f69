// A deterministic synthetic training job written as timeline files (tests, golden data, bench).
#ifndef XTIMER_TIMELINE_SYNTHETIC_JOB_H_
#define XTIMER_TIMELINE_SYNTHETIC_JOB_H_

#include <cstdint>
#include <string>
#include <vector>

#include "timeline/timeline_io.h"

namespace xtimer {
namespace timeline {

struct SyntheticJob {
  int ranks = 8;
  int nodes = 2;  // ranks are split evenly, node i in dirs[i]
  int steps = 4;  // training steps; ~10 events per rank per step
  uint64_t seed = 1;
  std::vector<int64_t> node_skew_ns;       // added to node i's clock (default 0)
  int64_t start_ns = 1767225600000000000;  // 2026-01-01 UTC
  std::string job = "synthetic";
  int tp = 2;  // tensor-parallel pairs share a communicator
  // Pipeline sends: every step, each rank sends to the rank in its place on the next node (world
  // communicator), after the AllReduce; on odd steps the receive is posted before the send.
  bool p2p = false;
  // NVTX events (Metadata::nvtx) on every rank: each step a train_step range (flagged
  // format::kNvtxStep) on its main thread with forward and all_reduce_wait nested in it, a
  // step_done mark, and a data_loader start/end range on its loader thread that overlaps the
  // next step's.
  bool nvtx = false;
};

// The identity of synthetic rank `r` of `ranks`, `per_node` to a node: host and node "node<n>",
// pid 1000 + r, local rank and device r % per_node, a fixed monotonic clock, and the world
// communicator `world_comm` as a node's daemon writes it (members on other nodes are -1). The
// caller sets the times, strings and further communicators.
Metadata SyntheticRankMetadata(const std::string& job, int r, int ranks, int per_node,
                               uint64_t world_comm);

// Writes one directory per node under `root` (root/node0, root/node1, ...). Returns the
// directories, or an empty vector with *error.
std::vector<std::string> WriteSyntheticJob(const SyntheticJob& job, const std::string& root,
                                           std::string* error);

}  // namespace timeline
}  // namespace xtimer

#endif  // XTIMER_TIMELINE_SYNTHETIC_JOB_H_
