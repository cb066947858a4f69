#include "daemon/export/kernel_metrics.h"

#include <algorithm>
#include <set>

#include "daemon/export/metric_families.h"
#include "daemon/export/metrics.h"
#include "util/kernel_name.h"
#include "util/label.h"

namespace xtimer {
namespace daemon {
namespace {

enum KernelFamily : size_t { kKernelSeconds, kKernelLaunches, kKernelFamilyCount };

constexpr FamilyInfo kKernelFamilies[] = {
    {"xtimer_kernel_seconds_total", prometheus::MetricType::Counter,
     "GPU time of timed launches of one kernel, seconds: each rank's --kernel-metrics-top "
     "kernels by this total (docs/metrics.md)."},
    {"xtimer_kernel_launches_total", prometheus::MetricType::Counter,
     "Timed launches of one kernel: each rank's --kernel-metrics-top kernels by GPU time."},
};
static_assert(sizeof(kKernelFamilies) / sizeof(kKernelFamilies[0]) == kKernelFamilyCount,
              "one FamilyInfo per KernelFamily");

}  // namespace

std::string KernelLabel(const std::string& name) {
  std::string out = SanitizeLabelText(name.substr(0, kMaxKernelLabel + 1));
  if (out.size() > kMaxKernelLabel) {
    out.resize(kMaxKernelLabel - 3);
    out += "...";
  }
  return out;
}

KernelMetrics::KernelMetrics(Aggregator* aggregator, size_t top, std::function<int64_t()> clock)
    : aggregator_(aggregator), top_(std::max<size_t>(top, 1)), clock_(std::move(clock)) {
  tap_ = aggregator_->AddOpTap([this](ProcessId id, const TapOp* ops, size_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < n; ++i) AddLocked(id, ops[i].rank_device, *ops[i].op);
  });
}

KernelMetrics::~KernelMetrics() { aggregator_->RemoveOpTap(tap_); }

void KernelMetrics::AddLocked(ProcessId id, int rank_device, const format::OpRecord& r) {
  if (r.kind != static_cast<uint8_t>(format::OpKind::kKernel) || r.name_id == 0) return;
  auto& kernels = ranks_[RankKey{id, rank_device}];
  auto it = kernels.find(r.name_id);
  if (it == kernels.end()) {
    if (kernels.size() >= kMaxKernelsPerRank) return;
    it = kernels.emplace(r.name_id, Totals()).first;
  }
  ++it->second.launches;
  it->second.ns += static_cast<uint64_t>(std::max<int64_t>(r.duration_ns, 0));
}

std::vector<std::pair<uint32_t, KernelMetrics::Totals>> KernelMetrics::Top(
    const RankKey& rank) const {
  std::vector<std::pair<uint32_t, Totals>> v;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = ranks_.find(rank);
    if (it == ranks_.end()) return v;
    v.assign(it->second.begin(), it->second.end());
  }
  const size_t n = std::min(top_, v.size());
  std::partial_sort(v.begin(), v.begin() + n, v.end(), [](const auto& a, const auto& b) {
    return a.second.ns != b.second.ns ? a.second.ns > b.second.ns : a.first < b.first;
  });
  v.resize(n);
  return v;
}

std::vector<prometheus::MetricFamily> KernelMetrics::Collect() const {
  std::set<RankKey> known;  // ranks that were counted before the snapshot
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& kv : ranks_) known.insert(kv.first);
  }
  const Snapshot snap = aggregator_->TakeSnapshot(clock_(), /*with_series=*/false);
  FamilyBuilder b(kKernelFamilies, kKernelFamilyCount);
  std::set<RankKey> live;
  for (const ProcessSnapshot& p : snap.processes) {
    const RankKey key = p.key();
    live.insert(key);
    if (p.hidden) continue;
    // Names cut to the same label are one series (Prometheus forbids duplicates). `kernel` is
    // the short name people read, `signature` the full one.
    std::map<std::pair<std::string, std::string>, Totals> by_label;
    for (const auto& k : Top(key)) {
      std::string name = aggregator_->KernelName(p.id, k.first);
      if (name.empty()) name = "kernel #" + std::to_string(k.first);
      Totals& t = by_label[{KernelLabel(util::ShortKernelName(name)), KernelLabel(name)}];
      t.launches += k.second.launches;
      t.ns += k.second.ns;
    }
    for (const auto& kv : by_label) {
      Labels l = RankLabels(p);
      l.push_back({"kernel", kv.first.first});
      l.push_back({"signature", kv.first.second});
      b.Add(kKernelSeconds, l, static_cast<double>(kv.second.ns) * 1e-9);
      b.Add(kKernelLaunches, l, static_cast<double>(kv.second.launches));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const RankKey& k : known) {
    if (live.count(k) == 0) ranks_.erase(k);  // gone from the Aggregator (a new rank is kept)
  }
  return b.Take();
}

}  // namespace daemon
}  // namespace xtimer
