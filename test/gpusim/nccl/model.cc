#include "test/gpusim/nccl/model.h"

#include <time.h>

#include <algorithm>
#include <climits>
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

// R:F[:T]: rank R's factor F, from Unix time T (seconds) on when given, else from the start.
std::vector<RankSpec> SlowFactors(const char* name) {
  std::vector<RankSpec> specs = ParseRankSpecs(name, 1, 2);
  for (const RankSpec& s : specs) {
    if (!(s.a > 0)) Fatal("%s: factor %g of rank %d must be positive", name, s.a, s.rank);
    if (!std::isnan(s.b) && !(s.b >= 0)) {
      Fatal("%s: onset %g of rank %d must be a Unix time in seconds", name, s.b, s.rank);
    }
  }
  return specs;
}

// T (Unix seconds) on NowNs's clock (CLOCK_MONOTONIC); the earliest time when T is absent.
int64_t OnsetNs(double unix_s) {
  if (std::isnan(unix_s)) return INT64_MIN;
  timespec real;
  clock_gettime(CLOCK_REALTIME, &real);
  const double ahead_s = unix_s - (static_cast<double>(real.tv_sec) + real.tv_nsec * 1e-9);
  return NowNs() + static_cast<int64_t>(ahead_s * 1e9);
}

// The slowings of `specs` among `global_ranks`, added to *out.
void AddSlowings(const std::vector<RankSpec>& specs, const std::vector<int>& global_ranks,
                 std::vector<Slowing>* out) {
  for (const RankSpec& s : specs) {
    if (std::find(global_ranks.begin(), global_ranks.end(), s.rank) != global_ranks.end()) {
      out->push_back({s.a, OnsetNs(s.b)});
    }
  }
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
  AddSlowings(p.slow_links, global_ranks, &link.slowings);
  if (!same_node) AddSlowings(p.slow_nics, global_ranks, &link.slowings);
  return link;
}

int64_t DurationNs(const Link& link, double algorithm_bytes, double bus_factor, int64_t start_ns) {
  // A collective moves at the pace of its slowest link: the largest factor in force wins.
  double factor = 1;
  for (const Slowing& s : link.slowings) {
    if (start_ns >= s.from_ns) factor = std::max(factor, s.factor);
  }
  double ns = link.latency_ns + algorithm_bytes * bus_factor * factor / link.bytes_per_ns;
  return std::max<int64_t>(1, std::llround(ns));
}

}  // namespace nccl
}  // namespace xtsim
