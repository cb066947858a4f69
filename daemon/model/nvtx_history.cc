#include "daemon/model/nvtx_history.h"

#include <algorithm>

namespace xtimer {
namespace daemon {

size_t NvtxHistory::Add(const format::NvtxRecord& r, const std::function<bool(size_t)>& reserve) {
  if (capacity_ == 0) return 0;
  ++total_;
  size_t charged = 0;
  if (!wrapped_ && records_.size() == records_.capacity() && records_.size() < capacity_) {
    const size_t grow = std::min(kChunk, capacity_ - records_.size());
    if (reserve(grow * sizeof(format::NvtxRecord))) {
      records_.reserve(records_.size() + grow);
      charged = grow * sizeof(format::NvtxRecord);
    }
  }
  if (records_.size() < records_.capacity()) {
    records_.push_back(r);
    return charged;
  }
  if (records_.empty()) return charged;  // nothing granted: dropped
  wrapped_ = true;  // from here on a ring of this size (growing would break its order)
  records_[next_] = r;
  next_ = (next_ + 1) % records_.size();
  return charged;
}

namespace {

bool Meets(const format::NvtxRecord& r, int64_t begin_ns, int64_t end_ns) {
  const auto event = static_cast<format::NvtxEvent>(r.event);
  const int64_t lo = event == format::NvtxEvent::kEnd ? r.end_ns : r.start_ns;
  const int64_t hi = event == format::NvtxEvent::kStart ? r.start_ns : r.end_ns;
  return hi >= begin_ns && lo <= end_ns;
}

}  // namespace

std::vector<format::NvtxRecord> NvtxHistory::Between(int64_t begin_ns, int64_t end_ns) const {
  std::vector<format::NvtxRecord> out;
  const size_t n = records_.size();
  for (size_t i = 0; i < n; ++i) {
    const format::NvtxRecord& r = records_[(next_ + i) % n];
    if (Meets(r, begin_ns, end_ns)) out.push_back(r);
  }
  return out;
}

}  // namespace daemon
}  // namespace xtimer
