// Python host spans (docs/format.md "Python spans"): the hook's Python tracer (hook/python_trace.h)
// writes each traced call and each garbage collection as an NVTX range record (format::NvtxRecord,
// event kRange) in a domain of its own, so the daemon, the timeline and the trace read them as
// they read the application's NVTX ranges. The domain's name and the meaning of the record's
// category in it are this contract.
#ifndef XTIMER_FORMAT_PYTHON_SPANS_H_
#define XTIMER_FORMAT_PYTHON_SPANS_H_

#include <cstdint>

namespace xtimer {
namespace format {

// The NVTX domain (its kNvtxString text) of every Python span.
constexpr char kPythonSpanDomain[] = "xtimer.python";

// NvtxRecord::category of a record in kPythonSpanDomain. Values are stable (they are in files).
enum class PythonSpanKind : uint8_t {
  kCall = 1,  // a traced function (its name: "module:qualname" of the matching spec)
  kGc = 2,    // a garbage collection; payload (kNvtxHasPayload, INT32) = its generation, 0..2
  kData = 3,  // a traced function whose time is data-loader wait (spec suffix "@data")
  kStep = 4,  // a traced function that is a training step (spec suffix "@step")
};
constexpr uint8_t kPythonSpanKindMax = 4;
constexpr int kPythonGcGenerations = 3;
// NVTX_PAYLOAD_TYPE_INT32 of nvToolsExt.h: the payload type of a kGc record.
constexpr uint8_t kPythonGcPayloadType = 5;

}  // namespace format
}  // namespace xtimer

#endif  // XTIMER_FORMAT_PYTHON_SPANS_H_
