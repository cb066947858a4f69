// The time model of the simulated NCCL: how long a collective or a send/recv takes once every
// participant has arrived. It is the model behind nccl-tests' "bus bandwidth":
//
//   duration = latency + algorithm_bytes * bus_factor / bandwidth
//
// with bandwidth and latency of the intra-node fabric when all participants share a node
// (XTIMER_SIM_NODE), else of the inter-node network, and the bandwidth divided by the
// XTIMER_SIM_SLOW_LINK factor of any slow participant (and, across nodes, its XTIMER_SIM_SLOW_NIC
// factor). See docs/gpusim-nccl.md.
#ifndef XTIMER_TEST_GPUSIM_NCCL_MODEL_H_
#define XTIMER_TEST_GPUSIM_NCCL_MODEL_H_

#include <cstdint>
#include <vector>

namespace xtsim {
namespace nccl {

struct Link {
  double bytes_per_ns;  // GB/s (1e9 B/s) == bytes per nanosecond
  double latency_ns;
};

// The link shared by participants with these nodes and global ranks.
Link LinkFor(const std::vector<int>& nodes, const std::vector<int>& global_ranks);

// Modelled duration in nanoseconds (at least 1).
int64_t DurationNs(const Link& link, double algorithm_bytes, double bus_factor);

}  // namespace nccl
}  // namespace xtsim

#endif  // XTIMER_TEST_GPUSIM_NCCL_MODEL_H_
