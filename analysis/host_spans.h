// What a rank's host was doing while its GPU sat idle: the one place that says what a host span
// is taken for (ClassifyHostSpan; docs/analysis.md "Host spans"), and the index the straggler
// pass credits idle time to spans with (HostIndex).
#ifndef XTIMER_ANALYSIS_HOST_SPANS_H_
#define XTIMER_ANALYSIS_HOST_SPANS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "format/python_spans.h"

namespace xtimer {
namespace analysis {

enum class HostKind : uint8_t { kDataLoading = 1, kGc = 2, kTracedFunction = 3, kNvtxRange = 4 };
// "data_loading", "gc", "traced_function", "nvtx_range".
const char* HostKindName(HostKind kind);

// A span's kind and how a verdict names it: in the Python domain (format::kPythonSpanDomain, its
// categories format::PythonSpanKind: docs/format.md "Python spans"), category 3 is data loading
// ("the data loader (NAME)"), 2 a garbage collection ("GC generation N" for "gc genN"), any
// other a traced function ("the traced function NAME"), except that category 0 (files that did
// not keep it) named "gc gen…" is a collection; any span of another domain is an NVTX range
// ("NVTX range 'NAME'", with " in domain 'D'" outside the default domain).
struct HostSpanClass {
  HostKind kind = HostKind::kNvtxRange;
  std::string text;
};
HostSpanClass ClassifyHostSpan(const HostSpan& span);

// NVTX events (format::NvtxEvent; the fields of format::NvtxRecord and timeline::NvtxEntry) to
// host spans: a push/pop range as it is, a start and its end (paired by range id, in either
// order) as one span; marks, unpaired starts and ends, spans of no duration and spans without a
// name (nothing to say of them) are left out.
class NvtxSpanBuilder {
 public:
  void Add(uint8_t event, uint64_t range_id, int64_t start_ns, int64_t end_ns, uint32_t tid,
           uint32_t category, const std::string& name, const std::string& domain);
  // The spans built, in the order their first event came.
  std::vector<HostSpan> Take();

 private:
  std::vector<HostSpan> spans_;
  std::map<uint64_t, size_t> open_;  // range id -> its span, one end known
};

// One rank's host spans, indexed for crediting the GPU's idle time before its arrivals.
// Thread safety: Credit is const and takes its scratch from the caller.
class HostIndex {
 public:
  // Spans considered inside one window: the first this many by start (a job with more nested or
  // concurrent spans per step is credited by these).
  static constexpr size_t kMaxSpansPerWindow = 64;

  HostIndex() = default;
  explicit HostIndex(const std::vector<HostSpan>& spans);

  bool empty() const { return spans_.empty(); }
  size_t labels() const { return labels_.size(); }
  // The distinct spans by (domain, category, name): label i's first span.
  const HostSpan& label(size_t i) const { return labels_[i]; }

  // Credits the idle time of the window [begin, end], `idle_ns` of it, to the spans that covered
  // it: each instant to the innermost span covering it (the latest start, then the earliest
  // end), the credits then scaled down so that they add up to at most `idle_ns` (the window's
  // busy part is not known instant by instant). Adds to (*credit)[label], sized to labels().
  void Credit(int64_t begin, int64_t end, int64_t idle_ns, std::vector<double>* credit,
              std::vector<int64_t>* scratch) const;

 private:
  struct Span {
    int64_t start;
    int64_t end;
    uint32_t label;
  };
  std::vector<Span> spans_;  // by start
  int64_t longest_ = 0;
  std::vector<HostSpan> labels_;
};

// Every rank's HostIndex, by its index among `ranks`; empty when no rank has host spans.
std::vector<HostIndex> HostIndexes(const std::vector<RankInput>& ranks);

}  // namespace analysis
}  // namespace xtimer

#endif  // XTIMER_ANALYSIS_HOST_SPANS_H_
