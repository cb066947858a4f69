#include "daemon/anomaly.h"

#include <algorithm>

namespace xtimer {
namespace daemon {

bool AnomalyDetector::Key::operator==(const Key& o) const {
  return op == o.op && dtype == o.dtype && comm_size == o.comm_size && m == o.m && n == o.n &&
         k == o.k && batch == o.batch && bytes == o.bytes;
}

size_t AnomalyDetector::KeyHash::operator()(const Key& k) const {
  uint64_t h = (uint64_t{k.op} << 40) ^ (uint64_t{k.dtype} << 32) ^ static_cast<uint32_t>(k.comm_size);
  for (uint64_t v : {static_cast<uint64_t>(k.m), static_cast<uint64_t>(k.n),
                     static_cast<uint64_t>(k.k), static_cast<uint64_t>(k.batch), k.bytes}) {
    h = (h ^ v) * 0x100000001b3ULL + (h >> 29);
  }
  return static_cast<size_t>(h);
}

AnomalyDetector::AnomalyDetector(const AnomalyOptions& options) : options_(options) {}

AnomalyVerdict AnomalyDetector::Observe(const format::OpRecord& r) {
  const Key key{r.op, r.dtype, r.comm_size, r.m, r.n, r.k, r.batch, r.bytes};
  auto it = signatures_.find(key);
  if (it == signatures_.end()) {
    if (signatures_.size() >= options_.max_signatures) {
      ++untracked_;
      return {};
    }
    it = signatures_.emplace(key, Durations{}).first;
    it->second.ring.reserve(options_.window);
  }
  Durations& d = it->second;
  AnomalyVerdict v;
  if (d.ring.size() >= options_.min_samples) {
    scratch_.assign(d.ring.begin(), d.ring.end());
    auto mid = scratch_.begin() + static_cast<std::ptrdiff_t>(scratch_.size() / 2);
    std::nth_element(scratch_.begin(), mid, scratch_.end());
    v.median_ns = *mid;
    v.samples = scratch_.size();
    v.anomalous = v.median_ns > 0 && static_cast<double>(r.duration_ns) >
                                         options_.factor * static_cast<double>(v.median_ns);
  }
  if (d.ring.size() < options_.window) {
    d.ring.push_back(r.duration_ns);
  } else {
    d.ring[d.next] = r.duration_ns;
    d.next = (d.next + 1) % options_.window;
  }
  return v;
}

}  // namespace daemon
}  // namespace xtimer
