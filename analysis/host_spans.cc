#include "analysis/host_spans.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "format/record.h"

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
  using format::PythonSpanKind;
  HostSpanClass c;
  if (span.domain != format::kPythonSpanDomain) {
    c.kind = HostKind::kNvtxRange;
    c.text = "NVTX range '" + span.name + "'";
    if (!span.domain.empty()) c.text += " in domain '" + span.domain + "'";
    return c;
  }
  const std::string gc = "gc gen";
  const bool gc_name = span.name.compare(0, gc.size(), gc) == 0;
  // Category 0 (a file of a daemon that did not keep categories): by the name alone.
  if (span.category == static_cast<uint32_t>(PythonSpanKind::kGc) || (span.category == 0 && gc_name)) {
    c.kind = HostKind::kGc;
    c.text = gc_name && span.name.size() == gc.size() + 1
                 ? "GC generation " + span.name.substr(gc.size())
                 : "garbage collection (" + span.name + ")";
  } else if (span.category == static_cast<uint32_t>(PythonSpanKind::kData)) {
    c.kind = HostKind::kDataLoading;
    c.text = "the data loader (" + span.name + ")";
  } else {
    c.kind = HostKind::kTracedFunction;
    c.text = "the traced function " + span.name;
  }
  return c;
}

void NvtxSpanBuilder::Add(uint8_t event, uint64_t range_id, int64_t start_ns, int64_t end_ns,
                          uint32_t tid, uint32_t category, const std::string& name,
                          const std::string& domain) {
  const bool start = event == static_cast<uint8_t>(format::NvtxEvent::kStart);
  const bool end = event == static_cast<uint8_t>(format::NvtxEvent::kEnd);
  if (event == static_cast<uint8_t>(format::NvtxEvent::kRange)) {
    spans_.push_back({name, domain, category, tid, start_ns, end_ns});
    return;
  }
  if (!start && !end) return;
  auto it = open_.find(range_id);
  if (it == open_.end()) {
    open_[range_id] = spans_.size();
    spans_.push_back({name, domain, category, tid, start ? start_ns : 0, end ? end_ns : 0});
    return;
  }
  HostSpan& s = spans_[it->second];
  if (start) {  // the end came first: the start carries the message and the thread
    s.name = name;
    s.domain = domain;
    s.category = category;
    s.tid = tid;
    s.start_ns = start_ns;
  } else {
    s.end_ns = end_ns;
  }
  open_.erase(it);
}

std::vector<HostSpan> NvtxSpanBuilder::Take() {
  std::vector<HostSpan> out;
  out.reserve(spans_.size());
  for (HostSpan& s : spans_) {
    if (s.start_ns > 0 && s.end_ns > s.start_ns && !s.name.empty()) out.push_back(std::move(s));
  }
  spans_.clear();
  open_.clear();
  return out;
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
