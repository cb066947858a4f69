// The Python tracer's C side (docs/hook.md "Python tracing"): which code objects are traced, and
// the spans their calls and the garbage collections open and close on each thread. Spans are NVTX
// push/pop ranges of the domain format::kPythonSpanDomain (hook/nvtx_recorder.h), so they reach
// the daemon as NVTX records do, names sent once by id.
//
// Hot path (Find, Enter, Leave, GcStart, GcStop): no allocation, no lock, no system call besides
// the thread's first use (nvtx_recorder's gettid). Register is cold (it interns a name). Enter,
// Leave, GcStart and GcStop read the clock twice (the record's time, and when done) and add the
// time between to the hook's own time and the thread's overhead budget (budget::ChargeSince).
// Thread safety: every function from any thread; the tracer calls them holding the GIL.
#ifndef XTIMER_HOOK_PYTHON_SPANS_H_
#define XTIMER_HOOK_PYTHON_SPANS_H_

#include <cstdint>

#include "format/python_spans.h"

namespace xtimer {
namespace hook {
namespace pyspans {

// Distinct traced code objects per process (beyond them a spec's match is not traced): bounds
// the work per call and, with the names they share, the daemon's per-rank series.
constexpr int kMaxTracedCodes = 512;

struct Traced {
  uint32_t name_id = 0;  // NVTX string id of the name
  format::PythonSpanKind kind = format::PythonSpanKind::kCall;
};

// Traces calls of `code` (an opaque key: the code object's address, which the caller keeps
// alive) under `name`. False when the table is full or the hook has no state. Registering a
// code again keeps its first name.
bool Register(const void* code, const char* name, format::PythonSpanKind kind);
// The traced code's entry, or nullptr (the check every profiled call makes).
const Traced* Find(const void* code);

// A traced call starts / returns (or unwinds, or yields) on this thread. Nested calls of the same
// name (recursion, a wrapper and what it wraps) make one span. A Leave without its Enter (a call
// that began before tracing) is ignored; one whose Enter is deeper than the innermost closes the
// spans above it (their returns were not seen).
void Enter(const Traced& t);
void Leave(const Traced& t);
// A garbage collection of `generation` starts / stops on this thread.
void GcStart(int generation);
void GcStop();

// Forgets the table and this thread's spans (tests).
void ResetForTest();

}  // namespace pyspans
}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_PYTHON_SPANS_H_
