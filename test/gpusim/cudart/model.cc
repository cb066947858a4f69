#include "test/gpusim/cudart/model.h"

#include <cmath>
#include <vector>

#include "test/gpusim/common/sim_env.h"
#include "test/gpusim/cudart/memory.h"

namespace xtsim {
namespace {

struct Rates {
  double pcie_bytes_per_ns;
  double hbm_bytes_per_ns;
  int64_t copy_latency_ns;
  std::vector<RankSpec> slow;
};

const Rates& GetRates() {
  static const Rates* rates = [] {
    auto* r = new Rates();
    double pcie = EnvDouble("XTIMER_SIM_PCIE_GBPS", 25.0);
    double hbm = EnvDouble("XTIMER_SIM_HBM_GBPS", 2000.0);
    double lat = EnvDouble("XTIMER_SIM_COPY_LAT_US", 2.0);
    if (pcie <= 0) Fatal("XTIMER_SIM_PCIE_GBPS=%g must be positive", pcie);
    if (hbm <= 0) Fatal("XTIMER_SIM_HBM_GBPS=%g must be positive", hbm);
    if (lat < 0) Fatal("XTIMER_SIM_COPY_LAT_US=%g must not be negative", lat);
    r->pcie_bytes_per_ns = pcie;  // 1 GB/s = 1 byte/ns
    r->hbm_bytes_per_ns = hbm;
    r->copy_latency_ns = static_cast<int64_t>(lat * 1000);
    r->slow = ParseRankSpecs("XTIMER_SIM_SLOW_RANKS", 1, 1);
    for (const RankSpec& s : r->slow) {
      if (!(s.a > 0)) Fatal("XTIMER_SIM_SLOW_RANKS: factor %g for rank %d must be positive", s.a,
                            s.rank);
    }
    return r;
  }();
  return *rates;
}

bool OnDevice(const void* p) {
  Allocation a;
  return FindAllocation(p, 1, &a, nullptr) &&
         (a.kind == MemKind::kDevice || a.kind == MemKind::kManaged);
}

}  // namespace

int64_t CopyDurationNs(const void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  const Rates& r = GetRates();
  bool dst_dev, src_dev;
  switch (kind) {
    case cudaMemcpyHostToHost: dst_dev = src_dev = false; break;
    case cudaMemcpyHostToDevice: dst_dev = true; src_dev = false; break;
    case cudaMemcpyDeviceToHost: dst_dev = false; src_dev = true; break;
    case cudaMemcpyDeviceToDevice: dst_dev = src_dev = true; break;
    default: dst_dev = OnDevice(dst); src_dev = OnDevice(src); break;
  }
  double rate = (dst_dev && src_dev) ? r.hbm_bytes_per_ns : r.pcie_bytes_per_ns;
  return r.copy_latency_ns + static_cast<int64_t>(std::llround(static_cast<double>(bytes) / rate));
}

int64_t MemsetDurationNs(size_t bytes) {
  const Rates& r = GetRates();
  return r.copy_latency_ns +
         static_cast<int64_t>(std::llround(static_cast<double>(bytes) / r.hbm_bytes_per_ns));
}

int64_t ComputeDurationNs(int64_t ns, int device) {
  const Rates& r = GetRates();
  if (r.slow.empty()) return ns;
  int rank = SimRank() >= 0 ? SimRank() : device;
  const RankSpec* s = FindRankSpec(r.slow, rank);
  return s == nullptr ? ns : static_cast<int64_t>(std::llround(static_cast<double>(ns) * s->a));
}

}  // namespace xtsim
