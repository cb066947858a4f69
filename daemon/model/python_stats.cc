#include "daemon/model/python_stats.h"

#include <algorithm>
#include <cstring>

#include "daemon/model/nvtx_history.h"

namespace xtimer {
namespace daemon {

constexpr std::array<double, 8> PythonStats::kBuckets;

bool PythonStats::IsPython(uint32_t domain_id, const NvtxHistory& strings) {
  if (domain_id == 0) return false;
  if (domain_id_ != 0) return domain_id == domain_id_;
  const std::string* name = strings.String(domain_id);
  if (name == nullptr || *name != format::kPythonSpanDomain) return false;
  domain_id_ = domain_id;
  return true;
}

bool PythonStats::Add(const format::NvtxRecord& r, const NvtxHistory& strings) {
  if (r.event != static_cast<uint8_t>(format::NvtxEvent::kRange) ||
      !IsPython(r.domain_id, strings)) {
    return false;
  }
  ++spans_;
  const double seconds = static_cast<double>(std::max<int64_t>(r.end_ns - r.start_ns, 0)) * 1e-9;
  switch (static_cast<format::PythonSpanKind>(r.category)) {
    case format::PythonSpanKind::kGc:
      if (r.payload < static_cast<uint64_t>(format::kPythonGcGenerations)) {
        ++gc_pauses_[r.payload];
        gc_seconds_[r.payload] += seconds;
      }
      return true;
    case format::PythonSpanKind::kData:
      ++data_waits_;
      data_wait_seconds_ += seconds;
      AddCall(r, seconds, strings);
      return true;
    case format::PythonSpanKind::kCall:
    case format::PythonSpanKind::kStep:
      AddCall(r, seconds, strings);
      return true;
  }
  return true;  // a kind of a newer hook: a Python span, not counted
}

void PythonStats::AddCall(const format::NvtxRecord& r, double seconds,
                          const NvtxHistory& strings) {
  auto it = std::find(function_ids_.begin(), function_ids_.end(), r.name_id);
  size_t i = static_cast<size_t>(it - function_ids_.begin());
  if (it == function_ids_.end()) {
    if (functions_.size() >= kMaxFunctions) {
      ++functions_dropped_;
      return;
    }
    Function f;
    const std::string* name = strings.String(r.name_id);
    f.name = name != nullptr ? *name : "#" + std::to_string(r.name_id);
    f.kind = static_cast<format::PythonSpanKind>(r.category);
    function_ids_.push_back(r.name_id);
    functions_.push_back(std::move(f));
  }
  Function& f = functions_[i];
  ++f.calls;
  f.seconds += seconds;
  size_t b = 0;
  while (b < kBuckets.size() && seconds > kBuckets[b]) ++b;
  ++f.buckets[b];
}

}  // namespace daemon
}  // namespace xtimer
