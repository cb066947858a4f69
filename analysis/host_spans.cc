#include "analysis/host_spans.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace xtimer {
namespace analysis {

const char* HostKindName(HostKind kind) {
  switch (kind) {
    case HostKind::kDataLoading: return "data_loading";
    case HostKind::kGc: return "gc";
    case HostKind::kTracedFunction: return "traced_function";
    case HostKind::kNvtxRange: return "nvtx_range";
  }
  return "unknown";
}

HostSpanClass ClassifyHostSpan(const HostSpan& span) {
  HostSpanClass c;
  if (span.domain == kPythonSpanDomain) {
    switch (span.category) {
      case kPythonData:
        c.kind = HostKind::kDataLoading;
        c.text = "the data loader (" + span.name + ")";
        return c;
      case kPythonGc: {
        c.kind = HostKind::kGc;
        const std::string prefix = "gc gen";
        const bool generation = span.name.size() == prefix.size() + 1 &&
                                span.name.compare(0, prefix.size(), prefix) == 0;
        c.text = generation ? "GC generation " + span.name.substr(prefix.size())
                            : "garbage collection (" + span.name + ")";
        return c;
      }
      case kPythonCall:
      case kPythonStep:
        c.kind = HostKind::kTracedFunction;
        c.text = "the traced function " + span.name;
        return c;
      default:
        break;
    }
  }
  c.kind = HostKind::kNvtxRange;
  c.text = "NVTX range '" + span.name + "'";
  if (!span.domain.empty()) c.text += " in domain '" + span.domain + "'";
  return c;
}

HostIndex::HostIndex(const std::vector<HostSpan>& spans) {
  std::map<std::tuple<std::string, uint32_t, std::string>, uint32_t> ids;
  spans_.reserve(spans.size());
  for (const HostSpan& s : spans) {
    if (s.end_ns <= s.start_ns) continue;  // marks and broken ranges cover no time
    auto key = std::make_tuple(s.domain, s.category, s.name);
    auto it = ids.find(key);
    if (it == ids.end()) {
      it = ids.emplace(std::move(key), static_cast<uint32_t>(labels_.size())).first;
      labels_.push_back(s);
    }
    spans_.push_back({s.start_ns, s.end_ns, it->second});
    longest_ = std::max(longest_, s.end_ns - s.start_ns);
  }
  std::sort(spans_.begin(), spans_.end(), [](const Span& a, const Span& b) {
    return a.start != b.start ? a.start < b.start : a.end > b.end;
  });
}

void HostIndex::Credit(int64_t begin, int64_t end, int64_t idle_ns, std::vector<double>* credit,
                       std::vector<int64_t>* scratch) const {
  if (spans_.empty() || idle_ns <= 0 || end <= begin) return;
  credit->resize(labels_.size(), 0);
  auto first = std::lower_bound(spans_.begin(), spans_.end(), begin - longest_,
                                [](const Span& s, int64_t t) { return s.start < t; });
  const Span* in[kMaxSpansPerWindow];
  double ns[kMaxSpansPerWindow];
  size_t n = 0;
  std::vector<int64_t>& edges = *scratch;
  edges.assign({begin, end});
  for (auto it = first; it != spans_.end() && it->start < end && n < kMaxSpansPerWindow; ++it) {
    if (it->end <= begin) continue;
    in[n] = &*it;
    ns[n++] = 0;
    edges.push_back(std::max(it->start, begin));
    edges.push_back(std::min(it->end, end));
  }
  if (n == 0) return;
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  double covered = 0;
  for (size_t e = 0; e + 1 < edges.size(); ++e) {
    const int64_t x = edges[e], y = edges[e + 1];
    size_t best = n;
    for (size_t k = 0; k < n; ++k) {
      if (in[k]->start > x || in[k]->end < y) continue;
      if (best == n || in[k]->start > in[best]->start ||
          (in[k]->start == in[best]->start && in[k]->end < in[best]->end)) {
        best = k;
      }
    }
    if (best == n) continue;
    ns[best] += static_cast<double>(y - x);
    covered += static_cast<double>(y - x);
  }
  const double idle = static_cast<double>(idle_ns);
  const double scale = covered > idle ? idle / covered : 1.0;
  for (size_t k = 0; k < n; ++k) (*credit)[in[k]->label] += ns[k] * scale;
}

std::vector<HostIndex> HostIndexes(const std::vector<RankInput>& ranks) {
  std::vector<HostIndex> out;
  for (const RankInput& r : ranks) {
    if (r.host_spans.empty()) continue;
    out.reserve(ranks.size());
    for (const RankInput& each : ranks) out.emplace_back(each.host_spans);
    break;
  }
  return out;
}

}  // namespace analysis
}  // namespace xtimer
