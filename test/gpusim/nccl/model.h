// The time model of the simulated NCCL: how long a collective or a send/recv takes once every
// participant has arrived. It is the model behind nccl-tests' "bus bandwidth":
//
//   duration = latency + algorithm_bytes * bus_factor / bandwidth
//
// with bandwidth and latency of the intra-node fabric when all participants share a node
// (XTIMER_SIM_NODE), else of the inter-node network, and the bandwidth divided by the
// XTIMER_SIM_SLOW_LINK factor of any slow participant (and, across nodes, its XTIMER_SIM_SLOW_NIC
// factor), from the knob's onset on when it has one (a link that degrades during the job). See
// docs/gpusim-nccl.md.
#ifndef XTIMER_TEST_GPUSIM_NCCL_MODEL_H_
#define XTIMER_TEST_GPUSIM_NCCL_MODEL_H_

#include <cstdint>
#include <vector>

namespace xtsim {
namespace nccl {

// A slowing of a link: its bandwidth divided by `factor` from `from_ns` (NowNs's clock) on.
struct Slowing {
  double factor;
  int64_t from_ns;
};

struct Link {
  double bytes_per_ns;  // GB/s (1e9 B/s) == bytes per nanosecond, at full speed
  double latency_ns;
  std::vector<Slowing> slowings;  // of its slow participants; the largest in force applies
};

// The link shared by participants with these nodes and global ranks.
Link LinkFor(const std::vector<int>& nodes, const std::vector<int>& global_ranks);

// Modelled duration in nanoseconds (at least 1) of a transfer that starts at `start_ns` (NowNs's
// clock: every member computes it from the same start, so they agree).
int64_t DurationNs(const Link& link, double algorithm_bytes, double bus_factor, int64_t start_ns);

}  // namespace nccl
}  // namespace xtsim

#endif  // XTIMER_TEST_GPUSIM_NCCL_MODEL_H_
