// Python tracing without code changes (docs/hook.md "Python tracing"): when the hook starts in a
// process whose CPython is initialized, it queues one Py_AddPendingCall (as the exception reports
// do, hook/python_exception.h) that runs the tracer's Python source (python_trace_source.cc) with
// a few C functions made for it (PyCFunction objects, no ctypes). The source resolves the chosen
// functions lazily as their modules are imported, and traces their calls: on 3.12+ through
// sys.monitoring with a tool id of its own and local events on those code objects only; on
// 3.8-3.11 through a C profile function on every thread (threading.setprofile for threads started
// later) that chains the profiler the thread had. Garbage collections are traced per generation
// through gc.callbacks. Spans go to the ring as NVTX ranges (hook/python_spans.h).
#ifndef XTIMER_HOOK_PYTHON_TRACE_H_
#define XTIMER_HOOK_PYTHON_TRACE_H_

#include <string>

namespace xtimer {
namespace hook {

// The specs traced when XTIMER_PY_TRACE is unset (or names "default"): PyTorch's and Megatron's
// data loading, synchronization, backward, optimizer step, checkpoint save and training step.
extern const char kDefaultPythonTraceSpecs[];

// Description: queues the tracer's installation (once per process) with `specs`, the value of
// XTIMER_PY_TRACE (hook/config.h); `is_explicit`: the variable was set (on 3.8-3.11 functions are
// traced only then: a profile function costs every call). Does nothing in a process without an
// initialized CPython.
// Thread safety: any thread, GIL held or not; not from a signal handler.
// Return: false with *error when a CPython function is missing or the pending call was refused.
bool InstallPythonTracing(const std::string& specs, bool is_explicit, std::string* error);

// The tracer's Python source (python_trace_source.cc), run in a fresh namespace that holds the C
// functions (_start, _stop, _register, _gc, _set_profile, _on_main, _warn) and the strings
// _specs, _defaults and _explicit ("1" or "").
const char* PythonTraceSource();

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_PYTHON_TRACE_H_
