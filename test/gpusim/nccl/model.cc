#include "test/gpusim/nccl/model.h"

#include <algorithm>
#include <cmath>

#include "test/gpusim/common/sim_env.h"

namespace xtsim {
namespace nccl {
namespace {

struct Params {
  Link intra;
  Link inter;
  std::vector<RankSpec> slow_links;
  std::vector<RankSpec> slow_nics;  // only communication that leaves the node
};

std::vector<RankSpec> SlowFactors(const char* name) {
  std::vector<RankSpec> specs = ParseRankSpecs(name, 1, 1);
  for (const RankSpec& s : specs) {
    if (!(s.a > 0)) Fatal("%s: factor %g of rank %d must be positive", name, s.a, s.rank);
  }
  return specs;
}

// The largest factor of `specs` among `global_ranks`; 0 when none applies.
double LargestFactor(const std::vector<RankSpec>& specs, const std::vector<int>& global_ranks) {
  double factor = 0;
  for (const RankSpec& s : specs) {
    if (std::find(global_ranks.begin(), global_ranks.end(), s.rank) != global_ranks.end()) {
      factor = std::max(factor, s.a);
    }
  }
  return factor;
}

double PositiveEnv(const char* name, double def) {
  double v = EnvDouble(name, def);
  if (!(v > 0)) Fatal("%s=%g must be positive", name, v);
  return v;
}

double NonNegativeEnv(const char* name, double def) {
  double v = EnvDouble(name, def);
  if (v < 0) Fatal("%s=%g must not be negative", name, v);
  return v;
}

const Params& GetParams() {
  static const Params* params = [] {
    auto* p = new Params;
    p->intra = {PositiveEnv("XTIMER_SIM_INTRA_BW_GBPS", 150),
                NonNegativeEnv("XTIMER_SIM_INTRA_LAT_US", 5) * 1e3};
    p->inter = {PositiveEnv("XTIMER_SIM_INTER_BW_GBPS", 25),
                NonNegativeEnv("XTIMER_SIM_INTER_LAT_US", 15) * 1e3};
    p->slow_links = SlowFactors("XTIMER_SIM_SLOW_LINK");
    p->slow_nics = SlowFactors("XTIMER_SIM_SLOW_NIC");
    return p;
  }();
  return *params;
}

}  // namespace

Link LinkFor(const std::vector<int>& nodes, const std::vector<int>& global_ranks) {
  const Params& p = GetParams();
  bool same_node =
      std::all_of(nodes.begin(), nodes.end(), [&](int n) { return n == nodes.front(); });
  Link link = same_node ? p.intra : p.inter;
  // A collective moves at the pace of its slowest link: the largest factor among members wins.
  double factor = LargestFactor(p.slow_links, global_ranks);
  if (!same_node) factor = std::max(factor, LargestFactor(p.slow_nics, global_ranks));
  if (factor > 0) link.bytes_per_ns /= factor;
  return link;
}

int64_t DurationNs(const Link& link, double algorithm_bytes, double bus_factor) {
  double ns = link.latency_ns + algorithm_bytes * bus_factor / link.bytes_per_ns;
  return std::max<int64_t>(1, std::llround(ns));
}

}  // namespace nccl
}  // namespace xtsim
