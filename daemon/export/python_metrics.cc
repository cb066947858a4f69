#include "daemon/export/python_metrics.h"

#include <set>
#include <string>

#include "daemon/export/metric_families.h"
#include "daemon/export/metrics.h"
#include "util/label.h"

namespace xtimer {
namespace daemon {
namespace {

enum PythonFamily : size_t {
  kGcSeconds,
  kGcPauses,
  kDataWaitSeconds,
  kDataWaits,
  kFunctionSeconds,
  kFunctionCalls,
  kFunctionDuration,
  kFunctionsDropped,
  kPythonFamilyCount
};

constexpr FamilyInfo kPythonFamilies[] = {
    {"xtimer_python_gc_pause_seconds_total", prometheus::MetricType::Counter,
     "Time the rank's Python spent in garbage collections, seconds, by generation."},
    {"xtimer_python_gc_pauses_total", prometheus::MetricType::Counter,
     "Garbage collections of the rank's Python, by generation."},
    {"xtimer_python_data_wait_seconds_total", prometheus::MetricType::Counter,
     "Time the rank waited for its data loader (traced @data functions: the DataLoader "
     "iterator's __next__), seconds."},
    {"xtimer_python_data_waits_total", prometheus::MetricType::Counter,
     "Batches the rank waited for (calls of traced @data functions)."},
    {"xtimer_python_function_seconds_total", prometheus::MetricType::Counter,
     "Time in a traced Python function (XTIMER_PY_TRACE), seconds, inclusive."},
    {"xtimer_python_function_calls_total", prometheus::MetricType::Counter,
     "Calls of a traced Python function."},
    {"xtimer_python_function_duration_seconds", prometheus::MetricType::Histogram,
     "Duration of one call of a traced Python function, seconds."},
    {"xtimer_python_function_calls_dropped_total", prometheus::MetricType::Counter,
     "Calls of traced functions beyond the 32 names a rank reports."},
};
static_assert(sizeof(kPythonFamilies) / sizeof(kPythonFamilies[0]) == kPythonFamilyCount,
              "one FamilyInfo per PythonFamily");

const char* KindName(format::PythonSpanKind kind) {
  switch (kind) {
    case format::PythonSpanKind::kData:
      return "data";
    case format::PythonSpanKind::kStep:
      return "step";
    default:
      return "call";
  }
}

void AddProcess(const Labels& rank, const PythonStats& s, FamilyBuilder* b) {
  for (int g = 0; g < format::kPythonGcGenerations; ++g) {
    Labels l = rank;
    l.push_back({"generation", std::to_string(g)});
    b->Add(kGcSeconds, l, s.gc_seconds(g));
    b->Add(kGcPauses, l, static_cast<double>(s.gc_pauses(g)));
  }
  b->Add(kDataWaitSeconds, rank, s.data_wait_seconds());
  b->Add(kDataWaits, rank, static_cast<double>(s.data_waits()));
  std::set<std::string> seen;  // names cut to the same label are one series
  for (const PythonStats::Function& f : s.functions()) {
    Labels l = rank;
    const std::string label = SanitizeLabelText(f.name.substr(0, 160));
    if (!seen.insert(label).second) continue;
    l.push_back({"function", label});
    l.push_back({"kind", KindName(f.kind)});
    b->Add(kFunctionSeconds, l, f.seconds);
    b->Add(kFunctionCalls, l, static_cast<double>(f.calls));
    b->AddHistogram(kFunctionDuration, l, PythonStats::kBuckets.data(), f.buckets.data(),
                    PythonStats::kBuckets.size(), f.seconds);
  }
  b->Add(kFunctionsDropped, rank, static_cast<double>(s.functions_dropped()));
}

}  // namespace

std::vector<prometheus::MetricFamily> PythonMetrics::Collect() const {
  const Snapshot snap = aggregator_->TakeSnapshot(clock_(), /*with_series=*/false);
  FamilyBuilder b(kPythonFamilies, kPythonFamilyCount);
  std::set<ProcessId> done;
  for (const ProcessSnapshot& p : snap.processes) {
    if (p.hidden || !done.insert(p.id).second) continue;
    const PythonStats s = aggregator_->PythonTotals(p.id);
    if (!s.empty()) AddProcess(RankLabels(p), s, &b);
  }
  return b.Take();
}

}  // namespace daemon
}  // namespace xtimer
