#include "cli/op_diff.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "format/record.h"
#include "opmath/op_math.h"

namespace xtimer {
namespace cli {
namespace {

using format::OpKind;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The q-quantile (nearest rank) of `v`, in seconds.
double Quantile(std::vector<int64_t> v, double q) {
  if (v.empty()) return 0;
  size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  i = std::min(v.size() - 1, i > 0 ? i - 1 : 0);
  std::nth_element(v.begin(), v.begin() + i, v.end());
  return static_cast<double>(v[i]) * 1e-9;
}

double Median(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  double m = static_cast<double>(v[mid]);
  if (v.size() % 2 == 0) m = (m + *std::max_element(v.begin(), v.begin() + mid)) / 2;
  return m * 1e-9;
}

double Mean(const RankWork& w) { return w.count ? w.total_ns / w.count * 1e-9 : 0; }

// One signature of one rank; `base` gets what B's calls took at A's speed (or A's time, gone,
// x `scale`, B's window over A's).
RankOpDiff RankOp(const OpSignature& s, const RankWork& a, const RankWork& b, double scale,
                  double* base) {
  RankOpDiff d;
  d.signature = s;
  d.a = a;
  d.b = b;
  d.change = a.count && b.count ? Mean(b) / Mean(a) - 1 : kNaN;
  if (a.count && b.count) {
    d.impact_s = (Mean(b) - Mean(a)) * b.count;
    *base += Mean(a) * b.count;
  } else if (b.count) {
    d.impact_s = b.total_ns * 1e-9;
  } else {
    d.impact_s = -a.total_ns * 1e-9 * scale;
    *base += a.total_ns * 1e-9 * scale;
  }
  return d;
}

uint64_t CommCalls(const OpTable& t, int32_t rank) {
  auto it = t.comm_calls.find(rank);
  return it == t.comm_calls.end() ? 0 : it->second;
}

// One rank's ops with their impact; `base` is what its calls in B took at A's speed.
RankDiff DiffRank(int32_t rank, const OpTable& ta, const OpTable& tb, double* base) {
  const std::map<OpSignature, RankWork>& a = ta.own.at(rank);
  const std::map<OpSignature, RankWork>& b = tb.own.at(rank);
  const uint64_t calls_a = CommCalls(ta, rank), calls_b = CommCalls(tb, rank);
  const double scale = calls_a && calls_b ? static_cast<double>(calls_b) / calls_a : 1.0;
  RankDiff r;
  r.rank = rank;
  *base = 0;
  for (const auto& kv : a) {
    auto it = b.find(kv.first);
    r.ops.push_back(
        RankOp(kv.first, kv.second, it == b.end() ? RankWork{} : it->second, scale, base));
  }
  for (const auto& kv : b) {
    if (!a.count(kv.first)) r.ops.push_back(RankOp(kv.first, RankWork{}, kv.second, scale, base));
  }
  for (const RankOpDiff& d : r.ops) r.growth_s += d.impact_s;
  return r;
}

// Across ranks, per signature: the changes of the ranks with it in both, and how many ranks
// have it in one dump only.
struct AcrossRanks {
  std::vector<double> changes;
  size_t one_side = 0;
  double median = kNaN, threshold = kNaN;  // the change above which a rank stands out
};

double MedianOf(std::vector<double> v) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  const size_t mid = v.size() / 2;
  return v.size() % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

std::map<OpSignature, AcrossRanks> Across(const std::vector<RankDiff>& ranks) {
  std::map<OpSignature, AcrossRanks> across;
  for (const RankDiff& r : ranks) {
    for (const RankOpDiff& d : r.ops) {
      AcrossRanks& x = across[d.signature];
      if (std::isfinite(d.change)) {
        x.changes.push_back(d.change);
      } else {
        ++x.one_side;
      }
    }
  }
  for (auto& kv : across) {
    AcrossRanks& x = kv.second;
    x.median = MedianOf(x.changes);
    std::vector<double> dev;
    for (double c : x.changes) dev.push_back(std::abs(c - x.median));
    const double sigma = dev.empty() ? 0 : 1.4826 * MedianOf(dev);
    x.threshold = x.median + std::max(kRankGrowthFloor, kOutlierSigmas * sigma);
  }
  return across;
}

void SetExcess(const std::map<OpSignature, AcrossRanks>& across, size_t ranks, double base,
               RankDiff* r) {
  for (RankOpDiff& d : r->ops) {
    const AcrossRanks& x = across.at(d.signature);
    d.median_change = x.median;
    if (std::isfinite(d.change)) {
      if (d.change >= x.threshold && std::min(d.a.count, d.b.count) >= kMinCallsPerRank) {
        d.excess_s = (d.change - x.median) * Mean(d.a) * d.b.count;
      }
    } else if (2 * x.one_side <= ranks) {
      d.excess_s = d.impact_s;  // new or gone on this rank, not on most
    }
    r->excess_s += d.excess_s;
  }
  r->change = base > 0 ? r->excess_s / base : 0;
  r->grew = r->change >= kRankGrowthFloor;
  std::stable_sort(r->ops.begin(), r->ops.end(), [](const RankOpDiff& x, const RankOpDiff& y) {
    return x.excess_s != y.excess_s ? x.excess_s > y.excess_s : x.impact_s > y.impact_s;
  });
}

double Throughput(const OpSignature& s, double seconds) {
  if (!(seconds > 0)) return 0;
  switch (static_cast<OpKind>(s.kind)) {
    case OpKind::kMatmul: return opmath::MatmulFlop(s.m, s.n, s.k, s.batch) / seconds / 1e12;
    case OpKind::kCollective:
    case OpKind::kP2P: return opmath::BusBytes(s.op, s.bytes, s.comm_size) / seconds / 1e9;
    case OpKind::kMemcpy:
    case OpKind::kMemset: return static_cast<double>(s.bytes) / seconds / 1e9;
    default: return 0;
  }
}

}  // namespace

const char* UnitOf(const OpSignature& s) {
  switch (static_cast<OpKind>(s.kind)) {
    case OpKind::kMatmul: return "TFLOPS";
    case OpKind::kCollective:
    case OpKind::kP2P: return "GB/s bus";
    case OpKind::kMemcpy:
    case OpKind::kMemset: return "GB/s";
    default: return "";
  }
}

OpStats StatsOf(const OpSignature& s, const OpTable& t) {
  OpStats st;
  auto it = t.durations.find(s);
  if (it == t.durations.end() || it->second.empty()) return st;
  st.count = it->second.size();
  st.median_s = Median(it->second);
  st.p90_s = Quantile(it->second, 0.9);
  double sum = 0;
  for (int64_t d : it->second) sum += static_cast<double>(d);
  st.mean_s = sum / static_cast<double>(st.count) * 1e-9;
  st.throughput = Throughput(s, st.mean_s);
  return st;
}

std::vector<DiffRow> DiffTables(const OpTable& a, const OpTable& b) {
  std::vector<DiffRow> rows;
  auto add = [&](const OpSignature& s) {
    DiffRow r;
    r.signature = s;
    r.unit = UnitOf(s);
    r.a = StatsOf(s, a);
    r.b = StatsOf(s, b);
    r.change = r.a.count && r.b.count ? r.b.mean_s / r.a.mean_s - 1 : kNaN;
    if (r.b.count > 0) {
      r.impact_s = (r.b.mean_s - r.a.mean_s) * r.b.count / std::max(b.ranks, 1);
    } else {
      r.impact_s = -r.a.mean_s * r.a.count / std::max(a.ranks, 1);
    }
    rows.push_back(std::move(r));
  };
  for (const auto& kv : a.durations) add(kv.first);
  for (const auto& kv : b.durations) {
    if (!a.durations.count(kv.first)) add(kv.first);
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const DiffRow& x, const DiffRow& y) { return x.impact_s > y.impact_s; });
  return rows;
}

std::vector<RankDiff> DiffRanks(const OpTable& a, const OpTable& b) {
  std::vector<RankDiff> ranks;
  std::vector<double> bases;
  for (const auto& kv : a.own) {
    if (!b.own.count(kv.first)) continue;
    bases.push_back(0);
    ranks.push_back(DiffRank(kv.first, a, b, &bases.back()));
  }
  const std::map<OpSignature, AcrossRanks> across = Across(ranks);
  for (size_t i = 0; i < ranks.size(); ++i) SetExcess(across, ranks.size(), bases[i], &ranks[i]);
  std::stable_sort(ranks.begin(), ranks.end(),
                   [](const RankDiff& x, const RankDiff& y) { return x.change > y.change; });
  return ranks;
}

}  // namespace cli
}  // namespace xtimer
