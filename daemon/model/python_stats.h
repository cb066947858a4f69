// A process's Python host time (docs/metrics.md "Python"), from the spans the hook's Python
// tracer sends as NVTX ranges of the domain format::kPythonSpanDomain (format/python_spans.h):
// garbage-collection pauses by generation, data-loader waits, and calls of each traced function.
// Bounded: at most kMaxFunctions function names per process (later ones are counted as dropped),
// so a rank's series stay few. Not thread safe: the aggregator's lock guards it.
#ifndef XTIMER_DAEMON_MODEL_PYTHON_STATS_H_
#define XTIMER_DAEMON_MODEL_PYTHON_STATS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "format/python_spans.h"
#include "format/record.h"

namespace xtimer {
namespace daemon {

class NvtxHistory;

class PythonStats {
 public:
  static constexpr size_t kMaxFunctions = 32;
  // Upper bounds (seconds) of the function-duration histogram's buckets, +Inf besides.
  static constexpr std::array<double, 8> kBuckets = {1e-4, 1e-3, 5e-3, 0.01, 0.05, 0.1, 1, 10};

  struct Function {
    std::string name;  // "module:qualname" (the NVTX string), "#ID" when the string is unknown
    format::PythonSpanKind kind = format::PythonSpanKind::kCall;
    uint64_t calls = 0;
    double seconds = 0;
    // Calls within each bound, then beyond the last (not cumulative).
    std::array<uint64_t, kBuckets.size() + 1> buckets{};
  };

  // Counts `r` when it is a complete range of the Python domain (`strings` gives the domain's
  // name); other records are ignored.
  // Returns whether `r` is a Python span (a range of format::kPythonSpanDomain).
  bool Add(const format::NvtxRecord& r, const NvtxHistory& strings);

  bool empty() const { return spans_ == 0; }
  uint64_t gc_pauses(int generation) const { return gc_pauses_[generation]; }
  double gc_seconds(int generation) const { return gc_seconds_[generation]; }
  uint64_t data_waits() const { return data_waits_; }
  double data_wait_seconds() const { return data_wait_seconds_; }
  const std::vector<Function>& functions() const { return functions_; }
  uint64_t functions_dropped() const { return functions_dropped_; }  // calls of names beyond

 private:
  bool IsPython(uint32_t domain_id, const NvtxHistory& strings);
  void AddCall(const format::NvtxRecord& r, double seconds, const NvtxHistory& strings);

  uint32_t domain_id_ = 0;  // the Python domain's NVTX string id, once seen
  uint64_t spans_ = 0;
  uint64_t gc_pauses_[format::kPythonGcGenerations] = {};
  double gc_seconds_[format::kPythonGcGenerations] = {};
  uint64_t data_waits_ = 0;
  double data_wait_seconds_ = 0;
  std::vector<uint32_t> function_ids_;  // name ids, parallel to functions_
  std::vector<Function> functions_;
  uint64_t functions_dropped_ = 0;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_MODEL_PYTHON_STATS_H_
